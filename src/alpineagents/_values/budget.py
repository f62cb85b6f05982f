"""Budgets: the spending limit of a run, and how the facts of a budget wait are written into history entries the
saved format already has.

Import ``Budget`` from ``alpineagents`` (or ``alpineagents.types``); ``BudgetWait``, ``BudgetRaise``,
``BudgetStatus`` and ``StoppedForBudget`` from ``alpineagents.types``.

A model request (or a turn's tool calls) that would pass the budget is not sent: the run stops and waits for a
person to raise the budget. Its facts are kept without a new kind of entry, so the saved format stays the same and
every program written for it reads such a State:

- the wait: an ``ExchangeEntry`` of kind ``"human"`` whose question asks for a raise and whose answer is a JSON
  object marked with ``BUDGET_KEY`` = ``"waiting"`` (which limit, what is spent, what the request needs);
- a raise: another ``"human"`` exchange marked ``"raised"`` (the amounts, who, the note);
- the limits a run started with: a ``"human"`` exchange marked ``"set"`` (recorded when they change), so a State
  read later still says what was allowed;
- the stop: ``StoppedForBudget``, saved as a limit stop (``StoppedByLimit``'s kind, ``"limit"``) with one more key,
  ``"budget"``, which an older reader ignores (it then reads a limit stop).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from alpineagents._values.approval import StoppedForApproval
from alpineagents._values.construct import as_tuples, value
from alpineagents._values.numbers import is_number, is_whole
from alpineagents.errors import fix_message

if TYPE_CHECKING:
    from alpineagents.types import ExchangeEntry

__all__ = [
    "BUDGET_KEY",
    "LIMITS",
    "FOR_BUDGET",
    "WAITING_STOPS",
    "Budget",
    "BudgetRaise",
    "BudgetStatus",
    "BudgetWait",
    "StoppedForBudget",
    "Spend",
    "budget_mark",
    "budget_from_answer",
    "budget_to_answer",
    "budget_stop_to_dict",
    "budget_stop_from_dict",
    "shown",
    "check_limits",
    "read_wait",
    "read_raise",
]

BUDGET_KEY = "alpineagents_budget"
"""The key that marks a ``"human"`` exchange as a budget record; its value is ``"set"``, ``"waiting"`` or
``"raised"``."""

Limit = Literal["usd", "tokens", "requests", "tool_calls"]
FOR_BUDGET = "for_budget"
"""The key of a call's wait record (an approval record) that says the call waits on a subagent waiting for a
bigger budget, not for a decision: no approval event is told for it."""

LIMITS: tuple[Limit, ...] = ("usd", "tokens", "requests", "tool_calls")
"""The four limits a budget may set, in the order they are checked."""

_EXAMPLE = "Agent(model, budget=Budget(usd=2.50, tool_calls=100))"


def _checked(name: str, amount: object, what: str, example: str) -> float | int | None:
    """`amount` as a positive number (an int for every limit but usd), or None; else the error saying why."""
    if amount is None:
        return None
    whole = name != "usd"
    if not is_number(amount) or (whole and not is_whole(amount)):
        kind = "a whole number" if whole else "a number of dollars"
        raise TypeError(
            fix_message(f"{what} {name}= takes {kind} (got: {amount!r})", f"pass {name} as {kind}", example)
        )
    if math.isnan(amount) or math.isinf(amount) or amount <= 0:
        raise ValueError(
            fix_message(
                f"{what} {name}={amount!r} is not allowed: a limit is a finite amount above 0",
                f"give a positive {name}, or leave {name}= out for no limit of that kind",
                example,
            )
        )
    return amount


def check_limits(amounts: Mapping[str, object], what: str, fix: str, example: str) -> None:
    """The checks of a budget's limits (and of a raise's amounts): each a positive amount or None, at least one
    given."""
    found = [_checked(name, amounts.get(name), f"{what}:", example) for name in LIMITS]
    if all(amount is None for amount in found):
        raise ValueError(
            fix_message(
                f"{what} got no limit: give at least one of usd=, tokens=, requests=, tool_calls=", fix, example
            )
        )


@value
class Budget:
    """The spending limit of a run and all of its subagents, counted from the history (so it holds across
    resumes and processes). Any subset of the four limits; a limit left out is not checked.

    Example:
        ``Agent(model, budget=Budget(usd=2.50, tokens=400_000))``
    """

    usd: float | None = None
    """Dollars, at the models' prices (a model without ``price=`` cannot be held to it)."""
    tokens: int | None = None
    """Tokens: input (cached or not) plus output, of every model request."""
    requests: int | None = None
    """Model requests."""
    tool_calls: int | None = None
    """Tool calls that start running (a call denied, refused as bad input, or waiting is not counted)."""

    def __post_init__(self) -> None:
        check_limits(
            {name: getattr(self, name) for name in LIMITS},
            "Budget()",
            "say what to limit, or leave budget= out of the Agent for no limit",
            _EXAMPLE,
        )
        if self.usd is not None:
            object.__setattr__(self, "usd", float(self.usd))

    def plus(self, amounts: Mapping[str, float | int]) -> Budget:
        """This budget with ``amounts`` added to the limits it sets (a limit it does not set stays unset)."""
        changed = {
            name: None if getattr(self, name) is None else getattr(self, name) + amounts.get(name, 0) for name in LIMITS
        }
        return Budget(**changed)

    def __str__(self) -> str:
        return ", ".join(shown(name, getattr(self, name)) for name in LIMITS if getattr(self, name) is not None)


def shown(name: str, amount: float | int | None) -> str:
    """An amount of a limit in words: ``$0.0123``, ``1,200 tokens``, ``1 request``, ``3 tool calls``."""
    if amount is None:
        return f"{name} unknown"
    if name == "usd":
        return f"${amount:.4f}"
    whole = int(amount) if float(amount).is_integer() else amount
    unit = name.replace("_", " ")
    return f"{whole:,} {unit[:-1] if whole == 1 else unit}"


@value
class Spend:
    """What a budget counts: dollars (``None`` when a reply had no price), tokens, requests and tool calls."""

    usd: float | None = 0.0
    tokens: int = 0
    requests: int = 0
    tool_calls: int = 0

    def amount(self, name: str) -> float | int | None:
        return getattr(self, name)

    def __str__(self) -> str:
        return ", ".join(shown(name, self.amount(name)) for name in LIMITS)


@value(kw_only=True)
class BudgetStatus:
    """``state.budget``: the limits of the latest run with a budget (raises included), what the State and its
    subagents spent, and what is left of each limit."""

    budget: Budget
    """The limits now: the Agent's budget plus every raise."""
    spent: Spend
    """What is spent (the State's usage, which counts its subagents', and the tool calls that ran)."""

    @property
    def left(self) -> dict[str, float | int | None]:
        """What is left of each limit the budget sets (never below 0; ``None`` for dollars without a price)."""
        found: dict[str, float | int | None] = {}
        for name in LIMITS:
            limit = getattr(self.budget, name)
            if limit is None:
                continue
            spent = self.spent.amount(name)
            found[name] = None if spent is None else max(limit - spent, 0)
        return found

    def __str__(self) -> str:
        parts = []
        for name, left in self.left.items():
            spent = self.spent.amount(name)
            parts.append(
                f"{shown(name, spent)} of {shown(name, getattr(self.budget, name))} ({shown(name, left)} left)"
            )
        return "; ".join(parts)


@value
class StoppedForBudget:
    """``state.stopped`` when the next model request (or a turn's tool calls) would pass the budget: the run waits
    for ``state.raise_budget(...)`` (see ``state.awaiting_budget``).

    Saved as a limit stop (``StoppedByLimit``'s kind) plus the budget facts, so that programs written for the same
    saved format read it as a limit stop. It ends every enclosing loop, and the State is not finished.
    """

    limit: Limit
    """The limit the request would pass: ``"usd"``, ``"tokens"``, ``"requests"`` or ``"tool_calls"``."""
    needed: float
    """What the request (or the turn's calls) would take of it, estimated."""
    left: float
    """What was left of it."""
    budget_of: str
    """The id of the State whose run has the budget (the top State of the run, usually)."""

    def __str__(self) -> str:
        return (
            f"waiting for a budget raise: the next step needs about {shown(self.limit, self.needed)}, "
            f"{shown(self.limit, self.left)} left"
        )


WAITING_STOPS: tuple[type, ...] = (StoppedForApproval, StoppedForBudget)
"""The stops of a run that waits for a person (a decision, or a bigger budget): the pending calls stay pending,
every enclosing loop ends, and running the State again carries on."""


@value(kw_only=True)
class BudgetWait:
    """A step waiting for a bigger budget (an item of ``state.awaiting_budget``)."""

    limit: Limit
    """The limit the step would pass."""
    needed: float
    """What the step would take of it (estimated: a request's input tokens plus its largest output, priced)."""
    left: float
    """What was left of it when the step was checked."""
    budget: Budget
    """The limits then (raises included)."""
    budget_of: str
    """The id of the State whose run has the budget."""
    question: str
    """The question for a person."""
    path: tuple[str, ...]
    """The State ids from the top State down to the State whose step waits."""
    asked_at: datetime
    """When the step started waiting (UTC)."""

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            limit: Limit,
            needed: float,
            left: float,
            budget: Budget,
            budget_of: str,
            question: str,
            path: Iterable[str],
            asked_at: datetime,
        ) -> None: ...

    def __post_init__(self) -> None:
        as_tuples(self, "path")

    @property
    def short_by(self) -> float:
        """How much the limit must grow for the step to go on (``needed - left``)."""
        return max(self.needed - self.left, 0)


@value(kw_only=True)
class BudgetRaise:
    """A raise of the budget, as recorded in the history (``state.raise_budget``)."""

    amounts: dict[str, float | int]
    """What each limit grew by."""
    budget_of: str
    """The id of the State whose run has the budget."""
    by: str | None = None
    """Who raised it, or ``None``."""
    note: str | None = None
    """A note kept with the raise, or ``None``."""
    at: datetime


def budget_mark(answer: object) -> str | None:
    """``"set"``, ``"waiting"`` or ``"raised"`` for the answer of a budget record, else ``None``."""
    if not isinstance(answer, Mapping):
        return None
    mark = answer.get(BUDGET_KEY)  # pyright: ignore[reportUnknownMemberType]
    return mark if mark in ("set", "waiting", "raised") else None


def budget_from_answer(data: object) -> Budget | None:
    """The ``Budget`` a record's ``"budget"`` object holds, or ``None`` when it holds none that is valid."""
    if not isinstance(data, Mapping):
        return None
    try:
        return Budget(**{name: data.get(name) for name in LIMITS})  # pyright: ignore[reportUnknownMemberType]
    except (TypeError, ValueError):
        return None


def budget_to_answer(budget: Budget) -> dict[str, float | int | None]:
    """The JSON object of a budget, as records hold it."""
    return {name: getattr(budget, name) for name in LIMITS}


def budget_stop_to_dict(stopped: StoppedForBudget) -> dict[str, Any]:
    """The ``"budget"`` object of a saved ``StoppedForBudget`` (the rest of the stop reads as a limit stop)."""
    return {"limit": stopped.limit, "needed": stopped.needed, "left": stopped.left, "budget_of": stopped.budget_of}


def budget_stop_from_dict(data: Mapping[str, Any]) -> StoppedForBudget:
    """The ``StoppedForBudget`` a saved ``"budget"`` object holds.

    Raises:
        ValueError: the object is not one ``budget_stop_to_dict`` writes (the saved State is damaged).
    """
    limit, budget_of = data.get("limit"), data.get("budget_of")
    needed, left = data.get("needed"), data.get("left")
    numbers = all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in (needed, left))
    if limit not in LIMITS or not isinstance(budget_of, str) or not numbers:
        raise ValueError(f"stop budget: not a budget stop ({dict(data)!r})")
    return StoppedForBudget(limit, float(needed), float(left), budget_of)  # type: ignore[arg-type]


def _number(found: object) -> float:
    return float(found) if isinstance(found, (int, float)) and not isinstance(found, bool) else 0.0


def _text(found: object) -> str | None:
    return found if isinstance(found, str) else None


def read_wait(entry: ExchangeEntry, path: tuple[str, ...]) -> BudgetWait | None:
    """The ``BudgetWait`` a budget wait record holds (``path``: where its State is), or ``None`` for any other
    entry."""
    answer: Any = entry.content.answer
    if entry.kind != "human" or budget_mark(answer) != "waiting":
        return None
    limit = answer.get("limit") if answer.get("limit") in LIMITS else "usd"
    return BudgetWait(
        limit=limit,
        needed=_number(answer.get("needed")),
        left=_number(answer.get("left")),
        budget=budget_from_answer(answer.get("budget")) or Budget(**{limit: 1}),
        budget_of=_text(answer.get("budget_of")) or (path[-1] if path else ""),
        question=entry.content.question,
        path=path,
        asked_at=entry.at,
    )


def read_raise(entry: ExchangeEntry) -> BudgetRaise | None:
    """The ``BudgetRaise`` a raise record holds, or ``None`` for any other entry."""
    answer: Any = entry.content.answer
    if entry.kind != "human" or budget_mark(answer) != "raised":
        return None
    amounts = answer.get("amounts")
    found: dict[str, float | int] = {}
    if isinstance(amounts, Mapping):
        for name in LIMITS:
            amount: Any = amounts.get(name)  # pyright: ignore[reportUnknownMemberType]
            if isinstance(amount, (int, float)) and not isinstance(amount, bool) and amount > 0:
                found[name] = amount
    return BudgetRaise(
        amounts=found,
        budget_of=_text(answer.get("budget_of")) or "",
        by=_text(answer.get("by")),
        note=_text(answer.get("note")),
        at=entry.at,
    )
