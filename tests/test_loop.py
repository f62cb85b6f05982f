"""Loops: `@loop`, `Loop`, stop rules, nesting, `waiting_for_user`, the default loops."""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
import warnings
from typing import Any

import pytest

from alpineagents.agent import Agent
from alpineagents.blocks import CompactIfFull
from alpineagents.loop import Loop, adefault_loop, default_loop, loop, waiting_for_user
from alpineagents.state import State
from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import Message, StoppedByFinish, StoppedByLimit, StoppedByUntil
from conftest import task


def stops(state: State) -> list[Any]:
    return [entry.content for entry in state.history if entry.kind == "stop"]


def never(state: State) -> bool:
    return False


def think_body(agent: Agent, state: State) -> None:
    agent.think(state)


def test_loop_arguments_are_checked() -> None:
    def body(agent: Any, state: Any) -> None:
        return None

    with pytest.raises(TypeError, match="@loop needs both until and limit"):
        loop(body)
    with pytest.raises(TypeError, match="@loop needs both until and limit"):
        loop()(body)
    with pytest.raises(TypeError, match="@loop needs both until and limit"):
        Loop(body, until=None, limit=10)
    with pytest.raises(TypeError, match=r"until got the result of a call \(a bool\)"):
        Loop(body, until=waiting_for_user(task()), limit=3)
    with pytest.raises(TypeError, match="until item 3 is not callable"):
        Loop(body, until=[3], limit=3)
    for bad in (True, 1.5, "50"):
        with pytest.raises(TypeError, match="limit must be an integer of 1 or more"):
            Loop(body, until=never, limit=bad)
    for bad in (0, -1):
        with pytest.raises(ValueError, match=f"limit must be 1 or more \\(got: {bad}\\)"):
            Loop(body, until=never, limit=bad)
    with pytest.warns(UserWarning, match="unnamed function"):
        Loop(body, until=lambda s: True, limit=3)


def test_until_lists_and_callable_objects_give_their_names() -> None:
    def cond_a(state: State) -> bool:
        return False

    def cond_b(state: State) -> bool:
        return True

    state = task()
    runs = []
    looped = Loop(lambda a, s: runs.append(1), until=[cond_a, cond_b], limit=10)
    looped(None, state)
    assert runs == [] and state.stopped == StoppedByUntil("cond_b")

    class OverBudget:
        def __call__(self, state: State) -> bool:
            return True

    other = task()
    Loop(lambda a, s: None, until=OverBudget(), limit=10)(None, other)
    assert other.stopped == StoppedByUntil("OverBudget")
    partial_state = task()
    Loop(lambda a, s: None, until=functools.partial(cond_b), limit=3)(None, partial_state)
    assert partial_state.stopped == StoppedByUntil("partial")


def test_a_condition_true_at_the_limit_wins_over_the_limit() -> None:
    def after_two(state: State) -> bool:
        return state.turn >= 2

    agent = Agent(FakeModel(["a", "b"]), loop=Loop(think_body, until=after_two, limit=2), reporter=None)
    state = task()
    agent.run(state)
    assert state.stopped == StoppedByUntil("after_two")


def test_the_limit_stops_the_loop() -> None:
    @loop(until=never, limit=2)
    def body(agent: Agent, state: State) -> None:
        agent.think(state)
        state.add_message(Message.user("go on"))

    state = task()
    assert Agent(FakeModel(["first", "second"]), loop=body, reporter=None).run(state) == "second"
    assert state.stopped == StoppedByLimit(2) and state.turn == 2
    assert len(stops(state)) == 1


def test_each_call_of_a_loop_counts_turns_from_zero() -> None:
    count = []

    @loop(until=never, limit=2)
    def body(agent: Any, state: State) -> None:
        count.append(1)

    state = task()
    body(None, state)
    body(None, state)
    assert len(count) == 4
    body(None, task())
    assert len(count) == 6


def test_nested_loops_record_their_stop_entries() -> None:
    inner = Loop(think_body, until=never, limit=1)

    def after_two_turns(state: State) -> bool:
        return state.turn >= 2

    seen: list[Any] = []

    @loop(until=after_two_turns, limit=10)
    def outer(agent: Agent, state: State) -> None:
        seen.append(state.stopped)
        inner(agent, state)
        state.add_message(Message.user("next"))

    state = task()
    Agent(FakeModel(["a", "b"]), loop=outer, reporter=None).run(state)
    assert stops(state) == [StoppedByLimit(1), None, StoppedByLimit(1), StoppedByUntil("after_two_turns")]
    assert seen == [None, None]
    assert State(history=state.history).stopped == state.stopped


def test_nested_loop_as_body() -> None:
    inner = Loop(lambda a, s: None, until=never, limit=5)
    outer = loop(until=never, limit=2)(inner)
    assert outer.body is inner and outer.__name__ == "<lambda>" and inner.limit == 5
    state = task()
    outer(None, state)
    assert stops(state) == [StoppedByLimit(5), None, StoppedByLimit(5), StoppedByLimit(2)]


def test_finish_in_an_inner_loop_ends_the_outer_loop() -> None:
    @loop(until=never, limit=5)
    def inner(agent: Any, state: State) -> None:
        state.finish("inner decided")

    turns = []

    @loop(until=never, limit=10)
    def outer(agent: Any, state: State) -> None:
        turns.append(1)
        inner(agent, state)

    state = task()
    assert outer(None, state) == "inner decided"
    assert turns == [1]
    assert stops(state) == [StoppedByFinish("inner decided")]


def test_a_state_already_waiting_runs_no_turn() -> None:
    fake = FakeModel(["x"])
    state = State(messages=[Message.user("Task"), Message.assistant("Already answered")])
    assert Agent(fake, reporter=None).run(state) is None
    assert state.turn == 0 and fake.requests == []
    assert stops(state) == [StoppedByUntil("waiting_for_user")]


def test_direct_calls_of_a_waiting_loop_run_no_turn() -> None:
    body = Loop(think_body, until=waiting_for_user, limit=5)
    agent = Agent(FakeModel(["one", "two"]), reporter=None)
    state = task()
    assert body(agent, state) == "one"
    count = len(state.history)
    assert body(agent, state) == "one"
    assert len(state.history) == count and state.turn == 1
    state.add_message(Message.user("more"))
    assert body(agent, state) == "two" and state.turn == 2


def test_default_loop_copy_and_repr() -> None:
    copied = default_loop.copy(limit=200)
    assert copied.limit == 200 and default_loop.limit == 50
    assert copied.until == default_loop.until and copied.body is default_loop.body
    assert repr(default_loop) == "Loop(default_loop, until=['waiting_for_user'], limit=50)"
    assert default_loop.until == (waiting_for_user,)
    assert default_loop.__name__ == "default_loop" and default_loop.__wrapped__.__name__ == "default_loop"
    assert default_loop.is_async is False and adefault_loop.is_async is True
    assert adefault_loop.__name__ == "adefault_loop" and isinstance(adefault_loop, Loop)
    assert adefault_loop.copy(limit=3).is_async
    assert "compact_if_full" in inspect.getsource(default_loop.body)


def test_waiting_for_user_rules() -> None:
    assert waiting_for_user(State()) is False
    assert waiting_for_user(task()) is False
    state = State(messages=[Message.user("a"), Message.assistant("b")])
    assert waiting_for_user(state) is True
    state.add_message(Message.notice("n"))
    assert waiting_for_user(state) is False


def test_loop_attributes_are_its_own() -> None:
    def body(agent: Any, state: Any) -> None:
        """Doc."""

    body.limit = 99  # type: ignore[attr-defined]
    made = Loop(body, until=[], limit=3)
    assert made.limit == 3 and made.until == () and made.__doc__ == "Doc." and made.__wrapped__ is body
    assert made.__module__ == __name__ and made.__qualname__.endswith("body")


def test_a_sync_body_must_return_none() -> None:
    @loop(until=never, limit=1)
    def returns_awaitable(agent: Agent, state: State) -> Any:
        return agent.athink(state)

    agent = Agent(FakeModel(["x"]), loop=returns_awaitable, reporter=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TypeError, match="returned an awaitable"):
            agent.run("T")

    @loop(until=never, limit=1)
    def returns_value(agent: Agent, state: State) -> Any:
        return "oops"

    with pytest.raises(TypeError, match=r"returned a value \('oops'\)") as info:
        Agent(FakeModel([]), loop=returns_value, reporter=None).run("T")
    assert "state.finish(answer)" in str(info.value)


def test_async_loop_marks_async_run_outside_arun() -> None:
    @loop(until=never, limit=1)
    async def body(agent: Agent, state: State) -> None:
        with pytest.raises(TypeError, match=r"await agent\.athink"):
            agent.think(state)
        await agent.athink(state)

    state = task()
    agent = Agent(FakeModel(["ok"]), reporter=None)
    assert asyncio.run(body(agent, state)) == "ok"


def test_compact_block_inside_async_loop_refuses_only_when_compacting() -> None:
    @loop(until=never, limit=1)
    async def body(agent: Agent, state: State) -> None:
        CompactIfFull(at=2.0)(agent, state)
        CompactIfFull(at=-1)(agent, state)

    with pytest.raises(TypeError, match="acompact_if_full"):
        asyncio.run(body(Agent(FakeModel([]), reporter=None), task()))


def test_subagent_tool_with_limit(tmp_path: Any) -> None:
    @loop(until=never, limit=2)
    def two(agent: Agent, state: State) -> None:
        agent.think(state)
        state.add_message(Message.user("again"))

    researcher = Agent(
        FakeModel(["first", "second"]), name="researcher", description="Researches", loop=two, reporter=None
    )
    lead = Agent(FakeModel([tool_call("researcher", prompt="Look"), "outer"]), tools=[researcher], reporter=None)
    state = task()
    assert lead.run(state) == "outer"
    entry = next(e for e in state.history if e.kind == "tool_result")
    assert entry.content == "second\n(researcher stopped after 2 turns before finishing)"
    child = state.child(entry.child_ids[0])
    assert child.stopped == StoppedByLimit(2) and child.parent_id == state.id
    assert sys.getrefcount(child) > 0


def test_a_think_only_body_stops_at_the_limit_with_one_stop_entry() -> None:
    """No message is added between turns: the limit stops the loop, and the answer is the last reply."""

    @loop(until=never, limit=2)
    def body(agent: Agent, state: State) -> None:
        agent.think(state)

    state = task()
    fake = FakeModel(["first", "second"])
    assert Agent(fake, loop=body, reporter=None).run(state) == "second"
    assert state.stopped == StoppedByLimit(2)
    assert state.turn == 2
    assert stops(state) == [StoppedByLimit(2)]
    assert len(fake.requests) == 2


def test_a_condition_true_after_limit_turns_is_the_only_stop() -> None:
    """Exactly `limit` turns ran and the only stop entry is the condition's (no limit stop anywhere)."""

    def after_two(state: State) -> bool:
        return state.turn >= 2

    def body(agent: Agent, state: State) -> None:
        agent.think(state)

    state = task()
    Agent(FakeModel(["a", "b"]), loop=Loop(body, until=after_two, limit=2), reporter=None).run(state)
    assert state.turn == 2
    assert stops(state) == [StoppedByUntil("after_two")]
