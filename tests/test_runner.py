"""How one turn's calls run, and the permission phase before them, through the runner seam.

The State is driven by its own recording operations (`_begin_think`, `_record_reply`) so that each test starts
with exactly the pending calls it needs; `_runner.run_tool_calls` / `arun_tool_calls` then do what
`agent.use_tools` / `agent.ause_tools` do.
"""

from __future__ import annotations

import _thread
import asyncio
import contextvars
import threading
import time
import warnings
from concurrent.futures import Future
from typing import Any

import pytest

from alpineagents import _runner
from alpineagents._tools.scope import CALL_SCOPE
from alpineagents._turn.context import RunContext
from alpineagents.agent import Agent
from alpineagents.errors import PermissionWarning, ToolError, ToolInputError
from alpineagents.permissions import (
    AllowByDefault,
    AllowByName,
    Allowed,
    DecidePermission,
    Denied,
    DenyByName,
    DenyPermission,
)
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import Tool, ToolMap, collect_tools, tool
from alpineagents.types import (
    INVALID_ARGS_KEY,
    TRUNCATED_ARGS_MESSAGE,
    Message,
    Reply,
    ToolCall,
    ToolOutcome,
    ToolOutcomeKind,
    ToolResultEntry,
    Usage,
)
from conftest import results

K = ToolOutcomeKind


class Recorder(Reporter):
    """Keeps every tool event with the thread it arrived on."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()

    def on_tool_start(self, state: State, call: ToolCall) -> None:
        with self.lock:
            self.events.append(("start", call.name, threading.get_ident()))

    def on_tool_end(self, state: State, call: ToolCall, result: Any, outcome: ToolOutcome) -> None:
        with self.lock:
            self.events.append(("end", call.name, result, outcome))

    def ends(self) -> dict[str, tuple[Any, ToolOutcome]]:
        return {e[1]: (e[2], e[3]) for e in self.events if e[0] == "end"}

    def names(self) -> list[tuple[str, str]]:
        return [(e[0], e[1]) for e in self.events]


class SaveLog:
    """A store stand-in that only counts saves (the runner's save points are under test, not a store)."""

    def __init__(self, fail: bool = False) -> None:
        self.saves: list[int] = []
        self.fail = fail

    def save(self, state: State) -> None:
        self.saves.append(len(state.history))
        if self.fail:
            raise OSError("disk full")

    async def asave(self, state: State) -> None:
        self.save(state)


def call(name: str, n: int | None = None, /, **args: Any) -> ToolCall:
    return ToolCall(name, args, f"c_{name}" if n is None else f"c_{name}_{n}")


def turn(*calls: ToolCall) -> State:
    """A State whose latest reply requested `calls` (all pending)."""
    state = State(messages=[Message.user("go")])
    state._begin_think("fake/fake")
    state._record_reply(Reply(Message("assistant", calls), Usage(requests=1)))
    return state


def wait_for(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


async def until(condition: Any, timeout: float = 30) -> None:
    """Let the event loop run until `condition()` holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


def context(reporter: Any = None, permissions: Any = None, store: Any = None) -> RunContext:
    return RunContext(None, reporter=reporter, permissions=permissions, store=store)


def tool_map(*tools: Any) -> ToolMap:
    return ToolMap(collect_tools(tools), ())


def result_of(state: State, name: str) -> ToolResultEntry:
    return next(e for e in results(state) if e.call.name == name and not e.late)


def errors(state: State) -> list[Any]:
    return [e for e in state.history if e.kind == "error"]


def use_tools(state: State, *tools: Any, reporter: Any = None, permissions: Any = None, store: Any = None) -> None:
    _runner.run_tool_calls(state, tool_map(*tools), context(reporter, permissions, store))


@tool
def ok() -> str:
    return "fine"


@tool
def boom() -> str:
    raise RuntimeError("kaput")


@tool(parallel=False)
def serial() -> str:
    return "serial done"


# --- tools in a turn -------------------------------------------------------------------------------------------


def test_a_missing_argument_gets_its_default() -> None:
    @tool
    def add(a: int, b: int = 10) -> int:
        return a + b

    state = turn(call("add", a=5))
    use_tools(state, add)
    entry = result_of(state, "add")
    assert (entry.content, entry.outcome) == ("15", K.DONE)
    assert state.pending_calls == ()
    assert state.messages[-1].content[0].content == "15"


def test_the_state_parameter_receives_the_turns_state() -> None:
    seen: list[Any] = []

    @tool
    def peek(msg: str, ctx: State) -> str:
        seen.append(ctx)
        return msg

    state = turn(call("peek", msg="hi"))
    use_tools(state, peek)
    assert seen == [state] and seen[0] is state
    assert result_of(state, "peek").content == "hi"


def test_a_validation_failure_is_an_input_error_result() -> None:
    called: list[int] = []

    @tool
    def strict(n: int) -> int:
        called.append(n)
        return n

    recorder = Recorder()
    state = turn(call("strict", n="not a number"))
    use_tools(state, strict, reporter=recorder)
    entry = result_of(state, "strict")
    assert entry.content.startswith("(input error:")
    assert entry.content == "(input error: n: Input should be a valid integer, unable to parse string as an integer)"
    assert entry.outcome is K.INPUT_ERROR and entry.error is None and entry.is_error
    assert called == []
    assert recorder.names() == [("start", "strict"), ("end", "strict")]
    assert recorder.ends()["strict"][1] == ToolOutcome(K.INPUT_ERROR)


def test_results_are_formatted_for_the_model() -> None:
    @tool
    def nothing() -> None:
        return None

    @tool
    def text() -> str:
        return "passed as is"

    @tool
    def data() -> dict[str, Any]:
        return {"a": 1, "b": [1, 2, 3]}

    state = turn(call("nothing"), call("text"), call("data"))
    use_tools(state, nothing, text, data)
    assert result_of(state, "nothing").content == "(done)"
    assert result_of(state, "text").content == "passed as is"
    assert result_of(state, "data").content == '{"a": 1, "b": [1, 2, 3]}'


def test_an_unconvertible_result_stops_the_turn() -> None:
    @tool
    def odd() -> Any:
        return object()

    state = turn(call("odd"))
    with pytest.raises(TypeError, match="JSON") as info:
        use_tools(state, odd)
    assert "exception raised in tool odd()" in info.value.__notes__
    assert state.pending_calls == (call("odd"),)
    assert errors(state)[-1].error is info.value


def test_a_tool_error_is_an_error_result() -> None:
    @tool
    def nope() -> str:
        raise ToolError("nope")

    recorder = Recorder()
    state = turn(call("nope"))
    use_tools(state, nope, reporter=recorder)
    entry = result_of(state, "nope")
    assert (entry.content, entry.outcome) == ("nope", K.ERROR)
    assert isinstance(entry.error, ToolError) and str(entry.error) == "nope"
    assert errors(state) == []
    assert recorder.ends()["nope"][1].kind == "error"
    assert recorder.ends()["nope"][1] == ToolOutcome(K.ERROR)


def test_a_tool_input_error_from_a_subclass_is_an_input_error_result() -> None:
    class Ticket(Tool):
        def __init__(self) -> None:
            super().__init__(name="create_ticket")

        def run(self, args: dict[str, Any], state: State) -> Any:
            if "title" not in args:
                raise ToolInputError("title is required")
            return "created"

    state = turn(call("create_ticket"))
    use_tools(state, Ticket())
    entry = result_of(state, "create_ticket")
    assert (entry.content, entry.outcome) == ("(input error: title is required)", K.INPUT_ERROR)


class HTTPError(Exception):
    pass


class NotFound(HTTPError):
    pass


def http_errors(error: HTTPError) -> str:
    return f"request failed: {error}"


def test_the_exception_handler_in_a_turn() -> None:
    @tool(exception_handler=http_errors)
    def fetch(url: str) -> str:
        if url == "u":
            raise NotFound("404 u")
        raise KeyError("bug")

    state = turn(call("fetch", url="u"))
    use_tools(state, fetch)
    entry = result_of(state, "fetch")
    assert (entry.content, entry.outcome) == ("request failed: 404 u", K.ERROR)
    assert isinstance(entry.error, ToolError) and isinstance(entry.error.__cause__, NotFound)

    state = turn(call("fetch", url="other"))
    with pytest.raises(KeyError) as info:
        use_tools(state, fetch)
    assert state.pending_calls == (call("fetch", url="other"),)
    state._close_pending(info.value)
    assert result_of(state, "fetch").content == "(aborted: KeyError)"


def test_a_bad_handler_result_stops_the_turn() -> None:
    def silent(error: Exception) -> Any:
        return None

    @tool(exception_handler=silent)
    def fetch(url: str) -> str:
        raise HTTPError("x")

    state = turn(call("fetch", url="u"))
    with pytest.raises(TypeError, match="returned None") as info:
        use_tools(state, fetch)
    assert isinstance(info.value.__cause__, HTTPError)


def test_a_copy_without_handler_stops_the_turn() -> None:
    @tool(exception_handler=http_errors)
    def fetch(url: str) -> str:
        raise NotFound("gone")

    state = turn(call("fetch", url="u"))
    with pytest.raises(NotFound):
        use_tools(state, fetch.copy(exception_handler=None))


class Calc:
    @tool
    def add(self, a: int, b: int) -> int:
        return a + b

    @tool
    def sub(self, a: int, b: int) -> int:
        return a - b


def test_methods_of_an_object_run_bound_to_it() -> None:
    calc = Calc()
    state = turn(call("add", a=1, b=2), call("sub", a=5, b=1))
    use_tools(state, calc)
    assert [result_of(state, n).content for n in ("add", "sub")] == ["3", "4"]

    state = turn(call("sub", a=5, b=1))
    use_tools(state, calc.add)
    assert result_of(state, "sub").content == "(input error: unknown tool 'sub'. Available tools: add)"


def test_an_unknown_tool_with_no_tools_lists_none() -> None:
    recorder = Recorder()
    state = turn(call("nope"))
    use_tools(state, reporter=recorder)
    entry = result_of(state, "nope")
    assert entry.content == "(input error: unknown tool 'nope'. Available tools: (none))"
    assert entry.outcome is K.INPUT_ERROR
    assert recorder.names() == [("start", "nope"), ("end", "nope")]

    state = turn(call("nope"))
    use_tools(state, ok, boom, serial)
    assert result_of(state, "nope").content == ("(input error: unknown tool 'nope'. Available tools: ok, boom, serial)")


def test_unreadable_arguments_are_an_input_error_and_never_run() -> None:
    ran: list[Any] = []

    class Ticket(Tool):
        def __init__(self) -> None:
            super().__init__(name="create_ticket")

        def run(self, args: dict[str, Any], state: State) -> Any:
            ran.append(args)
            return "created"

    state = turn(
        ToolCall("create_ticket", {INVALID_ARGS_KEY: '{"title": '}, "c1"),
        ToolCall("create_ticket", {INVALID_ARGS_KEY: TRUNCATED_ARGS_MESSAGE}, "c2"),
    )
    use_tools(state, Ticket(), permissions=(DenyByName(["*"]),))
    first, second = results(state)
    assert first.content == '(input error: arguments are not valid JSON: {"title": )'
    assert second.content == f"(input error: {TRUNCATED_ARGS_MESSAGE})"
    assert first.outcome is second.outcome is K.INPUT_ERROR
    assert ran == []


def test_parallel_calls_run_together_then_serial_ones_alone() -> None:
    times: dict[str, float] = {}
    together = threading.Barrier(2, timeout=30)  # only calls that run at the same time both get past it

    @tool
    def sleep_a() -> str:
        together.wait()
        times["a"] = time.monotonic()
        return "a"

    @tool
    def sleep_b() -> str:
        together.wait()
        times["b"] = time.monotonic()
        return "b"

    @tool(parallel=False)
    def after() -> str:
        times["after"] = time.monotonic()
        return "after"

    state = turn(call("after"), call("sleep_a"), call("sleep_b"))
    use_tools(state, sleep_a, sleep_b, after)
    assert not together.broken, "the parallel calls did not run together"
    assert times["after"] >= max(times["a"], times["b"])
    assert [e.call.name for e in results(state)][-1] == "after"


def test_history_in_completion_order_messages_in_request_order() -> None:
    @tool
    def slow(state: State) -> str:
        wait_for(lambda: any(e.kind == "tool_result" for e in state.history))
        return "slow"

    @tool
    def fast() -> str:
        return "fast"

    state = turn(call("slow"), call("fast"))
    use_tools(state, slow, fast)
    assert [e.call.name for e in results(state)] == ["fast", "slow"]
    assert [b.name for b in state.messages[-1].content] == ["slow", "fast"]


def test_each_call_gets_its_own_copy_of_the_arguments() -> None:
    seen: list[list[int]] = []

    @tool
    def mutate(items: list[int], opts: dict[str, int]) -> str:
        items.append(99)
        opts["x"] = 1
        seen.append(items)
        return "ok"

    class RawMutate(Tool):
        def __init__(self) -> None:
            super().__init__(name="raw")

        def run(self, args: dict[str, Any], state: State) -> Any:
            args["items"].append(7)
            args["nested"]["k"].append(1)
            return type(args["nested"]).__name__

    class Watch(DecidePermission):
        def __init__(self) -> None:
            self.args: list[Any] = []

        def check(self, state: State, call: ToolCall, tool: Tool) -> Allowed:
            self.args.append(call.args)
            return Allowed()

    watch = Watch()
    first, second = call("mutate", 1, items=[0], opts={}), call("mutate", 2, items=[0], opts={})
    raw = call("raw", items=[1], nested={"k": []})
    state = turn(first, second, raw)
    use_tools(state, mutate, RawMutate(), permissions=(watch,))
    assert first.args == {"items": [0], "opts": {}} and second.args == {"items": [0], "opts": {}}
    assert seen == [[0, 99], [0, 99]] and seen[0] is not seen[1]
    assert raw.args == {"items": [1], "nested": {"k": []}}
    assert result_of(state, "raw").content == "dict"
    with pytest.raises(TypeError):
        watch.args[0]["items"].append(1)


def test_a_parallel_failure_is_raised_after_the_group_and_its_call_stays_pending() -> None:
    release = threading.Event()

    @tool
    def boom_late() -> str:
        release.wait(5)
        raise RuntimeError("kaput")

    @tool
    def ok_first() -> str:
        release.set()
        return "fine"

    recorder = Recorder()
    state = turn(call("boom_late"), call("ok_first"), call("serial"))
    with pytest.raises(RuntimeError, match="kaput") as info:
        use_tools(state, boom_late, ok_first, serial, reporter=recorder)
    assert "exception raised in tool boom_late()" in info.value.__notes__
    assert result_of(state, "ok_first").content == "fine"
    assert [c.name for c in state.pending_calls] == ["boom_late", "serial"]
    assert ("start", "serial") not in recorder.names()
    end = recorder.ends()["boom_late"]
    assert end == ("(aborted: RuntimeError)", ToolOutcome(K.ABORTED, info.value))
    assert errors(state)[-1].call == call("boom_late") and errors(state)[-1].error is info.value
    assert errors(state)[-1].content == "RuntimeError: kaput"
    state._close_pending(info.value)
    assert [(e.call.name, e.content) for e in results(state)[-2:]] == [
        ("boom_late", "(aborted: RuntimeError)"),
        ("serial", "(aborted: RuntimeError)"),
    ]


def test_of_two_failures_the_first_to_finish_is_raised() -> None:
    @tool
    def fails_later(state: State) -> str:
        wait_for(lambda: any(e.kind == "error" for e in state.history))
        raise KeyError("late")

    @tool
    def fails_first() -> str:
        raise ValueError("first")

    recorder = Recorder()
    state = turn(call("fails_later"), call("fails_first"))
    with pytest.raises(ValueError, match="first"):
        use_tools(state, fails_later, fails_first, reporter=recorder)
    assert [type(e.error).__name__ for e in errors(state)] == ["ValueError", "KeyError"]
    assert recorder.ends()["fails_later"][0] == "(aborted: KeyError)"


def test_keyboard_interrupt_from_a_tool_closes_the_call_as_interrupted() -> None:
    @tool
    def interrupt() -> str:
        raise KeyboardInterrupt

    recorder = Recorder()
    state = turn(call("interrupt"), call("serial"))
    with pytest.raises(KeyboardInterrupt) as info:
        use_tools(state, interrupt, serial, reporter=recorder)
    assert recorder.ends()["interrupt"] == ("(interrupted by user)", ToolOutcome(K.INTERRUPTED, info.value))
    state._close_pending(info.value)
    assert [(e.content, e.outcome) for e in results(state)] == [
        ("(interrupted by user)", K.INTERRUPTED),
        ("(interrupted by user)", K.INTERRUPTED),
    ]


VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


def test_async_tools_run_on_the_loop_and_cancellation_leaves_a_late_result() -> None:
    release = threading.Event()
    where: dict[str, Any] = {}

    @tool
    def slow_sync() -> str:
        where["sync"] = (threading.get_ident(), VAR.get())
        release.wait(5)
        return "exit 0"

    @tool
    async def waits() -> str:
        where["async"] = threading.get_ident()
        await asyncio.sleep(10)
        return "never"

    recorder = Recorder()
    state = turn(call("slow_sync"), call("waits"))

    async def main() -> None:
        VAR.set("before")
        where["loop"] = threading.get_ident()
        task = asyncio.ensure_future(_runner.arun_tool_calls(state, tool_map(slow_sync, waits), context(recorder)))
        await until(lambda: "async" in where and "sync" in where)
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as info:
            await task
        state._close_pending(info.value)

    asyncio.run(main())
    assert where["async"] == where["loop"]
    assert where["sync"][0] != where["loop"] and where["sync"][1] == "before"
    ends = recorder.ends()
    assert ends["slow_sync"][0] == ends["waits"][0] == "(interrupted by user)"
    assert ends["slow_sync"][1].kind is ends["waits"][1].kind is K.INTERRUPTED
    assert [(e.content, e.outcome) for e in results(state)] == [("(interrupted by user)", K.INTERRUPTED)] * 2
    release.set()
    wait_for(lambda: any(e.late for e in results(state)))
    late = [e for e in results(state) if e.late]
    assert len(late) == 1 and late[0].content == "exit 0" and late[0].call.name == "slow_sync"
    assert late[0].outcome is K.DONE
    time.sleep(0.05)  # a grace period for anything that should not come
    assert len([e for e in results(state) if e.late]) == 1  # the cancelled coroutine records nothing
    state.add_message(Message.user("next"))
    state._begin_think("fake/fake")
    notices = [m.text for m in state.messages if "finished later" in m.text]
    assert notices == ["[notice] interrupted slow_sync() finished later: exit 0"]


# --- threads, interrupts, late results, save points ----------------------------------------------------------


def test_sync_ctrl_c_while_waiting() -> None:
    release = threading.Event()
    fast_done = threading.Event()

    @tool
    def slow() -> str:
        release.wait(5)
        return "exit 0"

    @tool
    def fast() -> str:
        fast_done.set()
        return "fast"

    @tool
    async def sleeper() -> str:
        await asyncio.sleep(10)
        return "never"

    recorder = Recorder()
    state = turn(call("slow"), call("fast"), call("sleeper"), call("serial"))

    def press_ctrl_c() -> None:
        fast_done.wait(5)
        wait_for(lambda: ("end", "fast") in recorder.names())
        _thread.interrupt_main()

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    with pytest.raises(KeyboardInterrupt) as info:
        use_tools(state, slow, fast, sleeper, serial, reporter=recorder)
    assert result_of(state, "fast").content == "fast"
    assert [c.name for c in state.pending_calls] == ["slow", "sleeper", "serial"]
    ends = recorder.ends()
    assert set(ends) == {"fast", "slow", "sleeper"}
    assert ends["slow"] == ("(interrupted by user)", ToolOutcome(K.INTERRUPTED, info.value))
    assert ("start", "serial") not in recorder.names()
    starts = [e for e in recorder.events if e[0] == "start"]
    assert len(starts) == 3 and len([e for e in recorder.events if e[0] == "end"]) == 3
    state._close_pending(info.value)
    release.set()
    wait_for(lambda: any(e.late for e in results(state)))
    time.sleep(0.1)  # a grace period: the cancelled coroutine must record nothing
    late = [e for e in results(state) if e.late]
    assert [(e.call.name, e.content) for e in late] == [("slow", "exit 0")]


def test_interrupt_during_hand_over_treats_the_call_as_running(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    original = _runner._Executor.submit

    def submit_then_ctrl_c(self: Any, job: Any, state: State) -> None:
        original(self, job, state)
        raise KeyboardInterrupt

    @tool
    def slow() -> str:
        release.wait(5)
        return "late value"

    monkeypatch.setattr(_runner._Executor, "submit", submit_then_ctrl_c)
    recorder = Recorder()
    state = turn(call("slow"), call("ok"))
    with pytest.raises(KeyboardInterrupt):
        use_tools(state, slow, ok, reporter=recorder)
    assert recorder.names() == [("start", "slow"), ("end", "slow")]
    assert recorder.ends()["slow"][0] == "(interrupted by user)"
    assert results(state) == []
    monkeypatch.undo()
    release.set()
    wait_for(lambda: results(state))
    # The call was never closed, so the late value fills its own slot as an ordinary result.
    assert [(e.call.name, e.content, e.late) for e in results(state)] == [("slow", "late value", False)]
    assert [c.name for c in state.pending_calls] == ["ok"]


def test_late_exception_text() -> None:
    release = threading.Event()

    @tool
    def slow() -> str:
        release.wait(5)
        raise ValueError("went wrong")

    @tool
    def trigger() -> str:
        threading.Timer(0.05, _thread.interrupt_main).start()
        return "t"

    state = turn(call("slow"), call("trigger"))
    with pytest.raises(KeyboardInterrupt) as info:
        use_tools(state, slow, trigger)
    state._close_pending(info.value)
    release.set()
    wait_for(lambda: any(e.late for e in results(state)))
    late = next(e for e in results(state) if e.late)
    assert late.content == "(exception: ValueError: went wrong)"
    assert late.outcome is K.ABORTED and isinstance(late.error, ValueError)


def test_at_most_32_workers() -> None:
    lock = threading.Lock()
    running = [0, 0]
    gate = threading.Event()

    @tool
    def work(i: int) -> int:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
            if running[0] == 32:
                gate.set()
        gate.wait(5)
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return i

    calls = [call("work", i, i=i) for i in range(40)]
    state = turn(*calls)
    use_tools(state, work)
    assert running[1] == 32
    assert sorted(int(e.content) for e in results(state)) == list(range(40))
    assert [int(b.content) for b in state.messages[-1].content] == list(range(40))


def test_async_driver_matches_sync_driver() -> None:
    @tool
    async def double(n: int) -> int:
        await asyncio.sleep(0)
        return n * 2

    @tool
    def fail() -> str:
        raise ToolError("no")

    recorder = Recorder()
    state = turn(call("double", n=2), call("fail"), call("nope"), call("serial"))
    asyncio.run(_runner.arun_tool_calls(state, tool_map(double, fail, serial), context(recorder)))
    assert [(e.call.name, e.content, e.outcome) for e in results(state)][0] == (
        "nope",
        "(input error: unknown tool 'nope'. Available tools: double, fail, serial)",
        K.INPUT_ERROR,
    )
    assert {e.call.name: e.content for e in results(state)} == {
        "nope": results(state)[0].content,
        "double": "4",
        "fail": "no",
        "serial": "serial done",
    }
    assert recorder.names()[:4] == [("start", "nope"), ("end", "nope"), ("start", "double"), ("start", "fail")]
    assert recorder.names()[-2:] == [("start", "serial"), ("end", "serial")]
    assert state.pending_calls == ()


def test_async_tool_raising_cancelled_error_itself() -> None:
    @tool
    async def gives_up() -> str:
        raise asyncio.CancelledError()

    recorder = Recorder()
    state = turn(call("gives_up"))

    async def main() -> BaseException:
        try:
            await _runner.arun_tool_calls(state, tool_map(gives_up), context(recorder))
        except asyncio.CancelledError as error:
            return error
        raise AssertionError("not raised")

    error = asyncio.run(main())
    assert errors(state)[-1].error is error and errors(state)[-1].content == "CancelledError"
    assert recorder.ends()["gives_up"] == ("(interrupted by user)", ToolOutcome(K.INTERRUPTED, error))
    assert "exception raised in tool gives_up()" in error.__notes__


def test_sync_driver_runs_coroutines_on_a_worker_loop() -> None:
    where: dict[str, Any] = {}

    @tool
    async def on_loop(x: int) -> int:
        where["thread"] = threading.get_ident()
        where["loop"] = asyncio.get_running_loop()
        asyncio.get_running_loop().create_task(asyncio.sleep(10))  # a leftover task gets cancelled
        return x

    class ReturnsCoroutine(Tool):
        def __init__(self) -> None:
            super().__init__(name="coro")

        def run(self, args: dict[str, Any], state: State) -> Any:
            async def inner() -> str:
                return "from coroutine"

            return inner()

    state = turn(call("on_loop", x=3), call("coro"))
    use_tools(state, on_loop, ReturnsCoroutine())
    assert where["thread"] != threading.get_ident() and where["loop"].is_closed()
    assert result_of(state, "on_loop").content == "3"
    assert result_of(state, "coro").content == "from coroutine"


def test_call_scope_is_visible_in_tools_only() -> None:
    seen: list[Any] = []

    @tool
    def look(state: State) -> str:
        scope = CALL_SCOPE.get()
        assert scope is not None
        parent, current = scope
        seen.append((parent is state, current, scope.context))
        return "ok"

    @tool
    async def alook(state: State) -> str:
        scope = CALL_SCOPE.get()
        assert scope is not None
        seen.append((scope.state is state, scope.call, scope.context))
        return "ok"

    ctx = context()
    state = turn(call("look"))
    _runner.run_tool_calls(state, tool_map(look), ctx)
    state2 = turn(call("alook"))
    asyncio.run(_runner.arun_tool_calls(state2, tool_map(alook), ctx))
    assert seen == [(True, call("look"), ctx), (True, call("alook"), ctx)]
    assert CALL_SCOPE.get() is None


def test_save_points_and_quiet_batch_failures() -> None:
    store = SaveLog()
    state = turn(call("ok"), call("serial"))
    use_tools(state, ok, serial, store=store)
    assert len(store.saves) == 2  # one per batch
    failing = SaveLog(fail=True)
    state = turn(call("ok"))
    use_tools(state, ok, store=failing)
    assert result_of(state, "ok").content == "fine"
    asyncio.run(_runner.arun_tool_calls(turn(call("ok")), tool_map(ok), context(store=failing)))


def test_no_pending_calls_does_nothing() -> None:
    state = State(messages=[Message.user("x")])
    before = state.history
    use_tools(state, ok, reporter=Recorder())
    assert state.history == before


# --- the runner's seams: _Job, _finish, _Executor.submit ----------------------------------------------------


def test_finish_seam() -> None:
    recorder = Recorder()
    state = turn(call("ok"), call("other"), call("bad"))
    job = _runner._Job(call("ok"), tool=None)
    assert (job.future, job.announced) == (None, False)
    future: Future[Any] = Future()
    future.set_result("plain value")
    job.future = future
    failures: list[Any] = []
    _runner._finish(state, recorder, job, failures)
    assert result_of(state, "ok").outcome is K.DONE and recorder.events == []
    _runner._finish(state, recorder, job, failures)
    assert len(results(state)) == 1

    announced = _runner._Job(call("other"), None)
    announced.announced = True
    announced.future = Future()
    announced.future.set_result("again")
    state._tool_result(call("other"), "closed by someone else", K.DENIED)
    _runner._finish(state, recorder, announced, failures)  # already closed: nothing, no raise
    assert len(results(state)) == 2 and recorder.events == []

    bad = _runner._Job(call("bad"), None, None)
    bad.announced = True
    bad.future = Future()
    error = OSError("x")
    bad.future.set_exception(error)
    _runner._finish(state, recorder, bad, failures)
    _runner._finish(state, recorder, bad, failures)
    assert failures == [bad]
    assert errors(state)[-1].error is error and errors(state)[-1].call == call("bad")
    assert recorder.ends()["bad"] == ("(aborted: OSError)", ToolOutcome(K.ABORTED, error))


def test_executor_submit_sets_future_before_the_thread() -> None:
    state = turn(call("ok"))
    job = _runner._Job(call("ok"), ok.copy(), None)
    _runner._Executor(4).submit(job, state)
    assert isinstance(job.future, Future)
    assert job.future.result(5) == "fine"


# --- the permission phase ------------------------------------------------------------------------------------


class Log:
    def __init__(self) -> None:
        self.asked: list[str] = []


def logging_permission(kind: type, name: str, log: Log, verdict: Any) -> Any:
    class Logged(kind):  # type: ignore[misc, valid-type]
        def check(self, state: State, call: ToolCall, tool: Tool) -> Any:
            log.asked.append(name)
            return verdict

        def __repr__(self) -> str:
            return name

    return Logged()


def test_permission_order_and_decisions() -> None:
    log = Log()
    perms = (
        logging_permission(DecidePermission, "allow1", log, None),
        logging_permission(DenyPermission, "deny1", log, None),
        logging_permission(DecidePermission, "decide", log, None),
        logging_permission(DenyPermission, "deny2", log, None),
        logging_permission(DecidePermission, "allow2", log, Allowed()),
    )
    state = turn(call("ok"))
    use_tools(state, ok, permissions=perms)
    assert log.asked == ["deny1", "deny2", "allow1", "decide", "allow2"]
    assert result_of(state, "ok").content == "fine"


def test_permission_refusals() -> None:
    class Raising(DenyPermission):
        def check(self, state: State, call: ToolCall, tool: Tool) -> Any:
            if call.name == "boom":
                raise ToolError("not today")
            return None

    recorder = Recorder()
    store = SaveLog()
    state = turn(call("bash", command="ls"), call("ok"), call("boom"), call("serial"))

    @tool
    def bash(command: str) -> str:
        return command

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        use_tools(
            state,
            bash,
            ok,
            boom,
            serial,
            reporter=recorder,
            store=store,
            permissions=(Raising(), AllowByName(["ok"]), DenyByName(["bash"])),
        )
    assert [str(w.message) for w in caught if issubclass(w.category, PermissionWarning)] == [
        "No permission allowed or denied the call to serial, so it was denied. To allow every call no permission "
        "denies, put AllowByDefault() at the end of permissions="
    ]
    by_name = {e.call.name: e for e in results(state)}
    assert (by_name["bash"].content, by_name["bash"].outcome) == ("bash is not allowed.", K.DENIED)
    assert (by_name["boom"].content, by_name["boom"].outcome) == ("not today", K.DENIED)
    assert isinstance(by_name["boom"].error, ToolError)
    assert by_name["serial"].content == "No permission allowed this call."
    assert by_name["ok"].content == "fine"
    ends = recorder.ends()
    assert ends["bash"][1] == ToolOutcome(K.DENIED, None, "DenyByName(['bash'])")
    assert ends["boom"][1] == ToolOutcome(K.DENIED, by_name["boom"].error, "Raising()")
    assert ends["serial"][1] == ToolOutcome(K.DENIED)
    assert recorder.names() == [
        ("end", "bash"),
        ("end", "boom"),
        ("end", "serial"),
        ("start", "ok"),
        ("end", "ok"),
    ]
    assert len(store.saves) == 2  # after the phase, then after the batch
    assert store.saves[0] == len(state.history) - 1


def test_permission_stop_closes_the_turn() -> None:
    ran: list[str] = []

    @tool
    def write(path: str) -> str:
        ran.append(path)
        return "written"

    recorder = Recorder()
    stopper = logging_permission(DenyPermission, "Stopper()", Log(), None)

    class Stopper(DecidePermission):
        def check(self, state: State, call: ToolCall, tool: Tool) -> Any:
            if call.args.get("path") == "b":
                return Denied("no b", stop=True)
            return Allowed()

    del stopper
    state = turn(call("nope"), call("write", 1, path="a"), call("write", 2, path="b"), call("write", 3, path="c"))
    use_tools(state, write, reporter=recorder, permissions=(Stopper(),))
    assert ran == []
    assert [(e.call.id, e.content, e.outcome) for e in results(state)] == [
        ("c_nope", "(input error: unknown tool 'nope'. Available tools: write)", K.INPUT_ERROR),
        ("c_write_2", "no b", K.DENIED),
        ("c_write_1", "(not run: the user stopped this turn)", K.CANCELLED),
        ("c_write_3", "(not run: the user stopped this turn)", K.CANCELLED),
    ]
    assert state.stopped is not None and state.stopped.permission == "Stopper()"
    outcomes = [(e[1], e[3]) for e in recorder.events if e[0] == "end"][1:]
    assert [o.kind for _, o in outcomes] == [K.DENIED, K.CANCELLED, K.CANCELLED]
    assert all(o.decided_by == "Stopper()" for _, o in outcomes)


def test_permission_exception_is_recorded_and_raised() -> None:
    class Broken(DenyPermission):
        def check(self, state: State, call: ToolCall, tool: Tool) -> Any:
            raise RuntimeError("broken")

    class WrongVerdict(AllowPermission_):
        pass

    state = turn(call("ok"), call("serial"))
    with pytest.raises(RuntimeError) as info:
        use_tools(state, ok, serial, permissions=(Broken(),))
    assert "exception raised in permission Broken() checking ok()" in info.value.__notes__
    assert errors(state)[-1].error is info.value and errors(state)[-1].call == call("ok")
    assert len(state.pending_calls) == 2

    state = turn(call("ok"))
    with pytest.raises(TypeError, match="may return only") as bad:
        use_tools(state, ok, permissions=(WrongVerdict(),))
    assert errors(state)[-1].error is bad.value
    assert not getattr(bad.value, "__notes__", [])


class AllowPermission_(DecidePermission):
    def check(self, state: State, call: ToolCall, tool: Tool) -> Any:
        return True


def test_async_permission_phase() -> None:
    class Async(DecidePermission):
        async def acheck(self, state: State, call: ToolCall, tool: Tool) -> Any:
            return Allowed() if call.name == "ok" else Denied("async no")

    state = turn(call("ok"), call("serial"))
    asyncio.run(_runner.arun_tool_calls(state, tool_map(ok, serial), context(permissions=(Async(), AllowByDefault()))))
    assert {e.call.name: e.content for e in results(state)} == {"ok": "fine", "serial": "async no"}


def test_empty_permission_list_refuses_everything() -> None:
    state = turn(call("ok"))
    with pytest.warns(PermissionWarning):
        use_tools(state, ok, permissions=())
    assert result_of(state, "ok").content == "No permission allowed this call."


# --- the same checks through whole Agent runs ----------------------------------------------------------------


def make_agent(replies: list[Any], *tools: Any, **settings: Any) -> tuple[Agent, FakeModel]:
    fake = FakeModel(replies)
    settings.setdefault("reporter", None)
    settings.setdefault("human", None)
    return Agent(fake, tools=list(tools), **settings), fake


def last_results(fake: FakeModel) -> list[Any]:
    """The tool results the model received in its latest request."""
    return [b.content for b in fake.requests[-1].messages[-1].content]


def test_in_a_run_defaults_fill_in_and_the_state_is_injected() -> None:
    seen: list[State] = []

    @tool
    def add(a: int, b: int = 10) -> int:
        return a + b

    @tool
    def peek(msg: str, ctx: State) -> str:
        seen.append(ctx)
        return msg

    agent, fake = make_agent([[tool_call("add", a=5), tool_call("peek", msg="hi")], "done"], add, peek)
    state = State(messages=[Message.user("go")])
    assert agent.run(state) == "done"
    assert last_results(fake) == ["15", "hi"]
    assert seen[0] is state


def test_in_a_run_input_and_tool_errors_are_results() -> None:
    called: list[int] = []

    @tool
    def strict(n: int) -> int:
        called.append(n)
        return n

    @tool
    def nope() -> str:
        raise ToolError("nope")

    class Ticket(Tool):
        def __init__(self) -> None:
            super().__init__(name="create_ticket")

        def run(self, args: dict[str, Any], state: State) -> Any:
            raise ToolInputError("title is required")

    recorder = Recorder()
    agent, fake = make_agent(
        [[tool_call("strict", n="not a number"), tool_call("nope"), tool_call("create_ticket")], "answer"],
        strict,
        nope,
        Ticket(),
        reporter=recorder,
    )
    state = State(messages=[Message.user("go")])
    assert agent.run(state) == "answer"
    assert called == []
    by_name = {e.call.name: e for e in results(state)}
    assert by_name["strict"].content.startswith("(input error:") and by_name["strict"].error is None
    assert by_name["strict"].outcome is K.INPUT_ERROR
    assert (by_name["nope"].content, by_name["nope"].outcome) == ("nope", K.ERROR)
    assert isinstance(by_name["nope"].error, ToolError)
    assert by_name["create_ticket"].content == "(input error: title is required)"
    assert by_name["create_ticket"].outcome is K.INPUT_ERROR
    assert errors(state) == []
    assert recorder.ends()["nope"][1].kind == "error"


def test_in_a_run_handlers_turn_exceptions_into_results() -> None:
    @tool(exception_handler=http_errors)
    def fetch(url: str) -> str:
        if url == "u":
            raise NotFound("404 u")
        raise KeyError("bug")

    agent, fake = make_agent([tool_call("fetch", url="u"), "ok"], fetch)
    state = State(messages=[Message.user("go")])
    agent.run(state)
    entry = result_of(state, "fetch")
    assert entry.content == "request failed: 404 u" and isinstance(entry.error.__cause__, NotFound)

    agent, fake = make_agent([tool_call("fetch", url="other"), "ok"], fetch)
    state = State(messages=[Message.user("go")])
    with pytest.raises(KeyError):
        agent.run(state)
    assert result_of(state, "fetch").content == "(aborted: KeyError)"

    agent, fake = make_agent([tool_call("fetch", url="u"), "ok"], fetch.copy(exception_handler=None))
    state = State(messages=[Message.user("go")])
    with pytest.raises(NotFound):
        agent.run(state)
    assert result_of(state, "fetch").content == "(aborted: NotFound)"


def test_in_a_run_the_agent_refuses_bad_tools_and_binds_objects() -> None:
    class NoInit(Tool):
        def __init__(self) -> None:
            pass

        def run(self, args: dict[str, Any], state: State) -> Any:
            return None

    class Ticket(Tool):
        def __init__(self) -> None:
            super().__init__(name="create_ticket")

    def plain_function(x: int) -> None: ...

    for items, words in [
        ([NoInit()], "did not call Tool.__init__"),
        ([Ticket()], "does not implement run"),
        ([Ticket], "got the class Ticket"),
        ([Calc.add], "unbound method tool"),
        ([plain_function], "does not have @tool"),
        ([object()], "has no methods with @tool"),
    ]:
        with pytest.raises(TypeError, match=words):
            Agent(FakeModel([]), tools=items)
    with pytest.raises(ValueError, match="Duplicate tool name 'add'"):
        Agent(FakeModel([]), tools=[Calc(), Calc()])

    calc = Calc()
    agent, fake = make_agent([[tool_call("add", a=1, b=2), tool_call("sub", a=3, b=1)], "ok"], calc)
    agent.run("go")
    assert last_results(fake) == ["3", "2"]
    agent, fake = make_agent([tool_call("sub", a=3, b=1), "ok"], calc.add)
    agent.run("go")
    assert last_results(fake) == ["(input error: unknown tool 'sub'. Available tools: add)"]


def test_in_a_run_unknown_tools_and_unreadable_arguments_are_input_errors() -> None:
    agent, fake = make_agent([[tool_call("nope"), ToolCall("nope2", {INVALID_ARGS_KEY: '{"title": '}, "c9")], "ok"])
    agent.run("go")
    assert last_results(fake) == [
        "(input error: unknown tool 'nope'. Available tools: (none))",
        "(input error: unknown tool 'nope2'. Available tools: (none))",
    ]
    ran: list[Any] = []

    class Ticket(Tool):
        def __init__(self) -> None:
            super().__init__(name="create_ticket")

        def run(self, args: dict[str, Any], state: State) -> Any:
            ran.append(args)

    agent, fake = make_agent([ToolCall("create_ticket", {INVALID_ARGS_KEY: '{"title": '}, "c1"), "ok"], Ticket())
    agent.run("go")
    assert last_results(fake) == ['(input error: arguments are not valid JSON: {"title": )']
    assert ran == []


def test_in_a_run_parallel_then_serial_and_results_in_request_order() -> None:
    stamps: dict[str, float] = {}

    together = threading.Barrier(2, timeout=30)  # only calls that run at the same time both get past it

    @tool
    def slow(state: State) -> str:
        together.wait()
        wait_for(lambda: any(e.kind == "tool_result" for e in state.history))
        stamps["slow"] = time.monotonic()
        return "slow"

    @tool
    def fast() -> str:
        together.wait()
        stamps["fast"] = time.monotonic()
        return "fast"

    @tool(parallel=False)
    def last() -> str:
        stamps["last"] = time.monotonic()
        return "last"

    agent, fake = make_agent([[tool_call("last"), tool_call("slow"), tool_call("fast")], "ok"], slow, fast, last)
    state = State(messages=[Message.user("go")])
    agent.run(state)
    assert not together.broken, "the parallel calls did not run together"
    assert stamps["last"] >= max(stamps["slow"], stamps["fast"])
    assert [e.call.name for e in results(state)] == ["fast", "slow", "last"]
    assert last_results(fake) == ["last", "slow", "fast"]


def test_in_a_run_argument_copies_failures_and_interrupts() -> None:
    @tool
    def mutate(items: list[int]) -> str:
        items.append(1)
        return str(items)

    agent, fake = make_agent(
        [[tool_call("mutate", items=[0]), tool_call("mutate", items=[0])], "ok"],
        mutate,
        permissions=[AllowByDefault()],
    )
    state = State(messages=[Message.user("go")])
    agent.run(state)
    assert last_results(fake) == ["[0, 1]", "[0, 1]"]
    assert all(e.call.args == {"items": [0]} for e in results(state))

    @tool
    def boom_late(state: State) -> str:
        wait_for(lambda: any(e.kind == "tool_result" for e in state.history))
        raise RuntimeError("kaput")

    recorder = Recorder()
    agent, fake = make_agent(
        [[tool_call("boom_late"), tool_call("ok"), tool_call("serial")], "never"],
        boom_late,
        ok,
        serial,
        reporter=recorder,
    )
    state = State(messages=[Message.user("go")])
    with pytest.raises(RuntimeError) as info:
        agent.run(state)
    assert "exception raised in tool boom_late()" in info.value.__notes__
    assert ("start", "serial") not in recorder.names()
    assert {e.call.name: e.content for e in results(state)} == {
        "ok": "fine",
        "boom_late": "(aborted: RuntimeError)",
        "serial": "(aborted: RuntimeError)",
    }
    assert len([e for e in errors(state) if e.error is info.value]) == 1

    @tool
    def interrupt() -> str:
        raise KeyboardInterrupt

    agent, fake = make_agent([[tool_call("interrupt"), tool_call("serial")], "never"], interrupt, serial)
    state = State(messages=[Message.user("go")])
    with pytest.raises(KeyboardInterrupt):
        agent.run(state)
    assert [(e.content, e.outcome) for e in results(state)] == [("(interrupted by user)", K.INTERRUPTED)] * 2


def test_in_arun_async_tools_run_on_the_loop_and_late_results_arrive() -> None:
    release = threading.Event()
    where: dict[str, Any] = {}

    @tool
    def slow_sync() -> str:
        where["sync"] = (threading.get_ident(), VAR.get())
        release.wait(5)
        return "exit 0"

    @tool
    async def waits() -> str:
        where["async"] = threading.get_ident()
        await asyncio.sleep(10)
        return "never"

    recorder = Recorder()
    agent, fake = make_agent(
        [[tool_call("slow_sync"), tool_call("waits")], "after"], slow_sync, waits, reporter=recorder
    )
    state = State(messages=[Message.user("go")])

    async def main() -> None:
        VAR.set("before")
        where["loop"] = threading.get_ident()
        task = asyncio.ensure_future(agent.arun(state))
        await until(lambda: "async" in where and "sync" in where)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert where["async"] == where["loop"] and where["sync"] == (where["sync"][0], "before")
    assert where["sync"][0] != where["loop"]
    assert [(e.call.name, e.content) for e in results(state)] == [
        ("slow_sync", "(interrupted by user)"),
        ("waits", "(interrupted by user)"),
    ]
    release.set()
    wait_for(lambda: any(e.late for e in results(state)))
    late = [e for e in results(state) if e.late]
    assert len(late) == 1 and late[0].content == "exit 0"
    state.add_message(Message.user("and now?"))
    agent.run(state)
    texts = [m.text for m in fake.requests[-1].messages]
    assert any("finished later" in t and "exit 0" in t for t in texts)


def test_interrupt_cancels_calls_waiting_for_a_slot() -> None:
    release = threading.Event()
    lock = threading.Lock()
    started: list[int] = []

    @tool
    def hold(i: int) -> int:
        with lock:
            started.append(i)
            if len(started) == 32:
                threading.Timer(0.05, _thread.interrupt_main).start()
        release.wait(5)
        return i

    recorder = Recorder()
    state = turn(*[call("hold", i, i=i) for i in range(34)])
    with pytest.raises(KeyboardInterrupt) as info:
        use_tools(state, hold, reporter=recorder)
    assert sorted(started) == list(range(32))
    ends = [e for e in recorder.events if e[0] == "end"]
    assert len(ends) == 34 and all(e[2] == "(interrupted by user)" for e in ends)
    state._close_pending(info.value)
    release.set()
    wait_for(lambda: len([e for e in results(state) if e.late]) == 32)
    time.sleep(0.05)  # a grace period: the two calls that waited for a slot must never start
    assert sorted(started) == list(range(32))  # the two waiting calls never ran
    assert sorted(int(e.content) for e in results(state) if e.late) == list(range(32))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_forked_child_does_not_reuse_the_parents_workers() -> None:
    import os
    import signal

    use_tools(turn(call("ok")), ok)  # leaves a parked worker in this process
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        signal.alarm(10)
        state = turn(call("ok"))
        try:
            use_tools(state, ok)
            os._exit(0 if result_of(state, "ok").content == "fine" else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_approval_is_saved_before_the_approved_tool_runs(tmp_path: Any) -> None:
    from alpineagents.permissions import DecideByHuman
    from alpineagents.store import FileStore
    from alpineagents.testing import FakeHuman

    store = FileStore(tmp_path)
    on_disk: list[list[str]] = []

    @tool
    def deploy(state: State) -> str:
        on_disk.append([e.kind for e in FileStore(tmp_path).load(state.id).history])
        return "deployed"

    agent, fake = make_agent(
        [tool_call("deploy"), "done"],
        deploy,
        permissions=[DecideByHuman(FakeHuman(["yes"]))],
        store=store,
    )
    state = State(messages=[Message.user("ship it")])
    assert agent.run(state) == "done"
    # What the store holds while the tool runs: the approval (loading adds the closing entry of the open call).
    assert on_disk[0][-2:] == ["human", "tool_result"], on_disk
    assert result_of(state, "deploy").content == "deployed"


def test_async_stop_and_refusals_match_the_sync_phase() -> None:
    class Stopper(DecidePermission):
        def check(self, state: State, call: ToolCall, tool: Tool) -> Any:
            if call.name == "serial":
                return Denied("stop here", stop=True)
            return Allowed()

    def once(use_async: bool) -> tuple[list[Any], list[Any], Any]:
        recorder = Recorder()
        state = turn(call("ok"), call("serial"), call("boom"))
        tools = tool_map(ok, serial, boom)
        ctx = context(recorder, permissions=(Stopper(),))
        if use_async:
            asyncio.run(_runner.arun_tool_calls(state, tools, ctx))
        else:
            _runner.run_tool_calls(state, tools, ctx)
        return (
            [(e.call.name, e.content, e.outcome) for e in results(state)],
            [(e[0], e[1]) for e in recorder.events],
            str(state.stopped),
        )

    sync = once(False)
    assert sync == once(True)
    assert sync[0] == [
        ("serial", "stop here", K.DENIED),
        ("ok", "(not run: the user stopped this turn)", K.CANCELLED),
        ("boom", "(not run: the user stopped this turn)", K.CANCELLED),
    ]
    assert sync[1] == [("end", "serial"), ("end", "ok"), ("end", "boom")]
    assert sync[2] == "stopped by permission Stopper()"


class BreaksOnEnd(Recorder):
    """A Reporter whose `on_tool_end` for `first` lets the sibling go on, then raises."""

    def __init__(self, go: threading.Event) -> None:
        super().__init__()
        self.go = go

    def on_tool_end(self, state: State, call: ToolCall, result: Any, outcome: ToolOutcome) -> None:
        super().on_tool_end(state, call, result, outcome)
        if call.name == "first":
            self.go.set()
            raise RuntimeError("reporter broke")


@pytest.mark.parametrize("driver", ["sync", "async thread", "async task"])
def test_a_reporter_raising_in_on_tool_end_keeps_the_results_of_the_other_calls(driver: str) -> None:
    go = threading.Event()

    @tool
    def first() -> str:
        return "first done"

    @tool
    def sibling() -> str:
        assert go.wait(5)
        time.sleep(0.05)  # end after the Reporter raised: a runner that stops waiting then loses this result
        return "sibling done"

    @tool(name="sibling")
    async def async_sibling() -> str:
        await asyncio.get_running_loop().run_in_executor(None, go.wait, 5)
        await asyncio.sleep(0.05)  # end after the Reporter raised, as above
        return "sibling done"

    @tool(parallel=False)
    def serial() -> str:
        return "never"

    reporter = BreaksOnEnd(go)
    state = turn(call("first"), call("sibling"), call("serial"))
    tools = tool_map(first, async_sibling if driver == "async task" else sibling, serial)
    with pytest.raises(RuntimeError, match="reporter broke"):
        if driver == "sync":
            _runner.run_tool_calls(state, tools, context(reporter))
        else:
            asyncio.run(_runner.arun_tool_calls(state, tools, context(reporter)))
    assert [(e.call.name, e.content, e.outcome, e.late) for e in results(state)] == [
        ("first", "first done", K.DONE, False),
        ("sibling", "sibling done", K.DONE, False),
    ]
    assert [c.name for c in state.pending_calls] == ["serial"]
    assert reporter.ends()["sibling"] == ("sibling done", ToolOutcome(K.DONE))
    assert ("start", "serial") not in reporter.names()


def test_a_reporter_raising_in_on_tool_start_keeps_the_started_calls_and_starts_no_more() -> None:
    go = threading.Event()

    class BreaksOnStart(Recorder):
        def on_tool_start(self, state: State, call: ToolCall) -> None:
            super().on_tool_start(state, call)
            if call.name == "second":
                go.set()
                raise RuntimeError("reporter broke")

    @tool
    def first() -> str:
        assert go.wait(5)
        return "first done"

    @tool
    def second() -> str:
        return "never"

    reporter = BreaksOnStart()
    state = turn(call("first"), call("second"))
    with pytest.raises(RuntimeError, match="reporter broke"):
        use_tools(state, first, second, reporter=reporter)
    assert [(e.call.name, e.content, e.late) for e in results(state)] == [("first", "first done", False)]
    assert [c.name for c in state.pending_calls] == ["second"]
    assert [name for kind, name in reporter.names() if kind == "end"] == ["first"]
