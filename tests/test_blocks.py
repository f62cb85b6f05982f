"""Blocks and compaction: `CompactIfFull`, `compact_if_full`, `agent.compact`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from alpineagents.agent import Agent
from alpineagents.blocks import CompactIfFull, acompact_if_full, compact_if_full
from alpineagents.errors import OutputError
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message, Usage


@tool
def helper() -> str:
    """Helps."""
    return "ok"


def long_state() -> State:
    return State(
        messages=[Message.user("The task " * 60), Message.assistant("Working " * 60), Message.user("More " * 60)]
    )


def test_compact_if_full_defaults_and_no_request_below_the_threshold() -> None:
    assert compact_if_full.at == 0.6 and compact_if_full.instructions is None
    assert repr(compact_if_full) == "CompactIfFull(at=0.6, instructions=None)"
    assert compact_if_full.acall == acompact_if_full
    fake = FakeModel([], context_window=100_000)
    agent = Agent(fake, reporter=None)
    state = long_state()
    assert agent.context_used(state) <= 0.6
    compact_if_full(agent, state)
    asyncio.run(acompact_if_full(agent, state))
    assert fake.requests == []


def test_compact_if_full_compacts_when_full_with_the_instructions() -> None:
    state = long_state()
    size = Agent(FakeModel([]), reporter=None).context_tokens(state)
    fake = FakeModel(["The summary"], context_window=int(size / 0.7))
    agent = Agent(fake, reporter=None)
    assert agent.context_used(state) > 0.6
    CompactIfFull(instructions="Keep only the key points")(agent, state)
    assert len(fake.requests) == 1
    assert "Keep only the key points" in fake.requests[0].messages[-1].text
    assert len(state.messages) == 2
    assert state.messages[0].text == "The task " * 60
    assert state.messages[1].text.startswith("[notice] Summary so far:")
    assert "The summary" in state.messages[1].text


def test_acall_compacts() -> None:
    state = long_state()
    agent = Agent(FakeModel(["Async summary"]), reporter=None)
    asyncio.run(CompactIfFull(at=-1).acall(agent, state))
    assert "Async summary" in state.messages[-1].text
    assert repr(CompactIfFull(at=0.5, instructions="x")) == "CompactIfFull(at=0.5, instructions='x')"


def test_compact_failures_and_messages_kept() -> None:
    state = long_state()
    before = state.messages
    with pytest.raises(OutputError, match=r"compact\(\) got an empty summary, so the messages were not changed"):
        Agent(FakeModel([""]), reporter=None).compact(state)
    assert state.messages == before
    pending = State(messages=[Message.user("T")])
    agent = Agent(FakeModel([tool_call("helper")]), tools=[helper], reporter=None)
    agent.think(pending)
    with pytest.raises(ValueError, match=r"cannot call compact\(\) while calls are pending"):
        agent.compact(pending)

    def item(request: Any) -> str:
        state.add_message(Message.user("added meanwhile"))
        return "Summary"

    Agent(FakeModel([item]), reporter=None).compact(state)
    change = state.history[-1].content
    assert change.kind == "compact" and change.kept == 1
    assert state.messages[-1].text == "added meanwhile"
    with pytest.raises(TypeError, match=r"The instructions of compact\(\) take a string \(got: 3\)"):
        agent.compact(state, instructions=3)  # type: ignore[arg-type]


def test_the_compact_entry_counts_usage_but_not_a_turn() -> None:
    class Changes(Reporter):
        def __init__(self) -> None:
            self.changes: list[Any] = []

        def on_context_change(self, state: State, change: Any) -> None:
            self.changes.append(change)

    reporter = Changes()
    state = long_state()
    agent = Agent(FakeModel(["Summary"]), reporter=reporter)
    usage_before = state.usage
    agent.compact(state)
    entry = state.history[-1]
    assert entry.kind == "context_change"
    change = entry.content
    assert change.kind == "compact" and change.kept == 0 and change.usage.requests == 1
    assert state.usage == usage_before + change.usage
    assert "model_request" not in [e.kind for e in state.history]
    assert state.turn == 0
    assert reporter.changes == [change]
    assert isinstance(change.usage, Usage)
