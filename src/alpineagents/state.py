"""``State``: one conversation and its complete record, and ``StateSnapshot``, its frozen value at one moment.

History is the only source of truth: every value of a State is the fold of its history entries (``fold``). A State
changes only through its own methods, each of which validates first and then records entries under the State's
lock. The underscore methods of section "recording operations" are what the Agent, the loops, the tool runner and
the stores use to record what happens.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from alpineagents import types as types_module
from alpineagents._closing import INTERRUPTED, STOPPED_TURN, closed_outcome, closed_result
from alpineagents._fold import (
    CLEARED,
    LATE_RESULT,
    SUMMARY_PREFIX,
    StateSnapshot,
    cleared_messages,
    fold,
    fork_snapshot,
    history_list,
    message_count,
    replay,
    snapshot_of,
    values_of,
)
from alpineagents._fold import commit as _fold_commit
from alpineagents._frozen import FrozenDict, thaw
from alpineagents._jsoncopy import json_copy, json_form
from alpineagents._makers import make_reply_entry, make_request_entry, make_result_entry
from alpineagents._state_parts import (
    ACCEPTED,
    GET_RETIRED,
    Joined,
    add_message_empty_error,
    add_message_role_error,
    add_message_type_error,
    assignment_error,
    canonical,
    check_id,
    child_no_store_error,
    compact_empty_error,
    compact_type_error,
    compact_window_error,
    damaged_error,
    exchange_answer,
    finished_error,
    fork_waiting_error,
    history_snapshot,
    initial_entries,
    keep_last_error,
    keyword_signature,
    line,
    pending_error,
    positional_error,
    restore_busy_error,
    restore_foreign_error,
    restore_type_error,
    restore_waiting_snapshot_error,
    running_error,
    store_binding_error,
    think_empty_error,
    think_waiting_error,
    turns,
    unknown_keyword,
)
from alpineagents._tokens import context_tokens
from alpineagents.errors import fix_message
from alpineagents.types import (
    AgentInfo,
    ContextChange,
    ContextChangeEntry,
    ErrorEntry,
    Exchange,
    ExchangeEntry,
    ExtraDataEntry,
    HistoryEntry,
    Image,
    Message,
    MessageEntry,
    ModelEvent,
    ModelEventEntry,
    ModelRequestEntry,
    Reply,
    RunStartEntry,
    StopEntry,
    Stopped,
    StoppedByFinish,
    StoppedByPermission,
    ToolCall,
    ToolOutcomeKind,
    ToolResultBlock,
    ToolResultContent,
    ToolResultEntry,
    Usage,
    format_call,
)

__all__ = ["State", "StateSnapshot"]

NOT_RUN_YET = "(not run yet)"
UNSAVED_RESULT = (
    "(unknown: the run stopped before this result was saved, so the tool may or may not have run. "
    "Check whether it took effect before relying on it or running it again)"
)
STOPPED_WAITING = "(process stopped while waiting for the model)"

_ = (CLEARED, LATE_RESULT, SUMMARY_PREFIX, fold, INTERRUPTED, check_id)  # names of this module defined elsewhere


class State:
    """One conversation: an id and an append-only history; every other value is derived from the history.

    Build it with keywords only: ``State(messages=[Message.user("Fix the bug")])``, ``State(history=...)`` or
    ``State()``. All methods are thread-safe. ``==`` is identity; compare values through ``snapshot()``.
    """

    _id: str
    _lock: threading.RLock
    _edit_lock: threading.RLock
    _values: dict[str, Any]
    _snapshot: StateSnapshot | None
    _agent: Any
    _running: bool
    _compacting: int | None
    _depth: int
    _run_context: Any
    _saved_store: Any
    _saved_count: int
    _child_store: Any
    _resume_info: AgentInfo | None
    _children: dict[str, State]
    _call_children: dict[str, Joined]
    _closed_calls: dict[int, Joined]

    if TYPE_CHECKING:

        def __init__(
            self,
            *,
            id: str | None = None,
            messages: Iterable[Message] = (),
            extra_data: Mapping[str, Any] | None = None,
            history: Iterable[HistoryEntry] | None = None,
        ) -> None: ...

    else:

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if args:
                raise positional_error(args)
            for name in kwargs:
                if name not in ACCEPTED:
                    raise unknown_keyword(name)
            self._setup(kwargs.get("id"))
            history = kwargs.get("history")
            messages = kwargs.get("messages", ())
            extra_data = kwargs.get("extra_data")
            if history is not None:
                self._init_history(history, messages, extra_data)
            else:
                self._init_messages(messages, extra_data)

    def _setup(self, state_id: Any) -> None:
        d = self.__dict__
        d["_id"] = uuid.uuid4().hex if state_id is None else check_id(state_id, "State(id=...)")
        d["_lock"] = threading.RLock()
        d["_edit_lock"] = threading.RLock()
        d["_snapshot"] = snap = StateSnapshot()
        d["_values"] = values_of(snap)
        d["_agent"] = None
        d["_running"] = False
        d["_compacting"] = None
        d["_depth"] = 0
        d["_run_context"] = None
        d["_saved_store"] = None
        d["_saved_count"] = 0
        d["_child_store"] = None
        d["_resume_info"] = None
        d["_children"] = {}
        d["_call_children"] = {}
        d["_closed_calls"] = {}

    def _init_history(self, history: Any, messages: Any, extra_data: Any) -> None:
        snap = history_snapshot(history, messages, extra_data)
        self.__dict__["_values"] = snap.__dict__
        self.__dict__["_snapshot"] = snap

    def _init_messages(self, messages: Any, extra_data: Any) -> None:
        for entry in initial_entries(messages, extra_data):
            self._commit_locked(entry)

    # --- properties ----------------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The store name of the State (given or random)."""
        return self._id

    @property
    def parent_id(self) -> str | None:
        """The id of the State whose tool call first ran this one (its first linked ``RunStartEntry``), or None."""
        return self._values["_parent_id"]

    @property
    def parent_call_id(self) -> str | None:
        """The id of that tool call; ``None`` together with ``parent_id``."""
        return self._values["_parent_call_id"]

    @property
    def history(self) -> tuple[HistoryEntry, ...]:
        """Every entry, oldest first."""
        return self.snapshot().history

    @property
    def messages(self) -> tuple[Message, ...]:
        """What the model sees at the next ``think``."""
        # Fast path: the tuple already built for the current values (a snapshot's first read stores it in the
        # values it shares, and a commit that adds no message keeps it) is returned without a new snapshot. Every
        # rule that changes the messages drops it, so it is always exact.
        found = self._values.get("messages")
        if found is not None:
            return found
        return self.snapshot().messages

    @property
    def pending_calls(self) -> tuple[ToolCall, ...]:
        """The calls of the open turn that have no result yet, in request order."""
        return self._values["pending_calls"]

    @property
    def turn(self) -> int:
        """Completed model replies, plus one while a request waits; a failed request takes its turn back."""
        return self._values["turn"]

    @property
    def usage(self) -> Usage:
        """Summed usage of replies, asks, model compactions and subagents. Never lowered by ``restore``."""
        return self._values["usage"]

    @property
    def extra_data(self) -> FrozenDict[str, Any]:
        """The user's JSON values (read-only; change them inside ``edit_extra_data()``). The model never sees them."""
        return self._values["extra_data"]

    @property
    def finished(self) -> bool:
        """Whether ``finish()`` was called (and not undone by ``restore``)."""
        return self._values["finished"]

    @property
    def answer(self) -> Any:
        """The latest non-None ``finish`` answer, else the text of the latest reply without tool calls, else None."""
        return self._values["answer"]

    @property
    def stopped(self) -> Stopped | None:
        """Why the current or last run is set to stop, or None."""
        return self._values["stopped"]

    @property
    def created_at(self) -> datetime | None:
        """The time of the first history entry; None while history is empty."""
        return self._values["created_at"]

    @property
    def updated_at(self) -> datetime | None:
        """The time of the latest history entry; None while history is empty."""
        return self._values["updated_at"]

    # --- public methods ------------------------------------------------------------------------------------

    def snapshot(self) -> StateSnapshot:
        """The current value of the State: the same object until something is recorded, and frozen."""
        snap = self._snapshot
        if snap is None:
            with self._lock:
                snap = self._snapshot
                if snap is None:
                    snap = self.__dict__["_snapshot"] = snapshot_of(self._values)
        return snap

    @property
    def _snap(self) -> StateSnapshot:
        return self.snapshot()

    def add_message(self, message: Message) -> None:
        """Add a user message or a notice. Allowed at any time; held until the turn in flight ends.

        Raises:
            TypeError: ``message`` is not a ``Message``.
            ValueError: it is not a user message, it is empty, or it has blocks other than text and images.
        """
        if not isinstance(message, Message):
            raise add_message_type_error(message)
        if message.role != "user":
            raise add_message_role_error(message)
        text = message.text
        if text.startswith("[notice] "):
            text = text[len("[notice] ") :]
        if not text.strip() and not any(isinstance(block, Image) for block in message.content):
            raise add_message_empty_error(message)
        with self._lock:
            snap = self._snap
            entry = MessageEntry.from_message(message, turn=snap.turn)
            straight = not snap._waiting and not snap._turn_calls
            self._commit_locked(entry)
            if straight and self._compacting is not None:
                self._compacting += 1

    def finish(self, answer: Any = None) -> None:
        """End the State for good, with an optional answer (kept in its JSON form; the last non-None one wins).

        Raises:
            TypeError: the answer cannot be saved as JSON.
        """
        content = StoppedByFinish(json_form(answer, "the finish() answer"))
        with self._lock:
            self._commit_locked(StopEntry(content=content, turn=self._snap.turn))

    def compact(self, summary: str) -> None:
        """Replace the messages with the first user message and ``summary``, without a model request.

        Raises:
            TypeError: ``summary`` is not a string.
            ValueError: it is empty, or calls are pending.
        """
        change = self._record_compact(summary, None, hand=True)
        self._notify(change)

    @contextmanager
    def edit_extra_data(self) -> Iterator[dict[str, Any]]:
        """Edit ``extra_data`` atomically: ``with state.edit_extra_data() as data: data["n"] = 1``.

        Blocks run one after another. The changes are recorded as one entry when the block ends normally (nothing
        when nothing changed or the block raised).

        Raises:
            TypeError: a value is not JSON.
        """
        with self._edit_lock:
            old = self._snap.extra_data
            data = thaw(old)
            yield data
            new = json_copy(data, "state.extra_data")
            changed: dict[str, Any] = {}
            for key, value in new.items():
                if key not in old or canonical(old[key]) != canonical(value):
                    changed[key] = value
            removed = tuple(key for key in old if key not in new)
            if not changed and not removed:
                return
            with self._lock:
                self._commit_locked(ExtraDataEntry(content=changed, removed=removed, turn=self._snap.turn))

    def clear_tool_results(self, keep_last: int = 5) -> None:
        """Blank all but the last ``keep_last`` tool results in ``messages`` (history keeps them).

        Raises:
            ValueError: ``keep_last`` is not an integer >= 0, or calls are pending.
        """
        if not isinstance(keep_last, int) or isinstance(keep_last, bool) or keep_last < 0:
            raise keep_last_error(keep_last)
        with self._lock:
            self._ensure_no_pending("clear_tool_results")
            messages = list(self._snap.messages)
            blocks = [block for m in messages for block in m.content if isinstance(block, ToolResultBlock)]
            candidates = blocks[: max(len(blocks) - keep_last, 0)]
            cleared: list[str] = []
            seen: set[str] = set()
            for block in candidates:
                if block.content != CLEARED and block.call_id not in seen:
                    seen.add(block.call_id)
                    cleared.append(block.call_id)
            if not cleared:
                return
            after = context_tokens(cleared_messages(messages, seen), 0)
            change = ContextChange(
                "clear_tool_results",
                before_tokens=context_tokens(messages, 0),
                after_tokens=after,
                cleared=tuple(cleared),
            )
            self._commit_locked(ContextChangeEntry(content=change, turn=self._snap.turn))
        self._notify(change)

    def restore(self, snapshot: StateSnapshot) -> None:
        """Go back to an earlier snapshot of this State (usage stays; history grows by one entry).

        Raises:
            TypeError: ``snapshot`` is not a ``StateSnapshot``.
            ValueError: it is not from this State, calls are pending, the model is being waited on, a compaction
                is under way, or the snapshot was taken while the model was being waited on.
        """
        if not isinstance(snapshot, StateSnapshot):
            raise restore_type_error(snapshot)
        with self._lock:
            snap = self._snap
            if not self._is_prefix(snapshot):
                raise restore_foreign_error()
            self._ensure_no_pending("restore")
            if snap._waiting:
                raise restore_busy_error("the model is being waited on")
            if self._compacting is not None:
                raise restore_busy_error("a compaction is under way")
            if snapshot._waiting:
                raise restore_waiting_snapshot_error()
            restored_to = history_list(snapshot)[1]
            memo = snap._memo
            if restored_to not in memo:
                memo[restored_to] = snapshot if "_h" in snapshot.__dict__ else self._replay_prefix(restored_to)
            target = memo[restored_to]
            change = ContextChange(
                "restore",
                before_tokens=context_tokens(snap.messages, 0),
                after_tokens=context_tokens(target.messages, 0),
                restored_to=restored_to,
            )
            self._commit_locked(ContextChangeEntry(content=change, turn=snap.turn))
        self._notify(change)

    def fork(self) -> State:
        """A new, independent State with this history (new random id, no store, not running, no linked Agent).

        Raises:
            ValueError: the model is being waited on.
        """
        with self._lock:
            snap = self._snap
            if snap._waiting:
                raise fork_waiting_error()
            copy = State.__new__(State)
            copy._setup(None)
            d = copy.__dict__
            forked = fork_snapshot(snap)
            d["_snapshot"] = forked
            d["_values"] = forked.__dict__
            d["_children"] = dict(self._children)
            d["_child_store"] = self._child_store
        return copy

    def child(self, child_id: str) -> State:
        """The State of a subagent that a tool call of this State started (from memory, else from its store).

        Raises:
            KeyError: ``child_id`` is not a direct child of this State.
            ValueError: the child is not in memory and this State has no store to load it from.
            LookupError: the store has no such State.
        """
        found = self._children.get(child_id)
        if found is not None:
            return found
        return self._child_store_for(child_id).load(child_id)

    async def achild(self, child_id: str) -> State:
        """The async twin of ``child``: loads with ``await store.aload(child_id)``."""
        found = self._children.get(child_id)
        if found is not None:
            return found
        return await self._child_store_for(child_id).aload(child_id)

    def _child_store_for(self, child_id: str) -> Any:
        if not any(type(entry) is ToolResultEntry and child_id in entry.child_ids for entry in self._snap.history):
            raise KeyError(
                f"{child_id!r} is not a subagent of State {self._id!r} (state.child() finds direct children)"
            )
        store = self._child_store if self._child_store is not None else self._saved_store
        if store is None:
            raise child_no_store_error(child_id, self._id)
        return store

    # --- printed forms -------------------------------------------------------------------------------------

    def __repr__(self) -> str:
        snap = self._snap
        end = " finished>" if snap.finished else ">"
        n_history = history_list(snap)[1]
        return (
            f"<State id={self._id!r} turn={snap.turn} history={n_history} messages={message_count(snap)} "
            f"pending={len(snap.pending_calls)}{end}"
        )

    def __str__(self) -> str:
        snap = self._snap
        lines = [line(entry) for entry in snap.history]
        if snap.stopped is not None:
            lines.append(f"done: {snap.stopped} ({turns(snap.turn)})")
        elif snap.finished:
            lines.append(f"done: stopped by finish ({turns(snap.turn)})")
        return "\n".join(lines)

    # --- attribute guard (hidden from type checkers, so typos are still reported statically) ---------------

    if not TYPE_CHECKING:

        def __setattr__(self, name: str, value: Any) -> None:
            if name.startswith("_"):
                object.__setattr__(self, name, value)
                return
            raise assignment_error(type(self), name)

        def __delattr__(self, name: str) -> None:
            if name.startswith("_"):
                object.__delattr__(self, name)
                return
            raise assignment_error(type(self), name)

        def __getattr__(self, name: str) -> Any:
            if name in GET_RETIRED:
                raise AttributeError(fix_message(*GET_RETIRED[name]), name=name, obj=self)
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'", name=name, obj=self)

    # --- recording operations (fixed names; used by the Agent, loops, runner and stores) -------------------

    def _commit_locked(self, entry: Any) -> None:
        """Fold one prepared entry into the State (the caller holds the lock, or the State is being built)."""
        d = self.__dict__
        d["_values"] = _fold_commit(self._values, entry)
        d["_snapshot"] = None

    def _commit(self, entry: HistoryEntry) -> None:
        """Record one prepared history entry through the fold, under the State lock.

        Raises:
            ValueError: the entry cannot follow the history (nothing changes).
        """
        with self._lock:
            self._commit_locked(entry)

    def _notify(self, change: ContextChange) -> None:
        agent = self._agent
        if agent is None:
            return
        reporter = agent._reporter_for(self)
        if reporter is not None:
            reporter.on_context_change(self, change)

    def _ensure_open(self, action: str) -> None:
        """Raise the ``ValueError`` for ``action`` on a finished State."""
        if self._values["finished"]:  # one value: no snapshot needed (one per use_tools otherwise)
            raise finished_error(action)

    def _ensure_no_pending(self, action: str) -> None:
        """Raise the ``ValueError`` for ``action`` while calls are pending."""
        pending = self._values["pending_calls"]
        if pending:
            shown = ", ".join(format_call(call) for call in pending)
            raise pending_error(action, shown)

    def _attach(self, agent: Any) -> None:
        """Link the State to ``agent`` (the latest Agent that used it)."""
        self._agent = agent

    def _start_run(
        self,
        agent: Any,
        info: AgentInfo,
        parent: tuple[str, str] | None = None,
        parent_depth: int = -1,
        context: Any = None,
    ) -> None:
        """Record ``run_start`` and take the running mark, in one step.

        Raises:
            ValueError: the State is already being run.
        """
        with self._lock:
            if self._running:
                raise running_error()
            parent_id, parent_call_id = parent if parent is not None else (None, None)
            self._commit_locked(
                RunStartEntry(content=info, parent_id=parent_id, parent_call_id=parent_call_id, turn=self._snap.turn)
            )
            self._running = True
            self._agent = agent
            self._run_context = context
            self._depth = parent_depth + 1

    def _end_run(self) -> None:
        """Release the running mark and forget the run context (the linked Agent stays)."""
        with self._lock:
            self._running = False
            self._run_context = None

    def _record_stop(self, stopped: Stopped | None) -> None:
        """Record ``StopEntry(stopped)``; ``None`` clears the stop."""
        with self._lock:
            self._commit_locked(StopEntry(content=stopped, turn=self._snap.turn))

    def _clear_stop(self) -> None:
        """Record ``StopEntry(None)`` only if a stop is set."""
        with self._lock:
            if self._snap.stopped is not None:
                self._commit_locked(StopEntry(content=None, turn=self._snap.turn))

    def _begin_think(self, model: str) -> None:
        """Record ``model_request`` for the next turn.

        Raises:
            ValueError: finished, calls pending, another think waiting, or no messages (nothing recorded).
        """
        with self._lock:
            values = self._values
            if values["finished"] or values["pending_calls"] or values["_waiting"] or not values["_mn"]:
                self._ensure_open("think")
                self._ensure_no_pending("think")
                if values["_waiting"]:
                    raise think_waiting_error()
                if not values["_late_notices"]:
                    raise think_empty_error()
            d = self.__dict__
            entry = make_request_entry("model_request", model, values["turn"] + 1, types_module._now())
            d["_values"] = _fold_commit(values, entry)
            d["_snapshot"] = None

    def _record_reply(self, reply: Reply) -> None:
        """Record ``model_reply``: the message joins the context, usage grows, its calls become pending."""
        with self._lock:
            d = self.__dict__
            values = d["_values"]
            entry = make_reply_entry("model_reply", reply, values["turn"], types_module._now())
            d["_values"] = _fold_commit(values, entry)
            d["_snapshot"] = None

    def _record_model_event(self, event: ModelEvent) -> None:
        """Record ``model_event``."""
        with self._lock:
            self._commit_locked(ModelEventEntry(content=event, turn=self._snap.turn))

    def _pending_slot(self, call: Any, same_object: bool = False) -> ToolCall | None:
        values = self._values
        calls = values["_turn_calls"]
        results = values["_turn_results"]
        if same_object:
            for index in range(len(calls)):
                if calls[index] is call and results[index] is None:
                    return calls[index]
            return None
        call_id = getattr(call, "id", None)
        for index in range(len(calls)):
            if results[index] is None and calls[index].id == call_id:
                return calls[index]
        return None

    def _close_slot(self, slot: ToolCall, content: Any, outcome: Any, error: BaseException | None) -> None:
        joined = self._call_children.get(slot.id) if self._call_children else None
        child_ids, usage, moved = joined.measure() if joined is not None else ((), None, [])
        d = self.__dict__
        values = d["_values"]
        if type(outcome) is ToolOutcomeKind and type(child_ids) is tuple:  # normalized: the fast path
            entry = make_result_entry(
                "tool_result",
                content,
                slot,
                outcome,
                False,
                error,
                child_ids,
                usage,
                values["turn"],
                types_module._now(),
            )
        else:
            entry = ToolResultEntry(
                content=content,
                call=slot,
                outcome=outcome,
                error=error,
                child_ids=child_ids,
                usage=usage,
                turn=values["turn"],
            )
        d["_values"] = _fold_commit(values, entry)
        d["_snapshot"] = None
        if joined is not None:
            del self._call_children[slot.id]
            joined.settle(moved)
            joined.call = slot
            self._closed_calls[id(slot)] = joined  # its children may still report usage in a late result

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
            values = self._values
            calls = values["_turn_calls"]
            if len(calls) == 1 and values["_turn_results"][0] is None and calls[0].id == getattr(call, "id", None):
                slot = calls[0]  # the usual turn: one call
            else:
                slot = self._pending_slot(call)
            if slot is None:
                if if_pending:
                    return False
                shown = format_call(call) if isinstance(call, ToolCall) else repr(call)
                raise ValueError(f"cannot record a result for a call that is not pending: {shown}")
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
            child_ids, usage, moved = joined.measure() if joined is not None else ((), None, [])
            self._commit_locked(
                ToolResultEntry(
                    content=content,
                    call=call,
                    outcome=outcome,
                    late=True,
                    error=error,
                    child_ids=child_ids,
                    usage=usage,
                    turn=self._snap.turn,
                )
            )
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
                shown = format_call(call) if isinstance(call, ToolCall) else repr(call)
                raise ValueError(f"cannot deny a call that is not pending: {shown}")
            self._close_slot(slot, reason, ToolOutcomeKind.DENIED, None)
            cancelled = list(self._snap.pending_calls)
            for other in cancelled:
                self._close_slot(other, STOPPED_TURN, ToolOutcomeKind.CANCELLED, None)
            if not self._snap.finished:
                self._commit_locked(StopEntry(content=StoppedByPermission(slot, permission), turn=self._snap.turn))
            return cancelled

    def _close_pending(self, error: BaseException) -> list[ToolCall]:
        """Close every pending call, in request order, because ``error`` left the run. Returns them."""
        with self._lock:
            calls = list(self._snap.pending_calls)
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
            snap = self._snap
            if not (snap._waiting and call is None):
                history, n = history_list(snap)
                for index in range(n - 1, -1, -1):
                    entry = history[index]
                    if type(entry) is ErrorEntry and entry.error is error:
                        return
                    if type(entry) is ModelRequestEntry or type(entry) is RunStartEntry:
                        break
            self._commit_locked(ErrorEntry(content=content, error=error, call=call, turn=snap.turn))

    def _record_ask(self, question: str, answer: Any, usage: Usage | None = None) -> None:
        """Record an ``ask`` exchange (answer in JSON form, or its repr); ``usage`` is added to the State's."""
        value = exchange_answer(question, answer)
        with self._lock:
            self._commit_locked(
                ExchangeEntry(kind="ask", content=Exchange(question, value), usage=usage, turn=self._snap.turn)
            )

    def _record_human(self, question: str, answer: Any) -> None:
        """Record a ``human`` exchange (answer in JSON form, or its repr)."""
        value = exchange_answer(question, answer)
        with self._lock:
            self._commit_locked(
                ExchangeEntry(kind="human", content=Exchange(question, value), usage=None, turn=self._snap.turn)
            )

    def _context_for_question(self) -> tuple[Message, ...]:
        """The messages an ``ask`` is built on: the messages, plus the open turn's results (or placeholders)."""
        snap = self._snap
        if not snap._turn_calls:
            return snap.messages
        blocks = tuple(
            result if result is not None else ToolResultBlock(call.id, NOT_RUN_YET, name=call.name)
            for call, result in zip(snap._turn_calls, snap._turn_results, strict=True)
        )
        return (*snap.messages, Message("user", blocks))

    def _begin_compact(self) -> None:
        """Open the model compaction window (count 0).

        Raises:
            ValueError: calls are pending, or another compaction is under way.
        """
        with self._lock:
            self._ensure_no_pending("compact")
            if self._compacting is not None:
                raise compact_window_error()
            self._compacting = 0

    def _compact_done(self, summary: str, usage: Usage | None) -> None:
        """Record the model's summary, keeping the messages added during the window, and close the window."""
        change = self._record_compact(summary, usage, hand=False)
        self._notify(change)

    def _end_compact(self) -> None:
        """Close the model compaction window (idempotent)."""
        with self._lock:
            self._compacting = None

    def _record_compact(self, summary: Any, usage: Usage | None, *, hand: bool) -> ContextChange:
        if not isinstance(summary, str):
            raise compact_type_error(summary)
        if not summary.strip():
            raise compact_empty_error(summary)
        with self._lock:
            self._ensure_no_pending("compact")
            snap = self._snap
            kept = 0 if hand or self._compacting is None else self._compacting
            messages = snap.messages
            head = snap._first_user_message
            after: list[Message] = [] if head is None else [head]
            after.append(Message.user(SUMMARY_PREFIX + summary))
            if kept:
                after.extend(messages[-kept:])
            change = ContextChange(
                "compact",
                before_tokens=context_tokens(messages, 0),
                after_tokens=context_tokens(after, 0),
                summary=summary,
                kept=kept,
                usage=usage,
            )
            self._commit_locked(ContextChangeEntry(content=change, turn=snap.turn))
            if hand:
                if self._compacting is not None:
                    self._compacting = 0
            else:
                self._compacting = None
        return change

    # --- subagents -------------------------------------------------------------------------------------------

    def _children_of(self, call_id: str) -> tuple[str, ...]:
        """The ids of the children started by the open call ``call_id``, in start order."""
        joined = self._call_children.get(call_id)
        if joined is None:
            return ()
        return tuple(child.id for child, _ in joined.children)

    def _closed_joined(self, call: Any, create: bool = False) -> Joined | None:
        """The children record of the call object ``call`` that this State closed (None if it did not).

        Calls closed with children keep a record; for another call, ``create`` looks for its closing entry in
        history (only a tool still running after its call was closed gets here) and starts a record.
        """
        found = self._closed_calls.get(id(call))
        if found is not None and found.call is call:
            return found
        if not create:
            return None
        history, n = history_list(self._snap)
        for index in range(n - 1, -1, -1):
            entry = history[index]
            if type(entry) is ToolResultEntry and entry.call is call and not entry.late:
                joined = self._closed_calls[id(call)] = Joined(call)
                return joined
        return None

    def _add_child(self, call_id: str, child: State, call: ToolCall | None = None) -> None:
        """Register ``child`` as started by the call ``call_id`` (or by the closed call object ``call``)."""
        with self._lock:
            self._children[child.id] = child
            child._depth = self._depth + 1
            if call is not None and self._pending_slot(call, same_object=True) is None:
                closed = self._closed_joined(call, create=True)
                if closed is not None:
                    closed.add(child)
                    return
            joined = self._call_children.get(call_id)
            if joined is None:
                joined = self._call_children[call_id] = Joined(None)
            joined.add(child)

    # --- store support ---------------------------------------------------------------------------------------

    def _save_batch(self, store: Any) -> tuple[bool, int, int, StateSnapshot]:
        """Under the lock: check the store binding; return ``(create, start, end, snapshot)`` of what to write.

        Raises:
            ValueError: the State is saved in another store.
        """
        with self._lock:
            bound = self._saved_store
            if bound is not None and not (bound == store):
                raise store_binding_error(self._id, store, bound)
            snap = self._snap
            return bound is None, self._saved_count, history_list(snap)[1], snap

    @staticmethod
    def _history_slice(snapshot: StateSnapshot, start: int, end: int) -> list[HistoryEntry]:
        """``snapshot.history[start:end]`` without building the whole history tuple (for saves)."""
        history, n = history_list(snapshot)
        return history[start : min(end, n)]

    def _mark_saved(self, store: Any, end: int) -> None:
        """After a successful write: bind to ``store`` and count the entries up to ``end`` as saved."""
        with self._lock:
            if self._saved_store is None:
                self._saved_store = store
            if self._child_store is None:
                self._child_store = store
            self._saved_count = max(self._saved_count, end)

    @classmethod
    def _from_saved(cls, state_id: str, entries: Iterable[HistoryEntry], store: Any) -> State:
        """Rebuild a saved State (02 §8.8): replay, bind to ``store``, and close a turn left open (unsaved).

        Raises:
            ValueError: the entries cannot be replayed (the saved State is damaged).
        """
        entries = list(entries)
        try:
            state = State(id=state_id, history=entries)
        except ValueError as error:
            reason = str(error).split("\nFix: ", 1)[0]
            raise damaged_error(state_id, reason) from error
        state._saved_store = store
        state._child_store = store
        state._saved_count = len(entries)
        for entry in reversed(entries):
            if type(entry) is RunStartEntry:
                state._resume_info = entry.content
                break
        with state._lock:
            if state._snap._waiting:
                state._commit_locked(ErrorEntry(content=STOPPED_WAITING, call=None, turn=state._snap.turn))
            for call in state._snap.pending_calls:
                state._commit_locked(
                    ToolResultEntry(
                        content=UNSAVED_RESULT, call=call, outcome=ToolOutcomeKind.ABORTED, turn=state._snap.turn
                    )
                )
        return state

    # --- helpers ---------------------------------------------------------------------------------------------

    def _is_prefix(self, snapshot: StateSnapshot) -> bool:
        mine, n = history_list(self._snap)
        theirs, m = history_list(snapshot)
        if m > n:
            return False
        if theirs is mine:
            return True
        for index in range(m):
            a = theirs[index]
            b = mine[index]
            if a is not b and a != b:
                return False
        return True

    def _replay_prefix(self, length: int) -> StateSnapshot:
        history, _ = history_list(self._snap)
        return replay(history[:length], self._snap._memo)


# help(State) and inspect.signature(State) show the keywords, not the (*args, **kwargs) that catches misuse.
State.__init__.__signature__ = keyword_signature()  # type: ignore[attr-defined]
