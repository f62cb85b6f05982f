"""What a State records about its budget, and its public ``budget``, ``awaiting_budget`` and ``raise_budget``.

The facts live in ``"human"`` exchanges marked with ``BUDGET_KEY`` (see ``_values.budget``): the limits a run
started with (``"set"``), a step that waits (``"waiting"``, just before the ``StoppedForBudget`` stop) and each
raise (``"raised"``). A raise is recorded in the State the person holds (the top State), naming the State whose
budget it raises, so that saving that State keeps it; the run that owns the budget reads the raises of its own
State and of the States above it when it starts.

What a budget counts is read from the history too: the usage of the State (which counts its subagents' once their
calls have results), the usage its subagents added since (while their calls run or wait), and the tool calls that
ran in the State and its subagents.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from alpineagents import types as types_module
from alpineagents._history.approvals import turn_approvals
from alpineagents._history.children import Joined, usage_since
from alpineagents._history.fold import Accumulator
from alpineagents._values.budget import (
    BUDGET_KEY,
    WAITING_STOPS,
    Budget,
    BudgetRaise,
    BudgetStatus,
    BudgetWait,
    Spend,
    StoppedForBudget,
    budget_from_answer,
    budget_mark,
    budget_to_answer,
    check_limits,
    read_raise,
    read_wait,
    shown,
)
from alpineagents._values.usage import Usage, UsageTotal
from alpineagents.errors import fix_message
from alpineagents.types import (
    Exchange,
    ExchangeEntry,
    HistoryEntry,
    ModelReplyEntry,
    ModelRequestEntry,
    StopEntry,
    ToolOutcomeKind,
    ToolResultEntry,
)

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = [
    "Budgets",
    "RAN",
    "budget_records",
    "live_usage",
    "raised",
    "spend_of",
    "tool_calls_ran",
    "budget_wait_record",
]

RAN = frozenset({ToolOutcomeKind.DONE, ToolOutcomeKind.ERROR, ToolOutcomeKind.ABORTED, ToolOutcomeKind.INTERRUPTED})
"""The outcomes of a call that started running (a budget counts these calls)."""


def budget_records(history: Iterable[HistoryEntry]) -> Iterable[tuple[str, ExchangeEntry, dict[str, Any]]]:
    """Each budget record of ``history``: its mark, the entry and its answer."""
    for entry in history:
        if type(entry) is ExchangeEntry and entry.kind == "human":
            answer: Any = entry.content.answer
            mark = budget_mark(answer)
            if mark is not None:
                yield mark, entry, answer


def raised(histories: Iterable[Iterable[HistoryEntry]], owner_id: str) -> dict[str, float | int]:
    """The sum of every raise of ``owner_id``'s budget recorded in ``histories``."""
    total: dict[str, float | int] = {}
    for history in histories:
        for _, entry, _ in budget_records(history):
            found = read_raise(entry)
            if found is None or found.budget_of != owner_id:
                continue
            for name, amount in found.amounts.items():
                total[name] = total.get(name, 0) + amount
    return total


def _joined(state: State) -> list[Joined]:
    with state._lock:
        return [*state._call_children.values(), *state._closed_calls.values()]


def live_usage(state: State) -> Usage:
    """The usage of ``state`` and of its subagents now: its recorded usage plus what the subagents of its open
    calls added since their calls last counted them, and all of what a subagent its waiting call started used
    (no result counted it yet; loaded from the store when it is not in memory). Each subagent is counted the same
    way, down the tree."""
    total = UsageTotal(state.usage)
    counted: set[str] = set()
    for joined in _joined(state):
        for child, then in list(joined.children):
            counted.add(child.id)
            total.add(usage_since(live_usage(child), then))
    if state.pending_calls:
        records = turn_approvals(state._acc)
        for call in state.pending_calls:
            child_id = records.child_of(call.id)
            if child_id is not None and child_id not in counted:
                child = _child(state, child_id)
                if child is not None:
                    total.add(live_usage(child))
    return total.value()


def _child(state: State, child_id: str) -> State | None:
    try:
        return state._child_for_wait(child_id)
    except (LookupError, ValueError):  # not in memory and no store holds it: its calls cannot be counted
        return None


def tool_calls_ran(state: State) -> int:
    """The tool calls that started running in ``state`` and in the subagents its calls started (read from the
    histories; a subagent not in memory is loaded from the store)."""
    count = 0
    child_ids: dict[str, None] = {}
    for entry in state.history:
        if type(entry) is ToolResultEntry:
            if entry.outcome in RAN:
                count += 1
            child_ids.update(dict.fromkeys(entry.child_ids))
    records = turn_approvals(state._acc)
    for call in state.pending_calls:
        child_id = records.child_of(call.id)
        if child_id is not None:
            child_ids[child_id] = None
    for joined in _joined(state):
        child_ids.update(dict.fromkeys(child.id for child, _ in joined.children))
    for child_id in child_ids:
        child = _child(state, child_id)
        if child is not None:
            count += tool_calls_ran(child)
    return count


def spend_of(usage: Usage, tool_calls: int) -> Spend:
    """What a budget counts of ``usage`` and ``tool_calls`` (dollars ``None`` when a reply had no price)."""
    tokens = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    cost = usage.cost if usage.requests else 0.0
    return Spend(cost, tokens, usage.requests, tool_calls)


def budget_wait_record(acc: Accumulator) -> ExchangeEntry | None:
    """The budget wait record since this State's latest request or reply (recorded just before its
    ``StoppedForBudget``), or None."""
    history = acc.history
    for index in range(acc.history_len - 1, -1, -1):
        entry = history[index]
        kind = type(entry)
        if kind is ModelReplyEntry or kind is ModelRequestEntry:
            return None
        if kind is ExchangeEntry and entry.kind == "human":  # type: ignore[union-attr]
            answer: Any = entry.content.answer  # type: ignore[union-attr]
            if budget_mark(answer) == "waiting":
                return entry  # type: ignore[return-value]
    return None


def _not_waiting(state_id: str) -> ValueError:
    return ValueError(
        fix_message(
            f"State {state_id!r} is not waiting for a bigger budget, so there is nothing to raise",
            "raise the budget when state.awaiting_budget lists a step (state.stopped is a StoppedForBudget); to "
            "allow more from the start, give the Agent a bigger budget",
            "if state.awaiting_budget:\n    state.raise_budget(usd=1.00)",
        )
    )


class Budgets:
    """The budget operations ``State`` inherits (they use only the attributes declared here)."""

    _id: str
    _lock: threading.RLock
    _acc: Accumulator
    _running: bool

    if TYPE_CHECKING:

        def _commit_locked(self, entry: HistoryEntry) -> None: ...  # Recorder's

        def _child_for_wait(self, child_id: str) -> State: ...  # State's

    @property
    def budget(self) -> BudgetStatus | None:
        """The limits of the latest run of this State that had a budget (raises included), what this State and
        its subagents spent, and what is left; ``None`` when no run of it had a budget. Reads the whole history
        (and the subagents' histories, for the tool calls)."""
        with self._lock:
            history = self._acc.history[: self._acc.history_len]
        limits: Budget | None = None
        for mark, _, answer in budget_records(history):
            if mark == "set" and answer.get("budget_of") == self._id:
                limits = budget_from_answer(answer.get("budget")) or limits
        if limits is None:
            return None
        limits = limits.plus(raised([history], self._id))
        me: Any = self
        return BudgetStatus(budget=limits, spent=spend_of(live_usage(me), tool_calls_ran(me)))

    @property
    def awaiting_budget(self) -> tuple[BudgetWait, ...]:
        """The steps waiting for a bigger budget: this State's, and those of the subagents its waiting calls
        started (their ``path`` says where). Empty when nothing waits."""
        return tuple(self._budget_waits((self._id,)))

    def _budget_waits(self, path: tuple[str, ...]) -> list[BudgetWait]:
        acc = self._acc
        stopped = acc.stopped
        if type(stopped) not in WAITING_STOPS:
            return []
        found: list[BudgetWait] = []
        if type(stopped) is StoppedForBudget:
            entry = budget_wait_record(acc)
            if entry is not None:
                wait = read_wait(entry, path)
                if wait is not None:
                    found.append(wait)
        records = turn_approvals(acc)
        for call in acc.pending_calls:
            child_id = records.child_of(call.id)
            if child_id is not None and call.id not in records.decisions:
                child: Budgets = self._child_for_wait(child_id)
                found.extend(child._budget_waits((*path, child_id)))
        return found

    def raise_budget(
        self,
        usd: float | None = None,
        tokens: int | None = None,
        requests: int | None = None,
        tool_calls: int | None = None,
        *,
        by: str | None = None,
        note: str | None = None,
    ) -> BudgetRaise:
        """Record that a person raised the budget the run waits on by the amounts given (each added to its
        limit). Run the State again to carry on; save it first (``store.save(state)``) to keep the raise. A raise
        that is still too small makes the next step wait again.

        Returns:
            The raise as recorded.

        Raises:
            ValueError: the State is being run or does not wait for a budget, an amount is not above 0, no amount
                was given, or the waits are on budgets the amounts do not limit.
            TypeError: an amount is not a number, ``by`` or ``note`` not a string.
        """
        amounts = {"usd": usd, "tokens": tokens, "requests": requests, "tool_calls": tool_calls}
        example = "state.raise_budget(usd=1.00)"
        check_limits(amounts, "raise_budget()", "give how much to add to the limit the run waits on", example)
        for name, text in (("by", by), ("note", note)):
            if text is not None and not isinstance(text, str):
                raise TypeError(
                    fix_message(f"raise_budget(): {name} takes a string (got: {text!r})", f"pass {name} as a string")
                )
        given = {name: amount for name, amount in amounts.items() if amount is not None}
        with self._lock:
            if self._running:
                raise ValueError(
                    fix_message(
                        f"Cannot raise_budget() while State {self._id!r} is being run",
                        "raise it after the run has stopped for the budget, then run the State again",
                        example,
                    )
                )
            waits = self._budget_waits((self._id,))
            if not waits:
                raise _not_waiting(self._id)
            owners = {wait.budget_of for wait in waits}
            limited = {wait.limit for wait in waits}
            if not limited & set(given):
                needed = ", ".join(sorted(limited))
                raise ValueError(
                    fix_message(
                        f"raise_budget() got {', '.join(given)}, but the run waits on its {needed} limit",
                        f"raise {needed} (by at least {max(wait.short_by for wait in waits):g})",
                        f"state.raise_budget({sorted(limited)[0]}={max(wait.short_by for wait in waits):g})",
                    )
                )
            now = types_module._now()
            last: BudgetRaise | None = None
            for owner in sorted(owners):
                answer = {BUDGET_KEY: "raised", "budget_of": owner, "amounts": given, "by": by, "note": note}
                question = f"Raise the budget of {owner} by {Budget(**amounts)}?"
                self._commit_locked(
                    ExchangeEntry(kind="human", content=Exchange(question, answer), turn=self._acc.turn, at=now)
                )
                last = BudgetRaise(amounts=given, budget_of=owner, by=by, note=note, at=now)
            assert last is not None
            return last

    def _record_budget(self, budget: Budget) -> None:
        """Record the limits a run of this State starts with, unless the latest record says the same."""
        with self._lock:
            acc = self._acc
            latest: Budget | None = None
            for mark, _, answer in budget_records(acc.history[: acc.history_len]):
                if mark == "set" and answer.get("budget_of") == self._id:
                    latest = budget_from_answer(answer.get("budget"))
            if latest == budget:
                return
            answer = {BUDGET_KEY: "set", "budget_of": self._id, "budget": budget_to_answer(budget)}
            content = Exchange(f"Budget of this run: {budget}", answer)
            self._commit_locked(ExchangeEntry(kind="human", content=content, turn=acc.turn))

    def _hold_for_budget(self, stopped: StoppedForBudget, budget: Budget, spent: Spend) -> StoppedForBudget:
        """Record the wait of a step that would pass the budget, then the stop, in one step (nothing new when the
        State already waits on the same step)."""
        with self._lock:
            acc = self._acc
            if acc.stopped == stopped:
                return stopped
            limit = stopped.limit
            question = (
                f"Raise the budget by at least {shown(limit, max(stopped.needed - stopped.left, 0))}? "
                f"The next step needs about {shown(limit, stopped.needed)}, and {shown(limit, stopped.left)} of "
                f"{shown(limit, getattr(budget, limit))} is left (spent: {shown(limit, spent.amount(limit))})."
            )
            answer = {
                BUDGET_KEY: "waiting",
                "budget_of": stopped.budget_of,
                "limit": stopped.limit,
                "needed": stopped.needed,
                "left": stopped.left,
                "budget": budget_to_answer(budget),
            }
            self._commit_locked(ExchangeEntry(kind="human", content=Exchange(question, answer), turn=acc.turn))
            if not acc.finished:
                self._commit_locked(StopEntry(content=stopped, turn=acc.turn))  # type: ignore[arg-type]
            return stopped
