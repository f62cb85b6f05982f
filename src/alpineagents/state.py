"""``State``: one conversation and its complete record, and ``StateSnapshot``, its frozen value at one moment.

History is the only source of truth: every value of a State is the fold of its history entries (``fold``). A State
changes only through its own methods, each of which validates first and then records entries under the State's
lock. The recording operations (the underscore methods inherited from ``_history.recording.Recorder``, and the run,
compaction and store bookkeeping below) are what the Agent, the loops, the tool runner and the stores use to record
what happens. The rules of the fold, the decoder of the saved form and the texts of the misuse errors live in
``alpineagents._history``; the public names defined there (``fold``, ``check_id``, the result texts) are imported here.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from alpineagents._frozen import FrozenDict, thaw
from alpineagents._history import misuse
from alpineagents._history.approvals import Approvals
from alpineagents._history.attributes import assignment_error, missing_attribute_error
from alpineagents._history.budget import Budgets
from alpineagents._history.children import Joined
from alpineagents._history.closing import INTERRUPTED as INTERRUPTED
from alpineagents._history.closing import STOPPED_TURN as STOPPED_TURN
from alpineagents._history.closing import UNSAVED_RESULT as UNSAVED_RESULT
from alpineagents._history.closing import closed_outcome as closed_outcome
from alpineagents._history.closing import closed_result as closed_result
from alpineagents._history.construction import check_keywords, history_snapshot, initial_entries, keyword_signature
from alpineagents._history.fold import CLEARED, SUMMARY_PREFIX, Accumulator, cleared_messages, replay
from alpineagents._history.fold import LATE_RESULT as LATE_RESULT
from alpineagents._history.fold import fold as fold
from alpineagents._history.ids import check_id as check_id
from alpineagents._history.json_values import answer as answer_form
from alpineagents._history.json_values import json_copy
from alpineagents._history.lines import history_lines
from alpineagents._history.recording import NOT_RUN_YET as NOT_RUN_YET
from alpineagents._history.recording import Recorder
from alpineagents._history.snapshot import StateSnapshot, history_of, is_folded
from alpineagents._tokens import context_tokens
from alpineagents._values.approval import children_named
from alpineagents._values.budget import WAITING_STOPS
from alpineagents._values.numbers import is_whole
from alpineagents.errors import fix_message
from alpineagents.types import (
    AgentInfo,
    ContextChange,
    ContextChangeEntry,
    ErrorEntry,
    ExtraDataEntry,
    HistoryEntry,
    Image,
    Message,
    MessageEntry,
    RunStartEntry,
    StopEntry,
    Stopped,
    StoppedByFinish,
    ToolCall,
    ToolOutcomeKind,
    ToolResultBlock,
    ToolResultEntry,
    Usage,
)

if TYPE_CHECKING:  # the layers above the State, which it only holds and hands back
    from alpineagents._turn.context import RunContext
    from alpineagents.agent import Agent
    from alpineagents.store import Store

__all__ = ["State", "StateSnapshot"]


STOPPED_WAITING = "(process stopped while waiting for the model)"


class _ChildStore(Protocol):
    """What ``child``/``achild`` need from the store a State is bound to."""

    def load(self, state_id: str) -> State: ...

    async def aload(self, state_id: str) -> State: ...


class State(Recorder, Approvals, Budgets):
    """One conversation: an id and an append-only history; every other value is derived from the history.

    Build it with keywords only: ``State(messages=[Message.user("Fix the bug")])``, ``State(history=...)`` or
    ``State()``. All methods are thread-safe. ``==`` is identity; compare values through ``snapshot()``.
    """

    _id: str
    _lock: threading.RLock
    _edit_lock: threading.RLock
    _acc: Accumulator
    _snapshot: StateSnapshot | None
    _agent: Agent | None
    _running: bool
    _compacting: int | None
    _depth: int
    _run_context: RunContext | None
    _saved_store: Store | None
    _saved_count: int
    _child_store: _ChildStore | None
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
            check_keywords(args, kwargs)
            self._setup(kwargs.get("id"))
            history = kwargs.get("history")
            messages = kwargs.get("messages", ())
            extra_data = kwargs.get("extra_data")
            if history is not None:
                snap = history_snapshot(history, messages, extra_data)
                self._acc = Accumulator(snap)
                self._snapshot = snap
            else:
                for entry in initial_entries(messages, extra_data):
                    self._commit_locked(entry)

    def _setup(self, state_id: object) -> None:
        self._id = uuid.uuid4().hex if state_id is None else check_id(state_id, "State(id=...)")
        self._lock = threading.RLock()
        self._edit_lock = threading.RLock()
        self._acc = Accumulator()
        self._snapshot = None
        self._agent = None
        self._running = False
        self._compacting = None
        self._depth = 0
        self._run_context = None
        self._saved_store = None
        self._saved_count = 0
        self._child_store = None
        self._resume_info = None
        self._children = {}
        self._call_children = {}
        self._closed_calls = {}
        self._tap = None

    # --- properties (each one read of the current values, without the lock) -------------------------------------

    @property
    def id(self) -> str:
        """The store name of the State (given or random)."""
        return self._id

    @property
    def parent_id(self) -> str | None:
        """The id of the State whose tool call first ran this one (its first linked ``RunStartEntry``), or None."""
        return self._acc.parent_id

    @property
    def parent_call_id(self) -> str | None:
        """The id of that tool call; ``None`` together with ``parent_id``."""
        return self._acc.parent_call_id

    @property
    def history(self) -> tuple[HistoryEntry, ...]:
        """Every entry, oldest first."""
        return self.snapshot().history

    @property
    def messages(self) -> tuple[Message, ...]:
        """What the model sees at the next ``think``."""
        found = self._acc.messages_tuple  # built once until the messages change
        if found is not None:
            return found
        with self._lock:
            return self._acc.messages_now()

    @property
    def pending_calls(self) -> tuple[ToolCall, ...]:
        """The calls of the open turn that have no result yet, in request order."""
        return self._acc.pending_calls

    @property
    def turn(self) -> int:
        """Completed model replies, plus one while a request waits; a failed request takes its turn back."""
        return self._acc.turn

    @property
    def usage(self) -> Usage:
        """Summed usage of replies, asks, model compactions and subagents. Never lowered by ``restore``."""
        return self._acc.usage.value()

    @property
    def extra_data(self) -> FrozenDict[str, Any]:
        """The user's JSON values (read-only; change them inside ``edit_extra_data()``). The model never sees them."""
        return self._acc.extra_data

    @property
    def finished(self) -> bool:
        """Whether ``finish()`` was called (and not undone by ``restore``)."""
        return self._acc.finished

    @property
    def answer(self) -> Any:
        """The latest non-None ``finish`` answer, else the text of the latest reply without tool calls, else None."""
        return self._acc.answer

    @property
    def stopped(self) -> Stopped | None:
        """Why the current or last run is set to stop, or None."""
        return self._acc.stopped

    @property
    def created_at(self) -> datetime | None:
        """The time of the first history entry; None while history is empty."""
        return self._acc.created_at

    @property
    def updated_at(self) -> datetime | None:
        """The time of the latest history entry; None while history is empty."""
        return self._acc.updated_at

    # --- public methods ------------------------------------------------------------------------------------

    def snapshot(self) -> StateSnapshot:
        """The current value of the State: the same object until something is recorded, and frozen."""
        snap = self._snapshot
        if snap is None:
            with self._lock:
                snap = self._snapshot
                if snap is None:
                    snap = self.__dict__["_snapshot"] = (
                        self._acc.freeze()
                    )  # past the attribute guard (see _commit_locked)
        return snap

    def add_message(self, message: Message) -> None:
        """Add a user message or a notice. Allowed at any time; held until the turn in flight ends.

        Raises:
            TypeError: ``message`` is not a ``Message``.
            ValueError: it is not a user message, it is empty, or it has blocks other than text and images.
        """
        if not isinstance(message, Message):
            raise misuse.add_message_type_error(message)
        if message.role != "user":
            raise misuse.add_message_role_error(message)
        text = message.text
        if text.startswith("[notice] "):
            text = text[len("[notice] ") :]
        if not text.strip() and not any(isinstance(block, Image) for block in message.content):
            raise misuse.add_message_empty_error(message)
        with self._lock:
            acc = self._acc
            entry = MessageEntry.from_message(message, turn=acc.turn)
            straight = not acc.waiting and not acc.turn_calls
            self._commit_locked(entry)
            if straight and self._compacting is not None:
                self._compacting += 1

    def finish(self, answer: object = None) -> None:
        """End the State for good, with an optional answer (kept in its JSON form; the last non-None one wins).

        Raises:
            TypeError: the answer cannot be saved as JSON.
        """
        self._record(StopEntry, StoppedByFinish(answer_form(answer, "the finish() answer")))

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
            old = self._acc.extra_data
            data = thaw(old)
            yield data
            new = json_copy(data, "state.extra_data")
            # Values compare by their JSON text with sorted keys: 1, 1.0 and True differ, key order does not.
            changed = {
                key: value for key, value in new.items() if key not in old or _json_text(old[key]) != _json_text(value)
            }
            removed = tuple(key for key in old if key not in new)
            if changed or removed:
                with self._lock:
                    self._commit_locked(ExtraDataEntry(content=changed, removed=removed, turn=self._acc.turn))

    def clear_tool_results(self, keep_last: int = 5) -> None:
        """Blank all but the last ``keep_last`` tool results in ``messages`` (history keeps them).

        Raises:
            ValueError: ``keep_last`` is not an integer >= 0, or calls are pending.
        """
        if not is_whole(keep_last) or keep_last < 0:
            raise misuse.keep_last_error(keep_last)
        with self._lock:
            self._ensure_no_pending("clear_tool_results")
            messages = list(self._acc.messages_now())
            blocks = [block for m in messages for block in m.content if isinstance(block, ToolResultBlock)]
            cleared: dict[str, None] = {}  # the call ids in order, each once
            for block in blocks[: max(len(blocks) - keep_last, 0)]:
                if block.content != CLEARED:
                    cleared.setdefault(block.call_id)
            if not cleared:
                return
            change = ContextChange(
                "clear_tool_results",
                before_tokens=context_tokens(messages, 0),
                after_tokens=context_tokens(cleared_messages(messages, set(cleared)), 0),
                cleared=tuple(cleared),
            )
            self._commit_locked(ContextChangeEntry(content=change, turn=self._acc.turn))
        self._notify(change)

    def restore(self, snapshot: StateSnapshot) -> None:
        """Go back to an earlier snapshot of this State (usage stays; history grows by one entry).

        Raises:
            TypeError: ``snapshot`` is not a ``StateSnapshot``.
            ValueError: it is not from this State, calls are pending, the model is being waited on, a compaction
                is under way, or the snapshot was taken while the model was being waited on.
        """
        if not isinstance(snapshot, StateSnapshot):
            raise misuse.restore_type_error(snapshot)
        with self._lock:
            acc = self._acc
            if not self._is_prefix(snapshot):
                raise ValueError(fix_message(*misuse.RESTORE_FOREIGN))
            self._ensure_no_pending("restore")
            if acc.waiting:
                raise misuse.restore_busy_error("the model is being waited on")
            if self._compacting is not None:
                raise misuse.restore_busy_error("a compaction is under way")
            if snapshot._waiting:
                raise ValueError(fix_message(*misuse.RESTORE_WAITING_SNAPSHOT))
            restored_to = len(history_of(snapshot))
            if restored_to not in acc.memo:
                # A snapshot the fold made is the fold of its history; for one built by hand, the history is replayed.
                acc.memo[restored_to] = snapshot if is_folded(snapshot) else replay(acc.history[:restored_to], acc.memo)
            change = ContextChange(
                "restore",
                before_tokens=context_tokens(acc.messages_now(), 0),
                after_tokens=context_tokens(acc.memo[restored_to].messages, 0),
                restored_to=restored_to,
            )
            self._commit_locked(ContextChangeEntry(content=change, turn=acc.turn))
        self._notify(change)

    def fork(self) -> State:
        """A new, independent State with this history (new random id, no store, not running, no linked Agent).

        Raises:
            ValueError: the model is being waited on.
        """
        with self._lock:
            if self._acc.waiting:
                raise ValueError(fix_message(*misuse.FORK_WAITING))
            copy = State.__new__(State)
            copy._setup(None)
            acc = copy._acc = Accumulator(self.snapshot(), memo={})
            acc.history = acc.history[: acc.history_len]  # shares no list with this State
            acc.messages = acc.messages[: acc.messages_len]
            copy._snapshot = acc.freeze()
            copy._children = dict(self._children)
            copy._child_store = self._child_store
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

    def _child_for_wait(self, child_id: str) -> State:
        """The subagent State a waiting call of this State waits on: from memory, else from the store."""
        found = self._children.get(child_id)
        if found is not None:
            return found
        store = self._child_store if self._child_store is not None else self._saved_store
        if store is None:
            raise misuse.child_no_store_error(child_id, self._id)
        return store.load(child_id)

    def _child_store_for(self, child_id: str) -> _ChildStore:
        if not any(child_id in children_named(entry) for entry in self.history):
            raise KeyError(
                f"{child_id!r} is not a subagent of State {self._id!r} (state.child() finds direct children)"
            )
        store = self._child_store if self._child_store is not None else self._saved_store
        if store is None:
            raise misuse.child_no_store_error(child_id, self._id)
        return store

    def __copy__(self) -> State:
        """A second State object for the same conversation (same id, lock and history so far)."""
        clone = State.__new__(State)
        clone.__dict__.update(self.__dict__)
        clone._acc = Accumulator(self.snapshot())  # its own values from here on (the lists stay shared)
        return clone

    # --- printed forms -------------------------------------------------------------------------------------

    def __repr__(self) -> str:
        acc = self._acc
        end = " finished>" if acc.finished else ">"
        return (
            f"<State id={self._id!r} turn={acc.turn} history={acc.history_len} messages={acc.messages_len} "
            f"pending={len(acc.pending_calls)}{end}"
        )

    def __str__(self) -> str:
        snap = self.snapshot()
        return history_lines(snap.history, snap.stopped, snap.finished, snap.turn)

    # --- attribute guard (hidden from type checkers, so typos are still reported statically) ---------------

    if not TYPE_CHECKING:

        def __setattr__(self, name: str, value: object) -> None:
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
            raise missing_attribute_error(self, name)

    # --- run and compaction bookkeeping (fixed names; used by the Agent, loops, runner and stores) ----------

    def _notify(self, change: ContextChange) -> None:
        agent = self._agent
        if agent is None:
            return
        reporter = agent._reporter_for(self)  # pyright: ignore[reportPrivateUsage]
        if reporter is not None:
            reporter.on_context_change(self, change)

    def _attach(self, agent: Agent) -> None:
        """Link the State to ``agent`` (the latest Agent that used it)."""
        self._agent = agent

    def _start_run(
        self,
        agent: Agent,
        info: AgentInfo,
        parent: tuple[str, str] | None = None,
        parent_depth: int = -1,
        context: RunContext | None = None,
    ) -> None:
        """Record ``run_start`` and take the running mark, in one step.

        Raises:
            ValueError: the State is already being run.
        """
        with self._lock:
            if self._running:
                raise ValueError(fix_message(*misuse.RUNNING))
            parent_id, parent_call_id = parent if parent is not None else (None, None)
            feed = getattr(context, "feed", None)  # the stream that follows the run, from its first entry
            if feed is not None:
                self._tap = feed
            self._commit_locked(
                RunStartEntry(content=info, parent_id=parent_id, parent_call_id=parent_call_id, turn=self._acc.turn)
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
            self._tap = None

    def _begin_compact(self) -> None:
        """Open the model compaction window (count 0).

        Raises:
            ValueError: calls are pending, or another compaction is under way.
        """
        with self._lock:
            self._ensure_no_pending("compact")
            if self._compacting is not None:
                raise ValueError(fix_message(*misuse.COMPACT_WINDOW))
            self._compacting = 0

    def _compact_done(self, summary: str, usage: Usage | None) -> None:
        """Record the model's summary, keeping the messages added during the window, and close the window."""
        change = self._record_compact(summary, usage, hand=False)
        self._notify(change)

    def _end_compact(self) -> None:
        """Close the model compaction window (idempotent)."""
        with self._lock:
            self._compacting = None

    def _record_compact(self, summary: object, usage: Usage | None, *, hand: bool) -> ContextChange:
        if not isinstance(summary, str):
            raise misuse.compact_type_error(summary)
        if not summary.strip():
            raise misuse.compact_empty_error(summary)
        with self._lock:
            self._ensure_no_pending("compact")
            acc = self._acc
            kept = 0 if hand or self._compacting is None else self._compacting
            messages = acc.messages_now()
            head = acc.first_user_message
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
            self._commit_locked(ContextChangeEntry(content=change, turn=acc.turn))
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

    def _add_child(self, call_id: str, child: State, call: ToolCall | None = None, from_start: bool = False) -> None:
        """Register ``child`` as started by the call ``call_id`` (or by the closed call object ``call``); counted
        from its usage now, or from nothing (``from_start``: a waiting subagent run again)."""
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
            joined.add(child, from_start)

    # --- store support ---------------------------------------------------------------------------------------

    def _save_batch(self, store: Store) -> tuple[bool, int, int, StateSnapshot]:
        """Under the lock: check the store binding; return ``(create, start, end, snapshot)`` of what to write.

        Raises:
            ValueError: the State is saved in another store.
        """
        with self._lock:
            bound = self._saved_store
            if bound is not None and not (bound == store):
                raise misuse.store_binding_error(self._id, store, bound)
            return bound is None, self._saved_count, self._acc.history_len, self.snapshot()

    @staticmethod
    def _history_slice(snapshot: StateSnapshot, start: int, end: int) -> list[HistoryEntry]:
        """``snapshot.history[start:end]`` without building the whole history tuple (for saves)."""
        history = history_of(snapshot)
        return history.items[start : min(end, history.length)]

    def _mark_saved(self, store: Store, end: int) -> None:
        """After a successful write: bind to ``store`` and count the entries up to ``end`` as saved."""
        with self._lock:
            if self._saved_store is None:
                self._saved_store = store
            if self._child_store is None:
                self._child_store = store
            self._saved_count = max(self._saved_count, end)

    @classmethod
    def _from_saved(cls, state_id: str, entries: Iterable[HistoryEntry], store: Store) -> State:
        """Rebuild a saved State: replay, bind to ``store``, and close a turn left open (without saving).

        A State saved while the model was being waited on gets an error that takes the request back; each call
        still pending gets the unknown-result text (the tool never runs twice).

        Raises:
            ValueError: the entries cannot be replayed (the saved State is damaged).
        """
        entries = list(entries)
        try:
            state = State(id=state_id, history=entries)
        except ValueError as error:
            reason = str(error).split("\nFix: ", 1)[0]
            raise misuse.damaged_error(state_id, reason) from error
        state._saved_store = state._child_store = store
        state._saved_count = len(entries)
        state._resume_info = next((e.content for e in reversed(entries) if type(e) is RunStartEntry), None)
        with state._lock:
            acc = state._acc
            if acc.waiting:
                state._commit_locked(ErrorEntry(content=STOPPED_WAITING, call=None, turn=acc.turn))
            if type(acc.stopped) in WAITING_STOPS:  # no tool of that turn ran: its calls wait for a person
                return state
            for call in acc.pending_calls:
                state._commit_locked(
                    ToolResultEntry(content=UNSAVED_RESULT, call=call, outcome=ToolOutcomeKind.ABORTED, turn=acc.turn)
                )
        return state

    # --- helpers ---------------------------------------------------------------------------------------------

    def _is_prefix(self, snapshot: StateSnapshot) -> bool:
        acc = self._acc
        theirs = history_of(snapshot)
        if theirs.length > acc.history_len:
            return False
        if theirs.items is acc.history:
            return True
        mine = acc.history
        return all(a is b or a == b for a, b in zip(theirs.items[: theirs.length], mine, strict=False))


def _json_text(value: object) -> str:
    return json.dumps(value, sort_keys=True)


# help(State) and inspect.signature(State) show the keywords, not the (*args, **kwargs) that catches misuse.
State.__init__.__signature__ = keyword_signature()  # type: ignore[attr-defined]
