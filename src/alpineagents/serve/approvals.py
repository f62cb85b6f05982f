"""Deciding a call that waits for a person (a permission answered `Deferred`): approve it or deny it, then let the
run go on.

The decision is recorded by the State itself (`state.approve(call_id)`, `state.deny(call_id, reason)`), saved, and
the run continues once no call waits any more (unless the request says `"continue": false`). A call that is not
waiting, a run that waits for nothing, a call already decided: 409 with what is waiting instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from alpineagents.serve.errors import ApiError
from alpineagents.serve.inputs import shape_error
from alpineagents.serve.runs import Runs
from alpineagents.state import State
from alpineagents.types import WaitingCall


class Deciding(Protocol):
    """What deciding needs from a State: its waiting calls and its two decisions."""

    @property
    def awaiting_approval(self) -> Sequence[WaitingCall]: ...

    def approve(self, call_id: str, **details: Any) -> None: ...

    def deny(self, call_id: str, reason: str, **details: Any) -> None: ...


@dataclass(frozen=True)
class Decision:
    """A person's decision as a request gives it."""

    call_id: str
    approved: bool
    reason: str | None = None
    by: str | None = None
    note: str | None = None


def read_decision(call_id: str, approved: bool, data: Any) -> Decision:
    """The decision of `POST .../approve` or `.../deny` (body optional: `by`, `note`; `reason` for a denial)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise shape_error('send a JSON object: {"reason": "...", "by": "...", "note": "..."} (all optional)')
    for key in ("reason", "by", "note"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise shape_error(f'"{key}" must be a string')
    reason = data.get("reason")
    if not approved and not (reason or "").strip():
        reason = "A person denied this call."
    return Decision(call_id, approved, reason, data.get("by"), data.get("note"))


def waiting_calls(state: State) -> tuple[WaitingCall, ...]:
    return tuple(getattr(state, "awaiting_approval", ()))


def not_waiting(state: State, call_id: str) -> ApiError:
    waiting = [w.call.id for w in waiting_calls(state)]
    shown = ", ".join(waiting) if waiting else "none"
    return ApiError(
        409, "not_waiting", f"call {call_id!r} of run {state.id!r} is not waiting for a decision (waiting: {shown})"
    )


def apply(state: State, decision: Decision) -> None:
    """Record `decision` on `state` (409 when its call is not waiting)."""
    if decision.call_id not in {w.call.id for w in waiting_calls(state)}:
        raise not_waiting(state, decision.call_id)
    deciding = cast(Deciding, state)
    details = {key: value for key, value in (("by", decision.by), ("note", decision.note)) if value is not None}
    try:
        if decision.approved:
            deciding.approve(decision.call_id, **details)
        else:
            deciding.deny(decision.call_id, decision.reason or "", **details)
    except (LookupError, ValueError, TypeError) as error:
        raise ApiError(409, "not_waiting", str(error).splitlines()[0] if str(error) else type(error).__name__)


async def decide(runs: Runs, state_id: str, decisions: Sequence[Decision], go_on: bool) -> tuple[State, int | None]:
    """Apply `decisions` to the saved run `state_id`, save it, and continue the run when nothing waits any more
    and `go_on`; the State and where the new run's events begin (None when it was not continued)."""
    state = await runs.load(state_id)
    for decision in decisions:
        apply(state, decision)
    await asyncio.to_thread(runs.store.save, state)
    if not go_on or waiting_calls(state):
        return state, None
    after = len(state.history)
    await runs.start(state)
    return state, after
