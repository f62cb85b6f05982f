"""Reporter role: the nine hooks, defaults, and the events a run produces."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

import pytest

from alpineagents import reporter as reporter_module
from alpineagents.agent import Agent
from alpineagents.errors import ToolError, ToolInputError
from alpineagents.permissions import AllowByDefault, DenyByName
from alpineagents.reporter import METHODS, Reporter
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import (
    INVALID_ARGS_KEY,
    ContextChange,
    Message,
    ModelEvent,
    Reply,
    ToolCall,
    ToolOutcome,
    ToolOutcomeKind,
    Usage,
)
from conftest import task


def test_exports_and_method_order():
    assert reporter_module.__all__ == ["Reporter"]
    assert METHODS == (
        "on_run_start",
        "on_think_start",
        "on_text",
        "on_think_end",
        "on_tool_start",
        "on_tool_end",
        "on_context_change",
        "on_model_event",
        "on_run_end",
    )
    declared = [name for name in vars(Reporter) if name.startswith("on_")]
    assert declared == list(METHODS)


def test_the_nine_hooks_take_the_documented_parameters():
    expected = {
        "on_run_start": ["self", "state"],
        "on_think_start": ["self", "state"],
        "on_text": ["self", "state", "chunk"],
        "on_think_end": ["self", "state", "reply"],
        "on_tool_start": ["self", "state", "call"],
        "on_tool_end": ["self", "state", "call", "result", "outcome"],
        "on_context_change": ["self", "state", "change"],
        "on_model_event": ["self", "state", "event"],
        "on_run_end": ["self", "state", "error"],
    }
    for name, params in expected.items():
        method = getattr(Reporter, name)
        assert list(inspect.signature(method).parameters) == params
        assert not inspect.iscoroutinefunction(method)


def test_plain_reporter_does_nothing():
    r = Reporter()
    state: Any = object()
    c = ToolCall("a", {}, "c1")
    assert r.on_run_start(state) is None
    assert r.on_think_start(state) is None
    assert r.on_text(state, "x") is None
    assert r.on_think_end(state, Reply(message=Message.assistant("x"), usage=Usage())) is None
    assert r.on_tool_start(state, c) is None
    assert r.on_tool_end(state, c, "ok", ToolOutcome("done")) is None
    assert r.on_context_change(state, ContextChange("compact", 10, 5)) is None
    assert r.on_model_event(state, ModelEvent("retry", "again")) is None
    assert r.on_run_end(state, None) is None


def test_subclass_overrides_only_what_it_needs():
    seen: list[str] = []

    class Texts(Reporter):
        def on_text(self, state: Any, chunk: str) -> None:
            seen.append(chunk)

    r = Texts()
    r.on_text(None, "hi")
    r.on_run_end(None, None)
    assert seen == ["hi"]
    with pytest.raises(TypeError):
        Reporter(1)  # type: ignore[call-arg]


# --- events of real runs ----------------------------------------------------------------


class Log(Reporter):
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.threads: set[int] = set()

    def _add(self, *event: Any) -> None:
        self.events.append(event)
        self.threads.add(threading.get_ident())

    def on_run_start(self, state: Any) -> None:
        self._add("run_start")

    def on_think_start(self, state: Any) -> None:
        self._add("think_start", state.turn)

    def on_text(self, state: Any, chunk: str) -> None:
        self._add("text", chunk)

    def on_think_end(self, state: Any, reply: Any) -> None:
        self._add("think_end")

    def on_tool_start(self, state: Any, call: Any) -> None:
        self._add("tool_start", call.name)

    def on_tool_end(self, state: Any, call: Any, result: Any, outcome: Any) -> None:
        self._add("tool_end", call.name, result, outcome.kind)

    def on_context_change(self, state: Any, change: Any) -> None:
        self._add("context_change", change.kind)

    def on_model_event(self, state: Any, event: Any) -> None:
        self._add("model_event", event.kind)

    def on_run_end(self, state: Any, error: Any) -> None:
        self._add("run_end", error, state.stopped)


@tool
def ok() -> str:
    """Fine."""
    return "fine"


@tool
def fails() -> str:
    """Fails for the model."""
    raise ToolError("nope")


@tool
def bad_input() -> str:
    """Bad input."""
    raise ToolInputError("wrong")


@tool(parallel=False)
def serial() -> str:
    """Runs alone."""
    return "serial"


@tool
def crash() -> str:
    """Crashes."""
    raise TimeoutError("took too long")


def test_events_of_a_default_run():
    log = Log()
    agent = Agent(FakeModel([tool_call("ok"), "All done"]), tools=[ok], reporter=log, human=None)
    assert agent.run("Task") == "All done"
    assert [event[0] for event in log.events] == [
        "run_start",
        "think_start",
        "think_end",
        "tool_start",
        "tool_end",
        "think_start",
        "text",
        "think_end",
        "run_end",
    ]
    assert log.events[1] == ("think_start", 1)
    assert log.events[5] == ("think_start", 2)
    assert log.events[6] == ("text", "All done")
    assert log.events[4] == ("tool_end", "ok", "fine", ToolOutcomeKind.DONE)
    assert log.events[-1][1] is None


def test_order_of_tool_events_in_a_turn():
    log = Log()
    calls = [
        tool_call("serial"),
        tool_call("nope"),
        tool_call("ok"),
        tool_call("bash"),
        tool_call("fails"),
        tool_call("bad_input"),
        tool_call("ok", **{INVALID_ARGS_KEY: "{oops"}),
    ]
    agent = Agent(
        FakeModel([calls, "Done"]),
        tools=[ok, fails, bad_input, serial, tool(name="bash")(lambda: "x")],
        permissions=[DenyByName(["bash"]), AllowByDefault()],
        reporter=log,
        human=None,
    )
    agent.run("Task")
    tool_events = [event for event in log.events if event[0].startswith("tool_")]
    # input errors in request order (start then end each)
    assert [e[:2] for e in tool_events[:4]] == [
        ("tool_start", "nope"),
        ("tool_end", "nope"),
        ("tool_start", "ok"),
        ("tool_end", "ok"),
    ]
    assert tool_events[1][3] == ToolOutcomeKind.INPUT_ERROR
    assert tool_events[3][3] == ToolOutcomeKind.INPUT_ERROR
    # then the refusals, without a start
    assert tool_events[4] == ("tool_end", "bash", "bash is not allowed.", ToolOutcomeKind.DENIED)
    # then every start of the parallel group in request order, then their ends, then the serial call
    starts = [e[1] for e in tool_events[5:8]]
    assert starts == ["ok", "fails", "bad_input"]
    ends = {e[1]: e for e in tool_events[8:11]}
    assert ends["fails"][2:] == ("nope", ToolOutcomeKind.ERROR)
    assert ends["bad_input"][2:] == ("(input error: wrong)", ToolOutcomeKind.INPUT_ERROR)
    assert [e[:2] for e in tool_events[11:]] == [("tool_start", "serial"), ("tool_end", "serial")]


def test_every_start_gets_one_end_and_run_end_always():
    log = Log()
    agent = Agent(FakeModel([[tool_call("ok"), tool_call("crash")]]), tools=[ok, crash], reporter=log, human=None)
    state = task()
    with pytest.raises(TimeoutError):
        agent.run(state)
    starts = [e[1] for e in log.events if e[0] == "tool_start"]
    ends = [e[1] for e in log.events if e[0] == "tool_end"]
    assert sorted(starts) == sorted(ends) == ["crash", "ok"]
    crash_end = next(e for e in log.events if e[0] == "tool_end" and e[1] == "crash")
    assert crash_end[2:] == ("(aborted: TimeoutError)", ToolOutcomeKind.ABORTED)
    assert log.events[-1][0] == "run_end"
    assert isinstance(log.events[-1][1], TimeoutError)
    assert log.events[-1][2] is None


def test_reporter_exceptions_propagate_and_run_end_follows():
    class Broken(Log):
        def on_run_start(self, state: Any) -> None:
            super().on_run_start(state)
            raise RuntimeError("reporter broke")

    log = Broken()
    agent = Agent(FakeModel(["x"]), reporter=log, human=None)
    with pytest.raises(RuntimeError, match="reporter broke"):
        agent.run("Task")
    assert [e[0] for e in log.events] == ["run_start", "run_end"]
    assert isinstance(log.events[-1][1], RuntimeError)


def test_refused_runs_get_no_events():
    log = Log()
    agent = Agent(FakeModel(["x"]), reporter=log, human=None)
    state = task()
    state.finish("done")
    with pytest.raises(ValueError):
        agent.run(state)
    assert log.events == []


def test_context_change_goes_to_the_linked_agents_reporter():
    log = Log()
    state = task()
    assert log.events == []  # the import notifies nobody
    state.compact("summary")  # never linked: nobody
    agent = Agent(FakeModel(["Hi"]), reporter=log, human=None)
    agent.think(state)
    state.compact("shorter")
    assert ("context_change", "compact") in log.events


def test_events_are_delivered_synchronously_in_arun():
    log = Log()
    agent = Agent(FakeModel([tool_call("ok"), "Done"]), tools=[ok], reporter=log, human=None)

    async def main() -> tuple[Any, int]:
        return await agent.arun("Task"), threading.get_ident()

    answer, loop_thread = asyncio.run(main())
    assert answer == "Done"
    assert log.threads == {loop_thread}
