"""Calls whose effect is unknown, and the record of a tool's ``reconcile`` answer about them.

A call that was running when its process died is closed with ``UNSAVED_RESULT`` when its State is loaded (the
tool never runs twice on its own). When the tool declares ``reconcile``, the next run asks it about each such call
and records, without a new kind of entry (so the saved format stays the same):

- per call, the answer: a ``"human"`` exchange (who was asked what, and what came back; it never changes the
  context) whose answer is marked with ``RECONCILE_KEY`` = ``"happened"``, ``"not_happened"`` or
  ``"cannot_tell"``;
- then a ``restore`` context change back to the history length just before the unknown results, which makes the
  calls pending again (the model has not read the unknown results: no request was made since);
- then the result of each call that happened, the unknown result again for a call whose tool cannot reconcile,
  and the messages and data recorded after the unknown results. A call that did not happen stays pending and
  runs; one nobody can tell waits for a person (``_history.approvals``).

The fold needs nothing new: each of these entries already has its rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from alpineagents import types as types_module
from alpineagents._history.closing import UNSAVED_RESULT
from alpineagents._history.fold import Accumulator
from alpineagents.types import (
    ContextChange,
    ContextChangeEntry,
    Exchange,
    ExchangeEntry,
    ExtraDataEntry,
    HistoryEntry,
    MessageEntry,
    ModelReplyEntry,
    RunStartEntry,
    ToolCall,
    ToolOutcomeKind,
    ToolResultContent,
    ToolResultEntry,
)

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = ["RECONCILE_KEY", "VERDICTS", "Unknown", "unknown_calls", "record_reconciled", "effect_marks"]

RECONCILE_KEY = "alpineagents_reconcile"
"""The key that marks a ``"human"`` exchange as the record of a ``reconcile`` answer."""

VERDICTS = ("happened", "not_happened", "cannot_tell")
"""The answers a record may hold."""

_KEPT = (MessageEntry, ExtraDataEntry)
"""Entries recorded after the unknown results that are recorded again after the calls are reopened."""


@dataclass(slots=True)
class Unknown:
    """The calls of the latest reply closed as unknown, not yet reconciled."""

    first: int
    """The history length just before the first unknown result."""
    calls: tuple[ToolCall, ...]
    """The calls closed as unknown, in the order of their results."""
    tail: tuple[HistoryEntry, ...]
    """The messages and data recorded after the unknown results (recorded again after the reopening)."""


def _is_unknown(entry: HistoryEntry) -> TypeGuard[ToolResultEntry]:
    return type(entry) is ToolResultEntry and entry.content == UNSAVED_RESULT and not entry.late


def unknown_calls(acc: Accumulator) -> Unknown | None:
    """The unknown calls that end the latest turn: the results ``State`` loading gave, followed only by messages,
    data and run starts. ``None`` when there are none, or they were reconciled already, or the run went on after
    them (the model then read them, and they stay as they are). Reads only the entries since the latest reply."""
    history = acc.history
    calls: list[ToolCall] = []
    first = -1
    tail: list[HistoryEntry] = []
    for index in range(acc.history_len - 1, -1, -1):
        entry = history[index]
        kind = type(entry)
        if kind is ModelReplyEntry:
            break
        if _is_unknown(entry):
            calls.append(entry.call)  # type: ignore[union-attr]
            first = index
        elif calls:
            break  # the results saved before the process died
        elif isinstance(entry, _KEPT):
            tail.append(entry)
        elif kind is not RunStartEntry:
            return None  # a reconcile record, a request, a stop...: not a turn left open by a crash
    if not calls:
        return None
    return Unknown(first, tuple(reversed(calls)), tuple(reversed(tail)))


def _question(call: ToolCall) -> str:
    return f"Did the effect of {types_module.format_call(call)} take place?"


def record_reconciled(
    state: State, unknown: Unknown, verdicts: Mapping[str, str], results: Mapping[str, ToolResultContent]
) -> None:
    """Record the ``reconcile`` answers (``verdicts`` by call id; ``results`` holds the result of each call that
    happened), reopen the unknown calls and give back every result that is known, in one step under the lock."""
    with state._lock:
        acc = state._acc
        if unknown_calls(acc) != unknown:
            return  # recorded meanwhile
        now = types_module._now()
        for call in unknown.calls:
            verdict = verdicts.get(call.id)
            if verdict is not None:
                answer = {RECONCILE_KEY: verdict, "call_id": call.id, "tool": call.name}
                content = Exchange(_question(call), answer)
                state._commit_locked(ExchangeEntry(kind="human", content=content, turn=acc.turn, at=now))
        change = ContextChange("restore", before_tokens=0, after_tokens=0, restored_to=unknown.first)
        state._commit_locked(ContextChangeEntry(content=change, turn=acc.turn))
        for call in unknown.calls:
            verdict = verdicts.get(call.id)
            if verdict is None:  # its tool cannot reconcile: unknown it stays
                entry = ToolResultEntry(
                    content=UNSAVED_RESULT, call=call, outcome=ToolOutcomeKind.ABORTED, turn=acc.turn
                )
                state._commit_locked(entry)
            elif verdict == "happened":
                done = ToolResultEntry(content=results[call.id], call=call, outcome=ToolOutcomeKind.DONE, turn=acc.turn)
                state._commit_locked(done)
        for kept in unknown.tail:
            state._commit_locked(kept)


def effect_marks(history: Iterable[HistoryEntry]) -> dict[str, str]:
    """For each call of ``history`` whose effect was unknown: ``"unknown"`` (closed as unknown, not reconciled), or
    the ``reconcile`` answer recorded about it (``"happened"``, ``"not_happened"``, ``"cannot_tell"``)."""
    marks: dict[str, str] = {}
    for entry in history:
        if _is_unknown(entry):
            marks[entry.call.id] = "unknown"
        elif type(entry) is ExchangeEntry and entry.kind == "human":
            answer: Any = entry.content.answer
            if (
                hasattr(answer, "get")
                and answer.get(RECONCILE_KEY) in VERDICTS
                and isinstance(answer.get("call_id"), str)
            ):
                marks[answer["call_id"]] = answer[RECONCILE_KEY]
    return marks
