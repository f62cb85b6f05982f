"""How a tool call closed by an exception reads: its result text and its outcome.

A call closed by Ctrl+C or cancellation reads ``(interrupted by user)``; one closed by any other exception reads
``(aborted: Type)``. Shared by ``alpineagents.state`` (a run closes its pending calls) and ``alpineagents._runner``
(``on_tool_end`` of a call that raised or was interrupted).
"""

from __future__ import annotations

import asyncio

from alpineagents.types import ToolOutcome, ToolOutcomeKind

__all__ = ["UNSAVED_RESULT", "INTERRUPTED", "STOPPED_TURN", "is_interrupt", "closed_result", "closed_outcome"]

UNSAVED_RESULT = (
    "(unknown: the run stopped before this result was saved, so the tool may or may not have run. "
    "Check whether it took effect before relying on it or running it again)"
)
"""The result text of a call that was running when its process died (given when its State is loaded)."""

INTERRUPTED = "(interrupted by user)"
"""The result text of a call closed by Ctrl+C or cancellation."""

STOPPED_TURN = "(not run: the user stopped this turn)"
"""The result text of a call cancelled because another call of its turn was denied with ``stop=True``."""


def is_interrupt(error: BaseException) -> bool:
    """Whether ``error`` is an interrupt: ``KeyboardInterrupt`` or ``asyncio.CancelledError``."""
    return isinstance(error, (KeyboardInterrupt, asyncio.CancelledError))


def closed_result(error: BaseException) -> str:
    """The result text of a call closed by ``error``: ``INTERRUPTED`` for an interrupt, else ``(aborted: Type)``."""
    return INTERRUPTED if is_interrupt(error) else f"(aborted: {type(error).__name__})"


def closed_outcome(error: BaseException) -> ToolOutcome:
    """The outcome of a call closed by ``error``: ``INTERRUPTED`` for an interrupt, else ``ABORTED``."""
    kind = ToolOutcomeKind.INTERRUPTED if is_interrupt(error) else ToolOutcomeKind.ABORTED
    return ToolOutcome(kind, error)
