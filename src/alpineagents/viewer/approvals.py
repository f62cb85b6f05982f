"""How the viewer shows the approval records of a run (a call waiting for a person's decision, and the decision),
and the records of calls whose effect was unknown (a tool's ``reconcile`` answer)."""

from __future__ import annotations

from typing import Any

from alpineagents._history.effects import RECONCILE_KEY
from alpineagents._values.approval import APPROVAL_KEY
from alpineagents._values.budget import FOR_BUDGET, read_raise, read_wait, shown
from alpineagents.types import ExchangeEntry

__all__ = ["approval_label", "budget_label", "RECONCILED"]

RECONCILED = {
    "happened": ("its effect had happened: the result comes from reconcile", "ok"),
    "not_happened": ("its effect had not happened: it runs again, once", "warn"),
    "cannot_tell": ("nobody can tell whether its effect happened: it waits for a person", "warn"),
}
"""What the viewer says of each ``reconcile`` answer, and its tone."""


def approval_label(entry: ExchangeEntry) -> tuple[str, str, str] | None:
    """`(label, tone, badge)` for an exchange that records an approval (a wait or a decision), else None."""
    answer: Any = entry.content.answer
    if entry.kind != "human" or not hasattr(answer, "get"):
        return None
    reconciled = RECONCILED.get(answer.get(RECONCILE_KEY))
    if reconciled is not None:
        said, tone = reconciled
        return (
            f"call {answer.get('call_id') or '?'} ({answer.get('tool') or 'tool'}) reconciled: {said}",
            tone,
            "reconciled",
        )
    budget = budget_label(entry)
    if budget is not None:
        return budget
    mark = answer.get(APPROVAL_KEY)
    if mark is None:
        return None
    call = answer.get("call_id") or "?"
    if mark == "waiting":
        child = answer.get("child_id")
        where = f" (in subagent run {child})" if child else ""
        waits_for = "a bigger budget" if answer.get(FOR_BUDGET) else "a person's decision"
        return f"call {call} ({answer.get('tool') or 'tool'}) waits for {waits_for}{where}", "warn", "waiting"
    who = f" by {answer['by']}" if answer.get("by") else ""
    if mark == "approved":
        return f"call {call} approved{who}", "ok", "approved"
    late = " (the approval came after the expiry)" if answer.get("expired") else ""
    return f"call {call} denied{who}{late}", "bad", "denied"


def budget_label(entry: ExchangeEntry) -> tuple[str, str, str] | None:
    """`(label, tone, badge)` for an exchange that records a budget wait or raise, else None."""
    wait = read_wait(entry, ())
    if wait is not None:
        return f"waits for a bigger budget: {wait.question}", "warn", "budget"
    raised = read_raise(entry)
    if raised is not None:
        who = f" by {raised.by}" if raised.by else ""
        amounts = ", ".join(shown(name, amount) for name, amount in raised.amounts.items())
        return f"budget raised by {amounts}{who}", "ok", "budget raised"
    return None
