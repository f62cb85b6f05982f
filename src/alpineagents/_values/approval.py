"""Approvals that wait: the values, and how their facts are written into history entries the saved format already has.

Import ``WaitingCall``, ``ApprovalDecision`` and ``StoppedForApproval`` from ``alpineagents.types``, which
re-exports them.

A permission that answers ``Deferred(...)`` makes its call wait for a person's decision. The facts of that wait are
kept in the history without a new kind of entry, so the saved format stays the same and every program written for
it reads such a State:

- the wait: an ``ExchangeEntry`` of kind ``"human"`` whose question is the question for a person and whose answer
  is a JSON object marked with ``APPROVAL_KEY`` = ``"waiting"`` (the call id, the tool, the permission, when it
  expires);
- the decision: another ``"human"`` exchange with the same question, marked ``"approved"`` or ``"denied"`` (who
  decided, the note, the reason the model reads, whether it came after the expiry);
- the stop: ``StoppedForApproval``, a ``StoppedByPermission`` saved under the same kind (``"permission"``) with one
  more key, ``"waiting"``, which an older reader ignores (it then reads a permission stop).

Human exchanges never change the context, so the model never reads these entries; they are the record of who was
asked what and who answered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from alpineagents._values.construct import as_tuples, value
from alpineagents._values.content import ToolCall

if TYPE_CHECKING:
    from alpineagents.types import ExchangeEntry, HistoryEntry

__all__ = [
    "APPROVAL_KEY",
    "WaitingCall",
    "ApprovalDecision",
    "StoppedForApproval",
    "waiting_answer",
    "decision_answer",
    "read_waiting",
    "waiting_call_id",
    "waiting_child_id",
    "children_named",
    "read_decision",
]

APPROVAL_KEY = "alpineagents_approval"
"""The key that marks a ``"human"`` exchange as an approval record; its value is ``"waiting"``, ``"approved"`` or
``"denied"``."""


@value(kw_only=True)
class WaitingCall:
    """A tool call that waits for a person's decision (an item of ``state.awaiting_approval``)."""

    call: ToolCall
    """The call that waits (its id is what ``state.approve``/``state.deny`` take)."""
    tool: str
    """The name of the tool it would run."""
    permission: str
    """The ``repr()`` of the permission that asked for the decision."""
    question: str
    """The question for a person."""
    path: tuple[str, ...]
    """The State ids from the top State down to the State whose call this is (one id: the State itself)."""
    asked_at: datetime
    """When the call started waiting (UTC)."""
    expires_at: datetime | None = None
    """After this moment an approval counts as a denial; ``None``: never."""

    if TYPE_CHECKING:  # the generated __init__ also takes a list for path

        def __init__(
            self,
            *,
            call: ToolCall,
            tool: str,
            permission: str,
            question: str,
            path: Iterable[str],
            asked_at: datetime,
            expires_at: datetime | None = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        as_tuples(self, "path")

    @property
    def state_id(self) -> str:
        """The id of the State whose call this is (the last id of ``path``)."""
        return self.path[-1]


@value(kw_only=True)
class ApprovalDecision:
    """A person's decision about a waiting call, as recorded in the history."""

    call_id: str
    """The id of the call decided."""
    approved: bool
    """True: the call runs. False: the model reads ``reason`` as the call's error result."""
    by: str | None = None
    """Who decided (free text, e.g. a user name), or ``None``."""
    note: str | None = None
    """A note kept with the decision, or ``None``."""
    reason: str | None = None
    """For a denial: what the model reads. ``None`` for an approval."""
    expired: bool = False
    """True when an approval came after the call's expiry and was recorded as a denial."""
    at: datetime
    """When the decision was recorded (UTC)."""


@value
class StoppedForApproval:
    """``state.stopped`` when calls of the turn wait for a person's decision (see ``state.awaiting_approval``).

    Saved as a permission stop (``StoppedByPermission``'s kind) plus the waiting calls, so that programs written
    for the same saved format read it as a permission stop. Like a permission stop it ends every enclosing loop,
    and the State is not finished.
    """

    call: ToolCall
    """The first call that waits."""
    permission: str
    """The ``repr()`` of the permission that asked about it."""
    calls: tuple[ToolCall, ...] = ()
    """Every call of this State that waits, in request order."""

    if TYPE_CHECKING:

        def __init__(self, call: ToolCall, permission: str, calls: Iterable[ToolCall] = ()) -> None: ...

    def __post_init__(self) -> None:
        as_tuples(self, "calls")

    def __str__(self) -> str:
        count = len(self.calls) or 1
        return f"waiting for approval of {count} call{'s' if count != 1 else ''}"


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def waiting_answer(call: ToolCall, tool: str, permission: str, expires_at: datetime | None) -> dict[str, Any]:
    """The answer of the exchange that records a call starting to wait."""
    return {
        APPROVAL_KEY: "waiting",
        "call_id": call.id,
        "tool": tool,
        "permission": permission,
        "expires_at": _iso(expires_at),
    }


def decision_answer(
    call_id: str, approved: bool, by: str | None, note: str | None, reason: str | None, expired: bool
) -> dict[str, Any]:
    """The answer of the exchange that records a decision."""
    return {
        APPROVAL_KEY: "approved" if approved else "denied",
        "call_id": call_id,
        "by": by,
        "note": note,
        "reason": reason,
        "expired": expired,
    }


def _marked(entry: ExchangeEntry) -> tuple[str, Any] | None:
    answer = entry.content.answer
    if entry.kind != "human" or not hasattr(answer, "get"):
        return None
    mark = answer.get(APPROVAL_KEY)
    if mark not in ("waiting", "approved", "denied") or not isinstance(answer.get("call_id"), str):
        return None
    return mark, answer


def _time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _text(data: Mapping[str, object], key: str) -> str | None:
    found = data.get(key)
    return found if isinstance(found, str) else None


def read_waiting(entry: ExchangeEntry, call: ToolCall, path: tuple[str, ...]) -> WaitingCall | None:
    """The ``WaitingCall`` an exchange records for ``call`` (looked up by the caller from the answer's
    ``call_id``), or ``None`` when the exchange is not a wait record."""
    marked = _marked(entry)
    if marked is None or marked[0] != "waiting":
        return None
    answer = marked[1]
    return WaitingCall(
        call=call,
        tool=_text(answer, "tool") or call.name,
        permission=_text(answer, "permission") or "",
        question=entry.content.question,
        path=path,
        asked_at=entry.at,
        expires_at=_time(answer.get("expires_at")),
    )


def waiting_call_id(entry: ExchangeEntry) -> str | None:
    """The call id of a wait record, else ``None``."""
    marked = _marked(entry)
    return marked[1]["call_id"] if marked is not None and marked[0] == "waiting" else None


def waiting_child_id(entry: ExchangeEntry) -> str | None:
    """The id of the subagent State whose wait a wait record's call waits on, else ``None``."""
    marked = _marked(entry)
    child = marked[1].get("child_id") if marked is not None and marked[0] == "waiting" else None
    return child if isinstance(child, str) else None


def children_named(entry: HistoryEntry) -> tuple[str, ...]:
    """The subagent States an entry closes or holds a call of: a tool result's ``child_ids``, the child a wait
    record's call waits on; ``()`` for any other entry."""
    kind = entry.kind
    if kind == "tool_result":
        return entry.child_ids  # type: ignore[union-attr]  # a ToolResultEntry
    if kind == "human":
        child = waiting_child_id(entry)  # type: ignore[arg-type]  # an ExchangeEntry
        return () if child is None else (child,)
    return ()


def read_decision(entry: ExchangeEntry) -> ApprovalDecision | None:
    """The ``ApprovalDecision`` an exchange records, or ``None`` when it is not a decision record."""
    marked = _marked(entry)
    if marked is None or marked[0] == "waiting":
        return None
    mark, answer = marked
    return ApprovalDecision(
        call_id=answer["call_id"],
        approved=mark == "approved",
        by=_text(answer, "by"),
        note=_text(answer, "note"),
        reason=_text(answer, "reason"),
        expired=answer.get("expired") is True,
        at=entry.at,
    )
