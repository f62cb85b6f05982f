"""The Reporter role: nine hooks that observe a run.

``Reporter()`` is valid and does nothing; subclasses override only what they need. A Reporter only observes:
it must not change the State or the flow. Exceptions it raises propagate from the call site. Methods are always
called synchronously, possibly from several threads at once (subagents, parallel runs): implementations must be
thread-safe. Subagent runs report with the subagent's State (``state.parent_id`` tells them apart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alpineagents.state import State
    from alpineagents.types import ContextChange, ModelEvent, Reply, ToolCall, ToolOutcome, ToolResultContent

__all__ = ["Reporter"]

METHODS: tuple[str, ...] = (
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
"""The nine hook names in declaration order (the order in which a refused ``reporter=`` lists missing methods)."""


class Reporter:
    """Receives progress events of runs. Every method does nothing by default."""

    def on_run_start(self, state: State) -> None:
        """A run started: after the run-start checks, the ``run_start`` entry and the first save."""

    def on_think_start(self, state: State) -> None:
        """Right before each model request of ``think`` (``state.turn`` is this turn) and of ``ask``."""

    def on_text(self, state: State, chunk: str) -> None:
        """A piece of model text as it streams in."""

    def on_think_end(self, state: State, reply: Reply) -> None:
        """A reply arrived (``think``: after it is recorded). Not called when the request failed."""

    def on_tool_start(self, state: State, call: ToolCall) -> None:
        """Right before a tool runs, and before an input-error call's result is recorded."""

    def on_tool_end(self, state: State, call: ToolCall, result: ToolResultContent, outcome: ToolOutcome) -> None:
        """A call ended and its result was recorded. ``result`` is what the model receives; ``outcome`` how it
        ended (refused and cancelled calls come without ``on_tool_start``)."""

    def on_context_change(self, state: State, change: ContextChange) -> None:
        """The messages changed by a compaction, ``clear_tool_results`` or ``restore``."""

    def on_model_event(self, state: State, event: ModelEvent) -> None:
        """The Model reported an event (recorded as a ``model_event`` entry first)."""

    def on_run_end(self, state: State, error: BaseException | None) -> None:
        """A run ended, always, once per started run. ``error`` is the exception that ended it, or ``None``."""
