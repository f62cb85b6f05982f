"""How the permission phase carries out the decisions of a person about calls that waited for approval.

Before a call of the turn is asked about, its approval records (see ``_history.approvals``) are read: an approved
call runs without asking the permissions again, a denied one gets the person's reason, a call whose wait expired
gets the expiry text, and one still waiting stays held. A subagent's run also reads the decisions recorded in the
States above it (a person decides in the top State, the one they hold).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alpineagents import types as types_module
from alpineagents._history.approvals import EXPIRED, Hold, TurnApprovals, turn_approvals
from alpineagents._values.budget import StoppedForBudget
from alpineagents.permissions import Allowed, Decision, Deferred, Denied

if TYPE_CHECKING:
    from alpineagents.state import State
    from alpineagents.types import ToolCall

__all__ = ["approvals_of", "settled", "hold", "WaitingSubagent", "resumed_child", "child_hold"]


class WaitingSubagent(Exception):  # noqa: N818 - a signal between the subagent tool and the runner, not an error
    """Raised by the subagent tool when its child's run stopped for approval: the runner then holds the call (it
    stays pending, with a wait record naming the child) instead of recording a result."""

    def __init__(self, child: State) -> None:
        super().__init__(f"subagent State {child.id!r} waits for approval")
        self.child = child


def resumed_child(state: State, call: ToolCall) -> State | None:
    """The subagent State that `call` of `state` started and that waits for approval, or None."""
    child_id = turn_approvals(state._acc).child_of(call.id)
    return None if child_id is None else state._child_for_wait(child_id)


def child_hold(call: ToolCall, child: State) -> Hold:
    """The wait record of a call whose subagent waits: its question and permission are the child's first."""
    stopped = child.stopped
    if isinstance(stopped, StoppedForBudget):  # it waits for a bigger budget, not for a decision
        budget_waits = child.awaiting_budget
        question = budget_waits[0].question if budget_waits else str(stopped)
        return Hold(call, call.name, "", question, None, child.id, stopped)
    waiting = child.awaiting_approval
    question = waiting[0].question if waiting else f"Approve the calls of {call.name}?"
    permission = getattr(stopped, "permission", "") or ""
    return Hold(call, call.name, permission, question, None, child.id)


def approvals_of(state: State) -> TurnApprovals:
    """The approval records of `state`'s turn, with the decisions recorded in the States above a subagent run."""
    records = turn_approvals(state._acc)
    context = state._run_context
    while context is not None and context.parent is not None:
        above = context.parent[0]
        for call_id, decision in turn_approvals(above._acc).decisions.items():
            records.decisions.setdefault(call_id, decision)
        context = above._run_context
    return records


def settled(records: TurnApprovals, call: ToolCall) -> Decision | None:
    """The decision the records make about `call`, or None when they say nothing (the permissions are asked)."""
    entry = records.waits.get(call.id)
    decision = records.decisions.get(call.id)
    if entry is None and decision is None:
        return None
    if decision is None and records.child_of(call.id) is not None:
        return Decision(Allowed(), None)  # its subagent is run again: its own calls wait or go on there
    permission = entry.content.answer.get("permission") if entry is not None else None
    decided_by = permission if isinstance(permission, str) else None
    if decision is not None:
        if decision.approved:
            return Decision(Allowed(), decided_by)
        return Decision(Denied(decision.reason or EXPIRED), decided_by)
    waiting = records.waiting(call.id, ())
    if waiting is not None and waiting.expires_at is not None and types_module._now() > waiting.expires_at:
        return Decision(Denied(EXPIRED), decided_by)
    question = entry.content.question if entry is not None else None
    return Decision(Deferred(question or None), decided_by)


def hold(call: ToolCall, decision: Decision) -> Hold:
    """What the wait record of `call` says, from the `Deferred` verdict that held it."""
    verdict = decision.verdict
    assert isinstance(verdict, Deferred)
    return Hold(
        call,
        call.name,
        decision.decided_by or "",
        verdict.question_for(call),
        verdict.lifetime(),
    )
