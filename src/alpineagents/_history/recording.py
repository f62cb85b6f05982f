"""The recording operations of a State: what the Agent, the loops, the tool runner and the stores call to record
what happens (a request, a reply, a model event, tool results, errors, stops, questions).

Each takes the State's lock, checks, and commits the entries of one fact through the fold. ``State`` inherits them;
their names are fixed (other modules and tests call them on a State).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from alpineagents import types as types_module
from alpineagents._history import misuse
from alpineagents._history.children import Joined
from alpineagents._history.closing import STOPPED_TURN, closed_outcome, closed_result
from alpineagents._history.fold import Accumulator
from alpineagents._history.json_values import answer as answer_form
from alpineagents._history.snapshot import StateSnapshot
from alpineagents._history.stack import stack_text
from alpineagents._secrets import known_by
from alpineagents._values.construct import maker
from alpineagents._values.details import recorded
from alpineagents._values.request_input import RequestInput, input_texts
from alpineagents.errors import fix_message
from alpineagents.types import (
    ErrorEntry,
    Exchange,
    ExchangeEntry,
    HistoryEntry,
    Message,
    ModelEvent,
    ModelEventEntry,
    ModelReplyEntry,
    ModelRequestEntry,
    Reply,
    RunStartEntry,
    StopEntry,
    Stopped,
    StoppedByPermission,
    ToolCall,
    ToolOutcomeKind,
    ToolResultBlock,
    ToolResultContent,
    ToolResultEntry,
    Usage,
    format_call,
)

if TYPE_CHECKING:
    from alpineagents._turn.seams import Feed
    from alpineagents.state import State

__all__ = ["NOT_RUN_YET", "Recorder"]

NOT_RUN_YET = "(not run yet)"

# The entries of every turn, built from fields already in normal form (see ``_values.construct``).
make_request_entry = maker(ModelRequestEntry)
make_reply_entry = maker(ModelReplyEntry)
make_result_entry = maker(ToolResultEntry)


class Recorder:
    """The recording operations ``State`` inherits (they use only the attributes declared here)."""

    _lock: threading.RLock
    _acc: Accumulator
    _snapshot: StateSnapshot | None
    _call_children: dict[str, Joined]
    _closed_calls: dict[int, Joined]
    _tap: Feed | None

    if TYPE_CHECKING:

        def snapshot(self) -> StateSnapshot: ...  # State's

    def _commit_locked(self, entry: HistoryEntry) -> None:
        """Fold one prepared entry into the State (the caller holds the lock, or the State is being built).

        The fold checks before it changes anything, so an entry that cannot follow leaves the State as it was.
        """
        self._acc.apply(entry)
        # Written through the instance dict: State's attribute guard (its __setattr__) would add a Python call to
        # every recorded entry and every new snapshot.
        self.__dict__["_snapshot"] = None
        tap = self._tap
        if tap is not None:  # a stream follows this run (see `_turn.seams.Feed`)
            tap.entry(self, self._acc.history_len - 1, entry)  # type: ignore[arg-type]  # self is a State

    def _commit(self, entry: HistoryEntry) -> None:
        """Record one prepared history entry through the fold, under the State lock.

        Raises:
            ValueError: the entry cannot follow the history (nothing changes).
        """
        with self._lock:
            self._commit_locked(entry)

    def _record(self, entry_class: type[StopEntry] | type[ModelEventEntry], content: Any) -> None:
        """Record ``entry_class(content=content)`` at the current turn."""
        with self._lock:
            self._commit_locked(entry_class(content=content, turn=self._acc.turn))

    def _ensure_open(self, action: str) -> None:
        """Raise the ``ValueError`` for ``action`` on a finished State."""
        if self._acc.finished:
            raise misuse.finished_error(action)

    def _ensure_no_pending(self, action: str) -> None:
        """Raise the ``ValueError`` for ``action`` while calls are pending."""
        pending = self._acc.pending_calls
        if pending:
            raise misuse.pending_error(action, ", ".join(format_call(call) for call in pending))

    def _record_stop(self, stopped: Stopped | None) -> None:
        """Record ``StopEntry(stopped)``; ``None`` clears the stop."""
        self._record(StopEntry, stopped)

    def _clear_stop(self) -> None:
        """Record ``StopEntry(None)`` only if a stop is set."""
        with self._lock:
            if self._acc.stopped is not None:
                self._commit_locked(StopEntry(content=None, turn=self._acc.turn))

    def _begin_think(self, model: str, sent: RequestInput | None = None) -> None:
        """Record ``model_request`` for the next turn, carrying ``sent`` (the system prompt and tool specs).

        The texts of ``sent`` that an earlier request of this State already holds are left out of it: each distinct
        prompt and tool set is kept once (``_sent_digests``).

        Raises:
            ValueError: finished, calls pending, another think waiting, or no messages (nothing recorded).
        """
        with self._lock:
            acc = self._acc
            if acc.finished or acc.pending_calls or acc.waiting or not acc.messages_len:
                self._ensure_open("think")
                self._ensure_no_pending("think")
                if acc.waiting:
                    raise ValueError(fix_message(*misuse.THINK_WAITING))
                if not acc.late_notices:
                    raise ValueError(fix_message(*misuse.THINK_EMPTY))
            texts = sent is not None and (sent.system is not None or sent.tools is not None)
            if texts:
                sent = self._first_sent(sent)  # type: ignore[arg-type]  # not None when texts
            self._commit_locked(make_request_entry("model_request", model, acc.turn + 1, types_module._now(), sent))
            if texts:
                self._sent_digests().update(sent.texts())  # type: ignore[union-attr]

    def _sent_digests(self) -> set[str]:
        """The digests of every system prompt and tool set whose text this State's history holds (found once by
        reading the history, then kept up to date by ``_begin_think``)."""
        acc = self._acc
        kept: tuple[Accumulator, set[str]] | None = self.__dict__.get("_sent_known")
        if kept is not None and kept[0] is acc:
            return kept[1]
        # First use, or a copy of the State (``copy.copy`` shares the instance dict but folds into its own
        # Accumulator): read this State's own history.
        requests = (e.input for e in acc.history[: acc.history_len] if type(e) is ModelRequestEntry)
        known = set(input_texts(requests))
        self.__dict__["_sent_known"] = (acc, known)
        return known

    def _first_sent(self, sent: RequestInput) -> RequestInput:
        """``sent`` without the texts an earlier request already holds."""
        known = self._sent_digests()
        system = None if sent.system_sha256 in known else sent.system
        tools = None if sent.tools_sha256 in known else sent.tools
        if system is sent.system and tools is sent.tools:
            return sent
        return RequestInput(
            system_sha256=sent.system_sha256, system=system, tools_sha256=sent.tools_sha256, tools=tools
        )

    def _record_reply(self, reply: Reply) -> None:
        """Record ``model_reply``: the message joins the context, usage grows, its calls become pending."""
        with self._lock:
            self._commit_locked(make_reply_entry("model_reply", reply, self._acc.turn, types_module._now()))

    def _record_program_call(self, reply: Reply, action: str) -> None:
        """Record a call the program made (``agent.run_tool``) as a turn: ``model_request`` and the ``model_reply``
        ``reply`` (an assistant message holding only the call), through ``_begin_think`` and ``_record_reply``, in
        one step under the lock. The call is then pending, as a model's one-call reply's would be.

        Raises:
            ValueError: finished, calls pending, a think waiting on the model, or no messages (nothing recorded).
        """
        with self._lock:
            acc = self._acc
            self._ensure_open(action)
            self._ensure_no_pending(action)
            if acc.waiting:
                raise ValueError(fix_message(*misuse.program_waiting(action)))
            if not acc.messages_len and not acc.late_notices:
                raise ValueError(fix_message(*misuse.program_empty(action)))
            self._begin_think(reply.model or "")
            self._record_reply(reply)

    def _result_of(self, call: ToolCall) -> ToolResultEntry | None:
        """The entry that closed ``call`` (not a late one), searched from the end of the history back to the reply
        that holds ``call``, or None."""
        acc = self._acc
        history = acc.history
        for index in range(acc.history_len - 1, -1, -1):
            entry = history[index]
            if type(entry) is ToolResultEntry and not entry.late and entry.call.id == call.id:
                return entry
            if type(entry) is ModelReplyEntry and any(found.id == call.id for found in entry.content.tool_calls):
                return None
        return None

    def _record_model_event(self, event: ModelEvent) -> None:
        """Record ``model_event``."""
        self._record(ModelEventEntry, event)

    def _pending_slot(self, call: object, same_object: bool = False) -> ToolCall | None:
        """The first pending call of the open turn with the id of ``call`` (with ``same_object``: ``call`` itself)."""
        acc = self._acc
        results = acc.turn_results
        call_id = getattr(call, "id", None)
        for index, slot in enumerate(acc.turn_calls):
            if results[index] is None and (slot is call if same_object else slot.id == call_id):
                return slot
        return None

    def _close_slot(
        self, slot: ToolCall, content: ToolResultContent, outcome: ToolOutcomeKind, error: BaseException | None
    ) -> None:
        joined = self._call_children.get(slot.id) if self._call_children else None
        moved = self._commit_result(slot, content, outcome, error, joined, late=False)
        if joined is not None:
            del self._call_children[slot.id]
            joined.settle(moved)
            joined.call = slot
            self._closed_calls[id(slot)] = joined  # its children may still report usage in a late result

    def _commit_result(
        self,
        call: ToolCall,
        content: ToolResultContent,
        outcome: ToolOutcomeKind,
        error: BaseException | None,
        joined: Joined | None,
        *,
        late: bool,
    ) -> list[tuple[State, Usage]]:
        """Commit the result entry of ``call``, with the ids of the subagents it started (``joined``) and their
        usage this State has not counted yet. Returns what ``joined.settle`` takes once the entry is in."""
        child_ids, usage, moved = joined.measure() if joined is not None else ((), None, [])
        self._commit_locked(
            make_result_entry(
                "tool_result",
                content,
                call,
                outcome,
                late,
                error,
                child_ids,
                usage,
                self._acc.turn,
                types_module._now(),
            )
        )
        return moved

    def _tool_result(
        self,
        call: ToolCall,
        content: ToolResultContent,
        outcome: ToolOutcomeKind,
        *,
        error: BaseException | None = None,
        if_pending: bool = False,
    ) -> bool:
        """Record the result of the first pending call with ``call.id``; return whether it was recorded.

        Raises:
            ValueError: no such call is pending (unless ``if_pending``, which returns False instead).
        """
        with self._lock:
            slot = self._pending_slot(call)
            if slot is None:
                if if_pending:
                    return False
                raise ValueError(f"cannot record a result for a call that is not pending: {_shown(call)}")
            self._close_slot(slot, content, outcome, error)
            return True

    def _late_result(
        self,
        call: ToolCall,
        content: ToolResultContent,
        outcome: ToolOutcomeKind,
        *,
        error: BaseException | None = None,
    ) -> None:
        """Record the result of a call that finished after it was closed (a normal result if still pending)."""
        with self._lock:
            slot = self._pending_slot(call, same_object=True)
            if slot is not None:
                self._close_slot(slot, content, outcome, error)
                return
            joined = self._closed_joined(call)
            moved = self._commit_result(call, content, outcome, error, joined, late=True)
            if joined is not None:
                joined.settle(moved)

    def _stop_turn(self, call: ToolCall, reason: str, permission: str) -> list[ToolCall]:
        """A permission denied ``call`` with ``stop=True``: deny it, cancel the other pending calls, record the stop.

        Returns the cancelled calls in request order.

        Raises:
            ValueError: ``call`` is not pending.
        """
        with self._lock:
            slot = self._pending_slot(call)
            if slot is None:
                raise ValueError(f"cannot deny a call that is not pending: {_shown(call)}")
            self._close_slot(slot, reason, ToolOutcomeKind.DENIED, None)
            cancelled = list(self._acc.pending_calls)
            for other in cancelled:
                self._close_slot(other, STOPPED_TURN, ToolOutcomeKind.CANCELLED, None)
            if not self._acc.finished:
                self._commit_locked(StopEntry(content=StoppedByPermission(slot, permission), turn=self._acc.turn))
            return cancelled

    def _close_pending(self, error: BaseException) -> list[ToolCall]:
        """Close every pending call, in request order, because ``error`` left the run. Returns them."""
        with self._lock:
            calls = list(self._acc.pending_calls)
            content = closed_result(error)
            kind = closed_outcome(error).kind
            for call in calls:
                self._close_slot(call, content, kind, error)
            return calls

    def _record_error(self, error: BaseException, call: ToolCall | None = None) -> None:
        """Record ``error`` once (an exception already recorded since the latest request or run start is skipped)."""
        text = str(error)
        content = f"{type(error).__name__}: {text}" if text else type(error).__name__
        with self._lock:
            acc = self._acc
            if not (acc.waiting and call is None) and self._recorded_since_start(error):
                return
            stack = (
                stack_text(error, known_by(getattr(self.__dict__.get("_agent"), "_model", None)))
                if recorded("stacks")
                else None
            )
            self._commit_locked(ErrorEntry(content=content, error=error, call=call, turn=acc.turn, traceback=stack))

    def _recorded_since_start(self, error: BaseException) -> bool:
        """Whether an ``error`` entry holding ``error`` itself follows the latest ``model_request``/``run_start``."""
        acc = self._acc
        history = acc.history
        for index in range(acc.history_len - 1, -1, -1):
            entry = history[index]
            if type(entry) is ErrorEntry and entry.error is error:
                return True
            if type(entry) is ModelRequestEntry or type(entry) is RunStartEntry:
                return False
        return False

    def _record_ask(self, question: str, answer: object, usage: Usage | None = None) -> None:
        """Record an ``ask`` exchange (answer in JSON form, or its repr); ``usage`` is added to the State's."""
        self._record_exchange("ask", question, answer, usage)

    def _record_human(self, question: str, answer: object) -> None:
        """Record a ``human`` exchange (answer in JSON form, or its repr)."""
        self._record_exchange("human", question, answer, None)

    def _record_exchange(self, kind: str, question: str, answer: object, usage: Usage | None) -> None:
        try:
            value = answer_form(answer, f"the answer to {question!r}")
        except TypeError:
            value = repr(answer)
        with self._lock:
            self._commit_locked(
                ExchangeEntry(kind=kind, content=Exchange(question, value), usage=usage, turn=self._acc.turn)  # pyright: ignore[reportArgumentType]
            )

    def _context_for_question(self) -> tuple[Message, ...]:
        """The messages an ``ask`` is built on: the messages, plus the open turn's results (or placeholders)."""
        snap = self.snapshot()
        if not snap._turn_calls:
            return snap.messages
        blocks = tuple(
            result if result is not None else ToolResultBlock(call.id, NOT_RUN_YET, name=call.name)
            for call, result in zip(snap._turn_calls, snap._turn_results, strict=True)
        )
        return (*snap.messages, Message("user", blocks))

    def _closed_joined(self, call: ToolCall, create: bool = False) -> Joined | None:
        """The children record of the call object ``call`` that this State closed (None if it did not).

        Calls closed with children keep a record; for another call, ``create`` looks for its closing entry in
        history (only a tool still running after its call was closed gets here) and starts a record.
        """
        found = self._closed_calls.get(id(call))
        if found is not None and found.call is call:
            return found
        if not create:
            return None
        acc = self._acc
        for index in range(acc.history_len - 1, -1, -1):
            entry = acc.history[index]
            if type(entry) is ToolResultEntry and entry.call is call and not entry.late:
                joined = self._closed_calls[id(call)] = Joined(call)
                return joined
        return None


def _shown(call: object) -> str:
    return format_call(call) if isinstance(call, ToolCall) else repr(call)
