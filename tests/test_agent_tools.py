"""Tools in whole runs, through `Agent.run`/`arun`: defaults, the State parameter, error results, exceptions that
stop the run, unknown tools, parallel failures, Ctrl+C, threads and late results."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest

from alpineagents.agent import Agent
from alpineagents.errors import ToolError
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message, ToolOutcome
from conftest import kinds, results, task


class Outcomes(Reporter):
    def __init__(self) -> None:
        self.ends: list[tuple[str, ToolOutcome]] = []

    def on_tool_end(self, state: State, call: Any, result: Any, outcome: ToolOutcome) -> None:
        self.ends.append((call.name, outcome))


def test_a_run_fills_in_a_default_argument() -> None:
    @tool
    def add(a: int, b: int = 10) -> int:
        """Adds."""
        return a + b

    state = task()
    Agent(FakeModel([tool_call("add", a=5), "done"]), tools=[add], reporter=None).run(state)
    assert results(state)[0].content == "15"


def test_the_state_parameter_is_the_runs_state() -> None:
    seen: list[State] = []

    @tool
    def peek(msg: str, ctx: State) -> str:
        """Peeks."""
        seen.append(ctx)
        return msg

    state = task()
    Agent(FakeModel([tool_call("peek", msg="hi"), "done"]), tools=[peek], reporter=None).run(state)
    assert seen == [state] and seen[0] is state


def test_a_tool_error_is_a_result_and_the_run_goes_on() -> None:
    @tool
    def fails() -> str:
        """Fails."""
        raise ToolError("nope")

    reporter = Outcomes()
    state = task()
    assert Agent(FakeModel([tool_call("fails"), "answer"]), tools=[fails], reporter=reporter).run(state) == "answer"
    entry = results(state)[0]
    assert entry.content == "nope" and entry.outcome == "error" and isinstance(entry.error, ToolError)
    assert "error" not in kinds(state)
    assert reporter.ends[0][1].kind == "error"


def test_an_exception_no_handler_takes_stops_the_run() -> None:
    @tool
    def buggy() -> str:
        """Has a bug."""
        raise KeyError("bug")

    state = task()
    with pytest.raises(KeyError):
        Agent(FakeModel([tool_call("buggy"), "never"]), tools=[buggy], reporter=None).run(state)
    assert results(state)[0].content == "(aborted: KeyError)"


def test_a_call_to_an_unknown_tool_lists_the_available_ones() -> None:
    class Calc:
        @tool
        def add(self, a: int, b: int) -> int:
            """Adds."""
            return a + b

        @tool
        def sub(self, a: int, b: int) -> int:
            """Subtracts."""
            return a - b

    calc = Calc()
    state = task()
    Agent(FakeModel([tool_call("sub", a=1, b=1), "x"]), tools=[calc.add], reporter=None).run(state)
    assert results(state)[0].content == "(input error: unknown tool 'sub'. Available tools: add)"
    state = task()
    Agent(FakeModel([tool_call("nope"), "x"]), reporter=None).run(state)
    assert results(state)[0].content == "(input error: unknown tool 'nope'. Available tools: (none))"


def test_a_parallel_failure_stops_the_run_and_closes_every_call() -> None:
    failed = threading.Event()

    @tool
    def boom() -> str:
        """Fails."""
        failed.set()
        raise RuntimeError("kaput")

    @tool
    def ok() -> str:
        """Works, once boom has failed."""
        assert failed.wait(5)
        return "fine"

    @tool(parallel=False)
    def later() -> str:
        """Serial."""
        return "never"

    state = task()
    agent = Agent(
        FakeModel([[tool_call("boom"), tool_call("ok"), tool_call("later")]]), tools=[boom, ok, later], reporter=None
    )
    with pytest.raises(RuntimeError, match="kaput") as info:
        agent.run(state)
    assert "exception raised in tool boom()" in info.value.__notes__
    contents = {entry.call.name: entry.content for entry in results(state)}
    assert contents == {"ok": "fine", "boom": "(aborted: RuntimeError)", "later": "(aborted: RuntimeError)"}


def test_keyboard_interrupt_closes_the_call_as_interrupted() -> None:
    @tool
    def stop() -> str:
        """Ctrl+C."""
        raise KeyboardInterrupt

    state = task()
    with pytest.raises(KeyboardInterrupt):
        Agent(FakeModel([tool_call("stop")]), tools=[stop], reporter=None).run(state)
    entry = results(state)[0]
    assert entry.content == "(interrupted by user)" and entry.outcome == "interrupted"


def test_arun_runs_async_tools_on_the_loop_and_records_a_late_result() -> None:
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")
    seen: dict[str, Any] = {}
    release = threading.Event()

    @tool
    async def on_loop() -> str:
        """Async."""
        seen["async"] = threading.get_ident()
        return "a"

    @tool
    def on_thread() -> str:
        """Sync."""
        seen["sync"] = threading.get_ident()
        seen["marker"] = marker.get()
        return "s"

    started = threading.Event()

    @tool
    def slow_sync() -> str:
        """Blocks until released."""
        started.set()
        release.wait(5)
        return "exit 0"

    async def first() -> None:
        marker.set("set before arun")
        seen["loop"] = threading.get_ident()
        agent = Agent(FakeModel([[tool_call("on_loop"), tool_call("on_thread")], "ok"]), tools=[on_loop, on_thread])
        await agent.copy(reporter=None).arun(task())

    asyncio.run(first())
    assert seen["async"] == seen["loop"] != seen["sync"] and seen["marker"] == "set before arun"

    state = task()
    agent = Agent(FakeModel([tool_call("slow_sync"), "after"]), tools=[slow_sync], reporter=None)

    async def second() -> None:
        run = asyncio.create_task(agent.arun(state))
        assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 5)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(second())
    assert results(state)[0].content == "(interrupted by user)"
    release.set()
    deadline = time.monotonic() + 5
    while len(results(state)) < 2:  # the late result is recorded by the worker thread
        assert time.monotonic() < deadline, "no late result"
        time.sleep(0.01)
    late = results(state)[1]
    assert late.late and late.content == "exit 0"
    state.add_message(Message.user("go on"))
    fake = FakeModel(["done"])
    Agent(fake, reporter=None).think(state)
    texts = [m.text for m in fake.requests[0].messages]
    assert any("finished later" in t and "exit 0" in t for t in texts)
