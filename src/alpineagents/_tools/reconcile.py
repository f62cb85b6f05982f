"""What a tool's ``reconcile`` function answers about a call whose effect is unknown, and how that answer is read.

A call that was running when its process died has no saved result: the tool may or may not have done its work. A
tool that can look (in the system it changes, by the call's idempotency key) declares ``reconcile``; when the run
resumes, the function gets the call (a ``CurrentCall``) and answers with one of the three values here:

- ``Happened(result)``: the effect took place; ``result`` is recorded as the call's result (formatted like a
  value the tool returned) and the model reads it;
- ``NotHappened()``: it did not; the call runs now, once;
- ``CannotTell(question)``: nobody can say; the call waits for a person like a call held for approval (approve:
  it runs; deny: the model reads the reason).

Returning ``None`` is read as ``CannotTell()``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from alpineagents._tools.scope import CurrentCall
from alpineagents.errors import fix_message

__all__ = ["Happened", "NotHappened", "CannotTell", "Verdict", "Reconcile", "check_reconcile", "read_verdict"]

RECONCILE_EXAMPLE = (
    "def paid(call: CurrentCall):\n"
    "    payment = bank.find(call.idempotency_key)\n"
    "    return Happened(payment.receipt) if payment else NotHappened()\n\n"
    "@tool(reconcile=paid)\ndef pay(amount: int) -> str: ..."
)


@dataclass(frozen=True, slots=True)
class Happened:
    """The call's effect took place: ``result`` (any value a tool may return) becomes the call's result."""

    result: Any = None
    """What the model reads as the call's result."""


@dataclass(frozen=True, slots=True)
class NotHappened:
    """The call's effect did not take place: the call runs now, once."""


@dataclass(frozen=True, slots=True)
class CannotTell:
    """Whether the effect took place cannot be told: the call waits for a person's decision."""

    question: str | None = None
    """The question for a person; ``None``: a question that names the call."""


Verdict = Happened | NotHappened | CannotTell
"""What a ``reconcile`` function returns (``None`` is read as ``CannotTell()``)."""

Reconcile = Callable[[CurrentCall], "Verdict | None"]
"""The type of a tool's ``reconcile`` function."""


def check_reconcile(name: str, reconcile: object) -> None:
    """Refuse a ``reconcile=`` that is not a plain callable (an ``async def`` one is accepted and awaited)."""
    if reconcile is None:
        return
    if not callable(reconcile):
        raise TypeError(
            fix_message(
                f"Tool {name}: reconcile= takes a function of the call (got: {reconcile!r})",
                "pass a function that takes a CurrentCall and returns Happened(result), NotHappened() or CannotTell()",
                RECONCILE_EXAMPLE,
            )
        )


def read_verdict(tool: str, answer: object) -> Verdict:
    """The verdict a ``reconcile`` function returned (``None``: ``CannotTell()``).

    Raises:
        TypeError: it returned anything else (an awaitable from a sync run among them).
    """
    if answer is None:
        return CannotTell()
    if isinstance(answer, (Happened, NotHappened, CannotTell)):
        return answer
    hint = " (an async reconcile function needs arun)" if inspect.isawaitable(answer) else ""
    raise TypeError(
        fix_message(
            f"Tool {tool}: reconcile returned {answer!r}{hint}",
            "return Happened(result), NotHappened() or CannotTell(question)",
            RECONCILE_EXAMPLE,
        )
    )
