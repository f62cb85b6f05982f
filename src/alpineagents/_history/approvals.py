"""Calls that wait for a person's decision: what a State records about them, and its public ``awaiting_approval``,
``approve`` and ``deny``.

The facts live in ``"human"`` exchanges (see ``_values.approval``), after the reply whose calls wait, so finding
them reads only the entries since the State's latest reply: the cost does not grow with the history. A call that
waits on a subagent (its tool started a run that stopped for approval) has a wait record that names the child
State; its waiting calls are listed with the child's place, and a decision about them is recorded in the State the
person holds (the top State), where the child's run finds it when it is resumed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from alpineagents import types as types_module
from alpineagents._history import misuse
from alpineagents._history.fold import Accumulator
from alpineagents._values.approval import (
    APPROVAL_KEY,
    ApprovalDecision,
    StoppedForApproval,
    WaitingCall,
    decision_answer,
    read_decision,
    read_waiting,
    waiting_answer,
)
from alpineagents._values.budget import FOR_BUDGET, WAITING_STOPS, StoppedForBudget
from alpineagents.errors import fix_message
from alpineagents.types import Exchange, ExchangeEntry, HistoryEntry, ModelReplyEntry, StopEntry, ToolCall

if TYPE_CHECKING:
    from alpineagents.state import State

__all__ = ["EXPIRED", "Hold", "TurnApprovals", "Approvals", "has_waits", "turn_approvals"]

EXPIRED = "The approval of this call came after it expired, so the call was not run."
"""The result the model reads for a call whose approval came too late."""


@dataclass(slots=True)
class Hold:
    """A call the permission phase holds for a decision: what its wait record says."""

    call: ToolCall
    tool: str
    permission: str
    question: str
    expires_in: timedelta | None = None
    child_id: str | None = None
    budget: StoppedForBudget | None = None
    """The child's stop when the child waits for a bigger budget (not for a decision)."""


@dataclass(slots=True)
class TurnApprovals:
    """The approval records since a State's latest reply: wait records and decisions, each by call id."""

    waits: dict[str, ExchangeEntry]
    decisions: dict[str, ApprovalDecision]
    calls: dict[str, ToolCall]

    def child_of(self, call_id: str) -> str | None:
        """The child State a waiting call waits on, or None."""
        entry = self.waits.get(call_id)
        child = entry.content.answer.get("child_id") if entry is not None else None
        return child if isinstance(child, str) else None

    def waiting(self, call_id: str, path: tuple[str, ...]) -> WaitingCall | None:
        entry = self.waits.get(call_id)
        call = self.calls.get(call_id)
        if entry is None or call is None:
            return None
        return read_waiting(entry, call, path)


def has_waits(acc: Accumulator) -> bool:
    """True when a call of the latest reply was held for approval (a wait record since that reply). Right after a
    reply, the usual case, this reads one entry."""
    history = acc.history
    for index in range(acc.history_len - 1, -1, -1):
        entry = history[index]
        kind = type(entry)
        if kind is ModelReplyEntry:
            return False
        if kind is ExchangeEntry and entry.kind == "human":  # type: ignore[union-attr]
            answer: Any = entry.content.answer  # type: ignore[union-attr]
            if hasattr(answer, "get") and answer.get(APPROVAL_KEY) == "waiting":
                return True
    return False


def turn_approvals(acc: Accumulator) -> TurnApprovals:
    """The approval records of the entries since the latest reply (none before any reply)."""
    history = acc.history
    waits: dict[str, ExchangeEntry] = {}
    decisions: dict[str, ApprovalDecision] = {}
    calls: dict[str, ToolCall] = {}
    for index in range(acc.history_len - 1, -1, -1):
        entry = history[index]
        if type(entry) is ModelReplyEntry:
            calls = {call.id: call for call in entry.content.message.tool_calls}
            break
        if type(entry) is ExchangeEntry and entry.kind == "human":
            answer: Any = entry.content.answer
            if not hasattr(answer, "get") or answer.get(APPROVAL_KEY) is None:
                continue
            decision = read_decision(entry)
            if decision is not None:
                decisions.setdefault(decision.call_id, decision)  # the latest one wins (we read backwards)
            elif isinstance(answer.get("call_id"), str):
                waits.setdefault(answer["call_id"], entry)
    return TurnApprovals(waits, decisions, calls)


class Approvals:
    """The approval operations ``State`` inherits (they use only the attributes declared here)."""

    _id: str
    _lock: threading.RLock
    _acc: Accumulator
    _running: bool
    _children: dict[str, State]

    if TYPE_CHECKING:

        def _commit_locked(self, entry: HistoryEntry) -> None: ...  # Recorder's

        def _child_for_wait(self, child_id: str) -> State: ...  # State's

    @property
    def awaiting_approval(self) -> tuple[WaitingCall, ...]:
        """The calls waiting for a person's decision, in request order: this State's, and those of the subagents
        its waiting calls started (their ``path`` says where). Empty when nothing waits."""
        return tuple(self._waiting((self._id,), {}))

    def _waiting(self, path: tuple[str, ...], decided: dict[str, ApprovalDecision]) -> list[WaitingCall]:
        acc = self._acc
        if type(acc.stopped) not in WAITING_STOPS:
            return []
        records = turn_approvals(acc)
        decided = {**records.decisions, **decided}  # a decision recorded above counts here too
        found: list[WaitingCall] = []
        for call in acc.pending_calls:
            if call.id in decided:
                continue
            child_id = records.child_of(call.id)
            if child_id is not None:
                child: Approvals = self._child_for_wait(child_id)
                found.extend(child._waiting((*path, child_id), decided))
                continue
            waiting = records.waiting(call.id, path)
            if waiting is not None:
                found.append(waiting)
        return found

    def approve(self, call_id: str, *, by: str | None = None, note: str | None = None) -> ApprovalDecision:
        """Record that a person approved a waiting call (of this State or of a subagent below it). The next run
        of this State runs it, once. An approval after the call's expiry is recorded as a denial (``expired``).
        Save the State afterwards (``store.save(state)``) to keep the decision.

        Returns:
            The decision as recorded.

        Raises:
            ValueError: the State is being run, is not waiting, ``call_id`` is not a waiting call, or that call
                was already decided.
            TypeError: ``call_id``, ``by`` or ``note`` is not a string.
        """
        return self._decide(call_id, True, None, by, note, "approve")

    def deny(self, call_id: str, reason: str, *, by: str | None = None, note: str | None = None) -> ApprovalDecision:
        """Record that a person refused a waiting call: the model reads ``reason`` as the call's error result when
        the State runs next. Save the State afterwards (``store.save(state)``) to keep the decision.

        Raises:
            ValueError: as ``approve``, or ``reason`` is empty.
            TypeError: ``reason`` (or another argument) is not a string.
        """
        return self._decide(call_id, False, reason, by, note, "deny")

    def _decide(
        self, call_id: object, approved: bool, reason: object, by: object, note: object, action: str
    ) -> ApprovalDecision:
        _check_texts(action, call_id=call_id, by=by, note=note, reason=reason, required=not approved)
        assert isinstance(call_id, str)
        with self._lock:
            if self._running:
                raise ValueError(
                    fix_message(
                        f"Cannot {action}() a call while State {self._id!r} is being run",
                        "decide after the run has stopped for approval, then run the State again",
                        f"state.{action}(call_id)",
                    )
                )
            waiting = {item.call.id: item for item in self._waiting((self._id,), {})}
            item = waiting.get(call_id)
            if item is None:
                raise self._unknown(call_id, waiting, action)
            now = types_module._now()
            expired = approved and item.expires_at is not None and now > item.expires_at
            if expired:
                approved, reason = False, EXPIRED
            answer = decision_answer(call_id, approved, by, note, reason, expired)  # type: ignore[arg-type]
            entry = ExchangeEntry(kind="human", content=Exchange(item.question, answer), turn=self._acc.turn, at=now)
            self._commit_locked(entry)
            decision = read_decision(entry)
            assert decision is not None
            return decision

    def _unknown(self, call_id: str, waiting: dict[str, WaitingCall], action: str) -> ValueError:
        if type(self._acc.stopped) in WAITING_STOPS and call_id in turn_approvals(self._acc).decisions:
            return ValueError(
                fix_message(
                    f"The call {call_id!r} of State {self._id!r} was already decided",
                    "decide each waiting call once; run the State to carry the decisions out",
                    "agent.run(state)",
                )
            )
        if not waiting:
            return misuse.not_waiting_error(self._id, action)
        shown = ", ".join(waiting)
        return ValueError(
            fix_message(
                f"{call_id!r} is not a call waiting for approval in State {self._id!r} (waiting: {shown})",
                "pass the id of one of state.awaiting_approval's calls",
                f"state.{action}(state.awaiting_approval[0].call.id)",
            )
        )

    def _hold_for_approval(self, holds: list[Hold]) -> StoppedForApproval | StoppedForBudget:
        """Record the wait of each held call that has no wait record yet, then the stop, in one step. When every
        held call waits on a subagent that waits for a bigger budget, the stop is that subagent's budget stop."""
        with self._lock:
            acc = self._acc
            known = turn_approvals(acc).waits
            now = types_module._now()
            for hold in holds:
                if hold.call.id in known:
                    continue
                expires_at = None if hold.expires_in is None else now + hold.expires_in
                answer = waiting_answer(hold.call, hold.tool, hold.permission, expires_at)
                if hold.child_id is not None:
                    answer["child_id"] = hold.child_id
                if hold.budget is not None:  # the subagent waits for a bigger budget: no decision to take here
                    answer[FOR_BUDGET] = True
                content = Exchange(hold.question, answer)
                self._commit_locked(ExchangeEntry(kind="human", content=content, turn=acc.turn, at=now))
            first = holds[0]
            stopped: StoppedForApproval | StoppedForBudget
            if first.budget is not None and all(hold.budget is not None for hold in holds):
                stopped = first.budget
            else:
                stopped = StoppedForApproval(first.call, first.permission, [hold.call for hold in holds])
            if not acc.finished:
                self._commit_locked(StopEntry(content=stopped, turn=acc.turn))
            return stopped


def _check_texts(action: str, *, required: bool, **values: object) -> None:
    example = 'state.deny(call_id, "Not this customer", by="ana")' if action == "deny" else "state.approve(call_id)"
    for name, found in values.items():
        if found is None and not (name == "reason" and required) and name != "call_id":
            continue
        if not isinstance(found, str):
            raise TypeError(
                fix_message(f"{action}(): {name} takes a string (got: {found!r})", f"pass {name} as a string", example)
            )
        if name in ("call_id", "reason") and not found.strip():
            raise ValueError(
                fix_message(
                    f"{action}() got an empty {name}",
                    "pass the call's id" if name == "call_id" else "say why, in words the model reads",
                    example,
                )
            )
