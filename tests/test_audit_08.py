"""Audit of 08 checks (Errors, Subagents, Test doubles): assertions the area tests leave out."""

from __future__ import annotations

from alpineagents.agent import Agent
from alpineagents.loop import loop
from alpineagents.state import State
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message, StoppedByLimit


def never(state: State) -> bool:
    return False


def test_check_21_add_child_white_box() -> None:
    """Adds: the white-box half of check 21 (_add_child twice with the same child, _children_of, child(), _depth)."""
    state = State(messages=[Message.user("Task")])
    a, b, c = State(id="a"), State(id="b"), State(id="c")
    state._add_child("c1", a)
    state._add_child("c1", b)
    state._add_child("c1", a)
    state._add_child("c2", c)
    assert state._children_of("c1") == (a.id, b.id)
    assert state._children_of("c2") == (c.id,)
    assert state._children_of("nope") == ()
    assert state.child(a.id) is a
    assert a._depth == state._depth + 1


def test_check_12_one_turn_limit_without_answer() -> None:
    """Adds: for the limit=1 tool-call-only child, outcome `done` and the child stopped by StoppedByLimit(1)."""

    @tool
    def noop() -> str:
        """Nothing."""
        return "x"

    @loop(until=never, limit=1)
    def one(agent: Agent, state: State) -> None:
        agent.think(state)
        agent.use_tools(state)

    helper = Agent(
        FakeModel([tool_call("noop")]),
        name="researcher",
        description="Looks things up",
        tools=[noop],
        loop=one,
        reporter=None,
        human=None,
    )
    lead = Agent(
        FakeModel([tool_call("researcher", prompt="Look"), "outer"]), tools=[helper], reporter=None, human=None
    )
    state = State(messages=[Message.user("Task")])
    assert lead.run(state) == "outer"
    entry = next(e for e in state.history if e.kind == "tool_result")
    assert entry.content == "(researcher stopped after 1 turn before finishing)"
    assert entry.outcome == "done"
    child = state.child(entry.child_ids[0])
    assert child.stopped == StoppedByLimit(1)
    assert child.answer is None
