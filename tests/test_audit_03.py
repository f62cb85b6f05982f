"""Audit of 03 checks: assertions the area tests leave out (see each docstring)."""

from __future__ import annotations

from alpineagents.agent import Agent
from alpineagents.loop import Loop, loop
from alpineagents.state import State
from alpineagents.testing import FakeModel
from alpineagents.types import Message, StoppedByLimit, StoppedByUntil


def never(state: State) -> bool:
    return False


def test_check_27_think_only_body() -> None:
    """Adds: the check's exact setup, a think-only body (no message added between turns)."""

    @loop(until=never, limit=2)
    def body(agent: Agent, state: State) -> None:
        agent.think(state)

    state = State(messages=[Message.user("Task")])
    fake = FakeModel(["first", "second"])
    assert Agent(fake, loop=body, reporter=None).run(state) == "second"
    assert state.stopped == StoppedByLimit(2)
    assert state.turn == 2
    assert [e.content for e in state.history if e.kind == "stop"] == [StoppedByLimit(2)]
    assert len(fake.requests) == 2


def test_check_26_condition_true_after_limit_turns() -> None:
    """Adds: exactly `limit` turns ran and the only stop entry is StoppedByUntil (no StoppedByLimit anywhere)."""

    def after_two(state: State) -> bool:
        return state.turn >= 2

    def body(agent: Agent, state: State) -> None:
        agent.think(state)

    state = State(messages=[Message.user("Task")])
    Agent(FakeModel(["a", "b"]), loop=Loop(body, until=after_two, limit=2), reporter=None).run(state)
    assert state.turn == 2
    assert [e.content for e in state.history if e.kind == "stop"] == [StoppedByUntil("after_two")]
