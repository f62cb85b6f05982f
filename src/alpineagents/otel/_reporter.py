"""The Reporter of a traced run: it turns the run's events into spans, then passes each one on unchanged to the
reporter the run would have had (``inner``), so a Terminal keeps printing.

Tracing never breaks a run: every tracing method the hooks call is ``guarded``, so an exception from the tracing
side is logged (once per method) and dropped. An exception from ``inner`` propagates as it would without tracing,
after the tracing side has seen the event.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from alpineagents.reporter import Reporter

if TYPE_CHECKING:
    from alpineagents._observe import ObservedAgent
    from alpineagents.otel._tracing import Tracing
    from alpineagents.state import State
    from alpineagents.types import ContextChange, ModelEvent, Reply, ToolCall, ToolOutcome, ToolResultContent

__all__ = ["TracingReporter", "guarded"]

_log = logging.getLogger("alpineagents.otel")
_logged: set[str] = set()


def _failed(hook: str) -> None:
    """Log a failure of the tracing side of ``hook`` (the first one of each hook, with its traceback)."""
    if hook in _logged:
        return
    _logged.add(hook)
    _log.warning("tracing failed in %s; the run goes on (later failures here are not logged)", hook, exc_info=True)


_F = TypeVar("_F", bound=Callable[..., None])


def guarded(method: _F) -> _F:
    """A tracing method that logs its failure instead of raising it into the run."""

    @functools.wraps(method)
    def call(*args: Any) -> None:
        try:
            method(*args)
        except Exception:  # noqa: BLE001 - tracing never breaks a run
            _failed(method.__name__)

    return call  # type: ignore[return-value]


class TracingReporter(Reporter):
    """Traces the events of one Agent's run (or call), then hands them to ``inner`` (may be ``None``)."""

    __slots__ = ("tracing", "agent", "inner")

    def __init__(self, tracing: Tracing, agent: ObservedAgent, inner: Reporter | None) -> None:
        self.tracing = tracing
        self.agent = agent
        self.inner = inner

    def __repr__(self) -> str:
        return f"TracingReporter({self.inner!r})"

    def _pass(self, hook: str, *args: object) -> None:
        """Hand the event to ``inner`` unchanged; an exception from it propagates as it would without tracing."""
        if self.inner is not None:
            getattr(self.inner, hook)(*args)

    def on_run_start(self, state: State) -> None:
        self.tracing.run_start(self.agent, state)
        self._pass("on_run_start", state)

    def on_think_start(self, state: State) -> None:
        self.tracing.think_start(self.agent, state)
        self._pass("on_think_start", state)

    def on_text(self, state: State, chunk: str) -> None:
        self._pass("on_text", state, chunk)

    def on_think_end(self, state: State, reply: Reply) -> None:
        self.tracing.think_end(state, reply)
        self._pass("on_think_end", state, reply)

    def on_tool_start(self, state: State, call: ToolCall) -> None:
        self.tracing.tool_start(state, call)
        self._pass("on_tool_start", state, call)

    def on_tool_end(self, state: State, call: ToolCall, result: ToolResultContent, outcome: ToolOutcome) -> None:
        self.tracing.tool_end(state, call, result, outcome)
        self._pass("on_tool_end", state, call, result, outcome)

    def on_context_change(self, state: State, change: ContextChange) -> None:
        self._pass("on_context_change", state, change)

    def on_model_event(self, state: State, event: ModelEvent) -> None:
        self.tracing.model_event(state, event)
        self._pass("on_model_event", state, event)

    def on_run_end(self, state: State, error: BaseException | None) -> None:
        self.tracing.run_end(state, error)
        self._pass("on_run_end", state, error)
