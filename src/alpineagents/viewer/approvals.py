"""How the viewer shows the approval records of a run: a call waiting for a person's decision, and the decision."""

from __future__ import annotations

from typing import Any

from alpineagents._values.approval import APPROVAL_KEY
from alpineagents.types import ExchangeEntry

__all__ = ["approval_label"]


def approval_label(entry: ExchangeEntry) -> tuple[str, str, str] | None:
    """`(label, tone, badge)` for an exchange that records an approval (a wait or a decision), else None."""
    answer: Any = entry.content.answer
    mark = answer.get(APPROVAL_KEY) if entry.kind == "human" and hasattr(answer, "get") else None
    if mark is None:
        return None
    call = answer.get("call_id") or "?"
    if mark == "waiting":
        child = answer.get("child_id")
        where = f" (in subagent run {child})" if child else ""
        return f"call {call} ({answer.get('tool') or 'tool'}) waits for a person's decision{where}", "warn", "waiting"
    who = f" by {answer['by']}" if answer.get("by") else ""
    if mark == "approved":
        return f"call {call} approved{who}", "ok", "approved"
    late = " (the approval came after the expiry)" if answer.get("expired") else ""
    return f"call {call} denied{who}{late}", "bad", "denied"
