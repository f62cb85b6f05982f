"""Sync and async twins: `arun`, `athink`, `ause_tools`, the refusal of sync calls in an async run, cancellation."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from alpineagents.agent import Agent
from alpineagents.blocks import CompactIfFull
from alpineagents.loop import adefault_loop, default_loop, loop
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import StoppedByUntil
from conftest import task


def never(state: State) -> bool:
    return False


def test_the_loop_kind_must_match_run_or_arun() -> None:
    with pytest.raises(TypeError, match=r"arun\(\)") as info:
        Agent(model=FakeModel(["x"]), loop=adefault_loop, reporter=None).run("T")
    assert str(info.value).startswith("This Agent's loop 'adefault_loop' is async, so it cannot run with run()")

    @loop(until=never, limit=1)
    def sync_body(agent: Agent, state: State) -> None:
        agent.think(state)

    state = task()
    with pytest.raises(TypeError, match="async def") as info:
        asyncio.run(Agent(model=FakeModel(["x"]), loop=sync_body, reporter=None).arun(state))
    assert "adefault_loop" in str(info.value)
    assert [e.kind for e in state.history] == ["context_change"]


def test_arun_with_the_default_loop_uses_the_async_default() -> None:
    agent = Agent(model=FakeModel(["done"]), loop=default_loop, reporter=None)
    assert asyncio.run(agent.arun("Task")) == "done"
    state = task()
    assert asyncio.run(Agent(FakeModel(["again"]), reporter=None).arun(state)) == "again"
    assert state.stopped == StoppedByUntil("waiting_for_user")


def test_sync_methods_are_refused_inside_an_async_loop() -> None:
    @loop(until=never, limit=1)
    async def body(agent: Agent, state: State) -> None:
        for method in ("think", "use_tools", "compact"):
            with pytest.raises(TypeError, match=rf"await agent\.a{method}"):
                getattr(agent, method)(state)
        with pytest.raises(TypeError, match=r"await agent\.aask"):
            agent.ask(state, "q")
        with pytest.raises(TypeError, match=r"await agent\.aask_human"):
            agent.ask_human(state, "q")
        with pytest.raises(TypeError, match=r"answer = await agent\.arun"):
            agent.run("x")
        with pytest.raises(TypeError, match="acompact_if_full"):
            CompactIfFull(at=-1)(agent, state)
        assert agent.context_used(state) >= 0
        await agent.athink(state)

    state = task()
    agent = Agent(FakeModel(["ok"]), loop=body, reporter=None)
    asyncio.run(agent.arun(state))
    assert state.answer == "ok"


def test_a_sync_tool_runs_a_sync_subagent_during_arun() -> None:
    helper = Agent(FakeModel(["inner done"]), reporter=None)

    @tool
    def delegate() -> str:
        """Runs the helper."""
        return helper.run("Inner task")

    agent = Agent(FakeModel([tool_call("delegate"), "outer done"]), tools=[delegate], reporter=None)
    state = task()
    assert asyncio.run(agent.arun(state)) == "outer done"
    entry = next(e for e in state.history if e.kind == "tool_result")
    assert entry.content == "inner done" and len(entry.child_ids) == 1
    assert state.child(entry.child_ids[0]).parent_id == state.id


def test_async_tool_runs_on_the_loop_and_sync_tool_on_a_thread() -> None:
    threads: dict[str, int] = {}

    @tool
    async def atool() -> str:
        """Async."""
        threads["async"] = threading.get_ident()
        return "a"

    @tool
    def stool() -> str:
        """Sync."""
        threads["sync"] = threading.get_ident()
        return "s"

    async def main() -> Any:
        threads["loop"] = threading.get_ident()
        agent = Agent(FakeModel([[tool_call("atool"), tool_call("stool")], "fin"]), tools=[atool, stool])
        return await agent.copy(reporter=None).arun("T")

    assert asyncio.run(main()) == "fin"
    assert threads["async"] == threads["loop"] != threads["sync"]


def test_cancelling_arun_closes_pending_calls() -> None:
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Sleeps."""
        started.set()
        await asyncio.sleep(10)
        return "never"

    class Ends(Reporter):
        error: BaseException | None = None

        def on_run_end(self, state: State, error: BaseException | None) -> None:
            Ends.error = error

    state = task()
    agent = Agent(FakeModel([tool_call("slow"), "x"]), tools=[slow], reporter=Ends())

    async def main() -> None:
        run = asyncio.create_task(agent.arun(state))
        await asyncio.wait_for(started.wait(), 10)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    results = [e for e in state.history if e.kind == "tool_result"]
    assert [r.content for r in results] == ["(interrupted by user)"]
    assert isinstance(Ends.error, asyncio.CancelledError)
    assert state.stopped is None and state.pending_calls == ()
    assert not state._running


def test_cancelling_athink_takes_the_request_back() -> None:
    gate = threading.Event()

    def slow_item(request: Any) -> str:
        gate.wait(5)
        return "late"

    state = task()
    agent = Agent(FakeModel([slow_item]), reporter=None)

    async def main() -> None:
        thinking = asyncio.create_task(agent.athink(state))
        await asyncio.sleep(0.05)
        thinking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await thinking

    asyncio.run(main())
    gate.set()
    assert state.turn == 0 and [e.kind for e in state.history][-2:] == ["model_request", "error"]


def test_many_arun_at_once_on_one_loop() -> None:
    class Slow(FakeModel):
        async def arespond(self, request: Any, on_text: Any = None, on_event: Any = None) -> Any:
            await asyncio.sleep(0.05)
            return self.respond(request, on_text, on_event)

    @tool
    async def step() -> str:
        """A step."""
        return "ok"

    async def main() -> list[Any]:
        runs = []
        for i in range(50):
            agent = Agent(Slow([tool_call("step"), f"done {i}"]), tools=[step], reporter=None)
            runs.append(agent.arun(f"Task {i}"))
        return await asyncio.gather(*runs)

    started = time.perf_counter()
    results = asyncio.run(main())
    assert results == [f"done {i}" for i in range(50)]
    assert time.perf_counter() - started < 1.5


def test_ause_tools_and_acompact_twins() -> None:
    @tool
    def helper() -> str:
        """Helps."""
        return "ok"

    agent = Agent(FakeModel([tool_call("helper"), "summary"]), tools=[helper], reporter=None)
    state = task()

    async def main() -> None:
        await agent.athink(state)
        await agent.ause_tools(state)
        await agent.acompact(state)

    asyncio.run(main())
    assert state.messages[-1].text == "[notice] Summary so far:\nsummary"
    with pytest.raises(TypeError, match=r"agent\.athink\(\) must be a State"):
        asyncio.run(agent.athink(None))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"agent\.ause_tools\(\) must be a State"):
        asyncio.run(agent.ause_tools(None))  # type: ignore[arg-type]


def test_sync_run_in_a_notebook_style_thread_with_a_loop() -> None:
    async def main() -> Any:
        # A running loop without an async run: sync methods work.
        return Agent(FakeModel(["fine"]), reporter=None).run("T")

    assert asyncio.run(main()) == "fine"
