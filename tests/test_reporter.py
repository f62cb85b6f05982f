"""Reporter role (07 §3): the nine hooks, defaults, and the events a run produces."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from alpineagents import reporter as reporter_module
from alpineagents.reporter import METHODS, Reporter
from alpineagents.types import ContextChange, Message, ModelEvent, Reply, ToolCall, ToolOutcome, Usage


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


def test_signatures():
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
