"""The fold: how each history entry changes the values of a State, written once.

Every value of a State is the fold of its history. The fold works on an ``Accumulator``, a mutable record of every
value of a snapshot, and each rule below changes it for one kind of entry, checking its precondition before it
changes anything. Three users share the rules:

- ``fold(snapshot, entry)``, the pure function: an accumulator is made from the snapshot, the entry is applied, and
  the result is frozen into a new snapshot;
- a ``State``, which keeps one accumulator and applies each entry it records to it in place (one entry costs the
  same at 10 or 100,000 entries), freezing a snapshot only when one is asked for;
- ``replay(entries)`` (``State(history=...)`` and loading from a store), which applies every entry to one fresh
  accumulator and freezes once at the end.

The two sequences that grow with history (``history`` and ``messages``) live in shared, append-only lists: a
snapshot keeps a list and its length. Appending to a list that a newer snapshot already extended
(an old snapshot folded again) copies the prefix first, so every snapshot keeps its value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial
from itertools import compress
from operator import is_
from typing import Any, TypeVar

from alpineagents import types as t
from alpineagents._frozen import FrozenDict
from alpineagents._history.snapshot import SHARED, StateSnapshot, history_of, messages_of, prefix_tuple
from alpineagents._values.construct import maker
from alpineagents._values.usage import UsageTotal
from alpineagents.types import HistoryEntry, Message, ToolCall, ToolResultBlock, Usage

make_message = maker(Message)
make_result_block = maker(ToolResultBlock)

__all__ = [
    "CLEARED",
    "LATE_RESULT",
    "SUMMARY_PREFIX",
    "Accumulator",
    "EntryCannotFollow",
    "cleared_messages",
    "first_non_entry",
    "fold",
    "replay",
]

CLEARED = "(cleared: kept in history)"
SUMMARY_PREFIX = "[notice] Summary so far:\n"
LATE_RESULT = "[notice] interrupted {call} finished later: {content}"


_DONE = t.ToolOutcomeKind.DONE
_EMPTY_USAGE = Usage()
_new = object.__new__
T = TypeVar("T")


def _branch(items: list[T], n: int, value: T) -> list[T]:
    """A new list: the first ``n`` items of ``items``, then ``value``.

    Used when another snapshot of the same list has grown it past ``n`` (an old snapshot folded again, or two folds
    of one snapshot at once), so that both keep their values.
    """
    branch = items[:n]
    branch.append(value)
    return branch


class Accumulator:
    """Every value of a snapshot, mutable: what the rules of the fold change.

    ``history``/``messages`` are shared lists of which the first ``history_len``/``messages_len`` items belong to
    this accumulator; ``messages_tuple`` is the tuple of those messages once built (``None`` after a change).
    """

    __slots__ = (
        "pending_calls",
        "turn",
        "usage",
        "extra_data",
        "finished",
        "answer",
        "stopped",
        "created_at",
        "updated_at",
        "turn_calls",
        "turn_results",
        "queued",
        "waiting",
        "late_notices",
        "first_user_message",
        "last_reply_text",
        "finish_answer",
        "parent_id",
        "parent_call_id",
        "memo",
        "history",
        "history_len",
        "messages",
        "messages_len",
        "messages_tuple",
    )

    pending_calls: tuple[ToolCall, ...]
    turn: int
    usage: UsageTotal
    extra_data: FrozenDict[str, Any]
    finished: bool
    answer: Any
    stopped: t.Stopped | None
    created_at: datetime | None
    updated_at: datetime | None
    turn_calls: tuple[ToolCall, ...]
    turn_results: tuple[ToolResultBlock | None, ...]
    queued: tuple[Message, ...]
    waiting: bool
    late_notices: tuple[str, ...]
    first_user_message: Message | None
    last_reply_text: str | None
    finish_answer: Any
    parent_id: str | None
    parent_call_id: str | None
    memo: dict[int, StateSnapshot]
    history: list[HistoryEntry]
    history_len: int
    messages: list[Message]
    messages_len: int
    messages_tuple: tuple[Message, ...] | None

    def __init__(self, snap: StateSnapshot | None = None, memo: dict[int, StateSnapshot] | None = None) -> None:
        """The values of ``snap`` (an empty history when ``None``); ``memo`` replaces its restore cache."""
        if snap is None:
            snap = _EMPTY
        self.take(snap)
        self.usage = UsageTotal(snap.usage)
        self.created_at = snap.created_at
        self.updated_at = snap.updated_at
        self.parent_id = snap._parent_id
        self.parent_call_id = snap._parent_call_id
        self.memo = ({} if snap is _EMPTY else snap._memo) if memo is None else memo
        history = history_of(snap)
        self.history = history.items
        self.history_len = history.length

    def freeze(self) -> StateSnapshot:
        """The snapshot of these values. It shares only the append-only lists, so later changes never reach it.

        It is built the way ``copy`` and ``pickle`` build an instance (a new object, then its attribute dict),
        which keeps the cost of a snapshot far below that of the 22-parameter ``__init__``.
        """
        snap = _new(StateSnapshot)
        snap.__dict__.update(
            {
                "pending_calls": self.pending_calls,
                "turn": self.turn,
                "usage": self.usage.value(),
                "extra_data": self.extra_data,
                "finished": self.finished,
                "answer": self.answer,
                "stopped": self.stopped,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
                "_turn_calls": self.turn_calls,
                "_turn_results": self.turn_results,
                "_queued": self.queued,
                "_waiting": self.waiting,
                "_late_notices": self.late_notices,
                "_first_user_message": self.first_user_message,
                "_last_reply_text": self.last_reply_text,
                "_finish_answer": self.finish_answer,
                "_parent_id": self.parent_id,
                "_parent_call_id": self.parent_call_id,
                "_memo": self.memo,
                SHARED: (self.history, self.history_len, self.messages, self.messages_len),
            }
        )
        if self.messages_tuple is not None:
            snap.__dict__["messages"] = self.messages_tuple
        return snap

    def messages_now(self) -> tuple[Message, ...]:
        """The messages as a tuple, built once until the next change."""
        found = self.messages_tuple
        if found is None:
            found = self.messages_tuple = prefix_tuple(self.messages, self.messages_len)
        return found

    # --- changes shared by the rules --------------------------------------------------------------------------

    def add_message(self, message: Message) -> None:
        n = self.messages_len
        items = self.messages
        if len(items) == n:  # the usual case: this accumulator holds the end of the list
            items.append(message)
            if items[n] is not message:  # another fold of the same snapshot appended first
                self.messages = _branch(items, n, message)
        else:
            self.messages = _branch(items, n, message)
        self.messages_len = n + 1
        self.messages_tuple = None

    def set_messages(self, messages: list[Message]) -> None:
        self.messages = messages
        self.messages_len = len(messages)
        self.messages_tuple = None

    def release_queued(self) -> None:
        """Move the held messages into the messages, in arrival order."""
        for message in self.queued:
            self.add_message(message)
        self.queued = ()

    def add_usage(self, usage: Usage | None) -> None:
        if usage is not None:
            self.usage.add(usage)

    def set_answer(self) -> None:
        finish = self.finish_answer
        self.answer = finish if finish is not None else self.last_reply_text

    def take(self, snap: StateSnapshot) -> None:
        """Take every value of ``snap`` except history, usage, times, the parent link and the memo (a restore takes
        just these)."""
        self.pending_calls = snap.pending_calls
        self.turn = snap.turn
        self.extra_data = snap.extra_data
        self.finished = snap.finished
        self.answer = snap.answer
        self.stopped = snap.stopped
        self.turn_calls = snap._turn_calls
        self.turn_results = snap._turn_results
        self.queued = snap._queued
        self.waiting = snap._waiting
        self.late_notices = snap._late_notices
        self.first_user_message = snap._first_user_message
        self.last_reply_text = snap._last_reply_text
        self.finish_answer = snap._finish_answer
        shared = messages_of(snap)
        self.messages = shared.items
        self.messages_len = shared.length
        self.messages_tuple = snap.__dict__.get("messages")

    # --- applying entries -----------------------------------------------------------------------------------

    def apply(self, entry: HistoryEntry) -> None:
        """Fold ``entry`` in: its rule, then history and times. Raises the fold ``ValueError`` before any change."""
        (_RULES.get(type(entry)) or _rule(entry))(self, entry)
        n = self.history_len
        items = self.history
        if len(items) == n:
            items.append(entry)
        if items[n] is not entry:  # a branch (as in ``add_message``): restore targets beyond it are the other's
            self.history = _branch(items, n, entry)
            self.memo = {k: v for k, v in self.memo.items() if k <= n}
        self.history_len = n + 1
        if n == 0:
            self.created_at = entry.at
        self.updated_at = entry.at


# --- rules per entry (each checks its precondition before changing anything) ---------------------------------


def _message(acc: Accumulator, entry: t.MessageEntry) -> None:
    message = entry.message
    if acc.first_user_message is None and entry.kind == "user":
        acc.first_user_message = message
    if acc.waiting or acc.turn_calls:
        acc.queued = (*acc.queued, message)
    else:
        acc.add_message(message)


def _request(acc: Accumulator, entry: t.ModelRequestEntry) -> None:
    if acc.waiting:
        raise ValueError("a request is already waiting on the model")
    if acc.turn_calls:
        raise ValueError("calls of the last reply have no result yet")
    if acc.late_notices:
        for text in acc.late_notices:
            acc.add_message(Message.user(text))
        acc.late_notices = ()
    acc.waiting = True
    acc.turn += 1


def _reply(acc: Accumulator, entry: t.ModelReplyEntry) -> None:
    if not acc.waiting:
        raise ValueError("no request is waiting for this reply")
    reply = entry.content
    message = reply.message
    content = message.content
    calls: tuple[ToolCall, ...] = ()
    for block in content:  # a plain loop: a comprehension is a function call of its own
        if type(block) is ToolCall:
            calls += (block,)
    added = make_message("assistant", content, reply.context_tokens, reply.stop_reason)
    acc.waiting = False
    acc.usage.add(reply.usage)
    acc.add_message(added)
    if calls:
        acc.turn_calls = acc.pending_calls = calls
        acc.turn_results = (None,) * len(calls)
    else:
        acc.last_reply_text = message.text
        acc.set_answer()
        if acc.queued:
            acc.release_queued()


def _event(acc: Accumulator, entry: t.ModelEventEntry) -> None:
    pass


def _error(acc: Accumulator, entry: t.ErrorEntry) -> None:
    if acc.waiting and entry.call is None:  # a failed request takes its turn back
        acc.waiting = False
        acc.turn -= 1
        if acc.queued:
            acc.release_queued()


def _open_slot(acc: Accumulator, call: object) -> int:
    """The index of the first pending slot of the open turn whose call has the id of ``call``, or -1."""
    call_id = getattr(call, "id", None)
    results = acc.turn_results
    for index, slot in enumerate(acc.turn_calls):
        if results[index] is None and slot.id == call_id:
            return index
    return -1


def _tool_result(acc: Accumulator, entry: t.ToolResultEntry) -> None:
    if entry.late:
        acc.add_usage(entry.usage)
        notice = LATE_RESULT.format(call=t.format_call(entry.call), content=t.result_text(entry.content))
        acc.late_notices = (*acc.late_notices, notice)
        return
    calls = acc.turn_calls
    if len(calls) == 1 and acc.turn_results[0] is None and calls[0].id == getattr(entry.call, "id", None):
        index = 0  # the usual turn: one call
    else:
        index = _open_slot(acc, entry.call)
    if index < 0:
        shown = t.format_call(entry.call) if isinstance(entry.call, ToolCall) else repr(entry.call)
        raise ValueError(f"{shown} is not a pending call, so it cannot get a result")
    slot = calls[index]
    content = entry.content
    is_error = entry.outcome is not _DONE
    block = make_result_block(slot.id, content, slot.name, is_error)
    if entry.usage is not None:
        acc.usage.add(entry.usage)
    results = acc.turn_results
    results = (block,) if len(results) == 1 else (*results[:index], block, *results[index + 1 :])
    if None in results:
        acc.turn_results = results
        acc.pending_calls = tuple(
            [call for call, result in zip(acc.turn_calls, results, strict=True) if result is None]
        )
        return
    acc.add_message(make_message("user", results, None, None))  # every slot is filled: a tuple of result blocks
    acc.turn_calls = acc.turn_results = acc.pending_calls = ()
    if acc.queued:
        acc.release_queued()


def _exchange(acc: Accumulator, entry: t.ExchangeEntry) -> None:
    acc.add_usage(entry.usage)


def _run_start(acc: Accumulator, entry: t.RunStartEntry) -> None:
    acc.stopped = None
    if acc.parent_id is None and entry.parent_id is not None:  # the first link stays
        acc.parent_id = entry.parent_id
        acc.parent_call_id = entry.parent_call_id


def _stop(acc: Accumulator, entry: t.StopEntry) -> None:
    stopped = entry.content
    acc.stopped = stopped
    if isinstance(stopped, t.StoppedByFinish):
        acc.finished = True
        if stopped.answer is not None:
            acc.finish_answer = stopped.answer
            acc.set_answer()


def _extra_data(acc: Accumulator, entry: t.ExtraDataEntry) -> None:
    current = acc.extra_data
    gone = set(entry.removed)
    values = {key: value for key, value in current.items() if key not in gone} if gone else dict(current)
    values.update(entry.content)
    acc.extra_data = FrozenDict(values)


def _import(acc: Accumulator, entry: t.ContextChangeEntry) -> None:
    if acc.waiting or acc.turn_calls:
        raise ValueError("messages can only be imported between turns")
    imported = entry.content.messages
    for message in imported:
        acc.add_message(message)
    if acc.first_user_message is None:
        acc.first_user_message = next((message for message in imported if message.role == "user"), None)


def _compact(acc: Accumulator, entry: t.ContextChangeEntry) -> None:
    change = entry.content
    if acc.turn_calls:
        raise ValueError("cannot compact while calls are pending")
    if change.summary is None:
        raise ValueError("a compact entry needs its summary")
    kept = change.kept
    if kept < 0:
        raise ValueError(f"a compact entry cannot keep {kept} messages")
    head = acc.first_user_message
    messages: list[Message] = [] if head is None else [head]
    messages.append(Message.user(SUMMARY_PREFIX + change.summary))
    if kept:
        messages.extend(acc.messages[: acc.messages_len][-kept:])
    acc.add_usage(change.usage)
    acc.set_messages(messages)


def _clear_tool_results(acc: Accumulator, entry: t.ContextChangeEntry) -> None:
    acc.set_messages(cleared_messages(acc.messages[: acc.messages_len], set(entry.content.cleared)))


def _restore(acc: Accumulator, entry: t.ContextChangeEntry) -> None:
    restored_to = entry.content.restored_to
    n = acc.history_len
    if type(restored_to) is not int or not 0 <= restored_to <= n:
        raise ValueError(f"cannot restore to {restored_to!r}: the history has {n} entries before it")
    target = acc.memo.get(restored_to)
    if target is None:
        target = acc.memo[restored_to] = replay(acc.history[:restored_to], acc.memo)
    acc.take(target)


_CHANGES: dict[str, Callable[[Accumulator, t.ContextChangeEntry], None]] = {
    "import": _import,
    "compact": _compact,
    "clear_tool_results": _clear_tool_results,
    "restore": _restore,
}


def _context_change(acc: Accumulator, entry: t.ContextChangeEntry) -> None:
    kind = entry.content.kind
    rule = _CHANGES.get(kind)
    if rule is None:
        raise ValueError(f"unknown context change kind {kind!r}")
    rule(acc, entry)


def cleared_messages(messages: list[Message], cleared: set[str]) -> list[Message]:
    """``messages`` with the results of ``cleared`` calls blanked and every token anchor dropped."""
    out: list[Message] = []
    for message in messages:
        content = message.content
        if cleared and any(isinstance(block, ToolResultBlock) and block.call_id in cleared for block in content):
            content = tuple(
                ToolResultBlock(block.call_id, CLEARED, name=block.name, is_error=block.is_error)
                if isinstance(block, ToolResultBlock) and block.call_id in cleared
                else block
                for block in content
            )
        elif message.tokens is None:
            out.append(message)
            continue
        out.append(Message(message.role, content, tokens=None, stop_reason=message.stop_reason))
    return out


_RULES: dict[type, Callable[[Accumulator, Any], None]] = {
    t.MessageEntry: _message,
    t.ModelRequestEntry: _request,
    t.ModelReplyEntry: _reply,
    t.ModelEventEntry: _event,
    t.ToolResultEntry: _tool_result,
    t.ExchangeEntry: _exchange,
    t.ContextChangeEntry: _context_change,
    t.RunStartEntry: _run_start,
    t.StopEntry: _stop,
    t.ExtraDataEntry: _extra_data,
    t.ErrorEntry: _error,
}


_ENTRY_CLASSES = frozenset(_RULES)


def _rule(entry: object) -> Callable[[Accumulator, Any], None]:
    """The rule of an entry whose class is a subclass of an entry class (the exact classes are in ``_RULES``)."""
    for cls, rule in _RULES.items():
        if isinstance(entry, cls):
            return rule
    raise ValueError(f"cannot record an entry of type {type(entry).__name__}")


def first_non_entry(values: list[object]) -> int:
    """The index of the first item of ``values`` that is not a history entry, or -1."""
    if _ENTRY_CLASSES.issuperset(map(type, values)):  # the usual case: every item of an exact entry class
        return -1
    classes = tuple(_RULES)
    for index, value in enumerate(values):
        if type(value) not in _RULES and not isinstance(value, classes):
            return index
    return -1


_EMPTY = StateSnapshot()


def fold(snap: StateSnapshot, entry: HistoryEntry) -> StateSnapshot:
    """The pure fold: the snapshot reached by recording ``entry`` after ``snap``.

    Raises ``ValueError`` when the entry cannot follow (a result for a call that is not pending, a reply with no
    waiting request, ...); ``snap`` never changes.
    """
    acc = Accumulator(snap)
    acc.apply(entry)
    return acc.freeze()


class EntryCannotFollow(ValueError):
    """The fold error of a replay, with the position of the entry that cannot follow (the fold error is its cause)."""

    def __init__(self, index: int, error: ValueError) -> None:
        super().__init__(str(error))
        self.index = index


def replay(entries: list[HistoryEntry], memo: dict[int, StateSnapshot] | None = None) -> StateSnapshot:
    """The fold of ``entries`` from an empty snapshot: one accumulator, each entry applied, frozen once at the end.

    ``entries`` must be a list nobody else changes: the result keeps it as its history. The snapshots that restore
    entries go back to are cached in ``memo`` on the way, so a history with many restores replays in one pass.

    Raises:
        EntryCannotFollow: an entry cannot follow the ones before it.
    """
    acc = Accumulator(None, memo)
    acc.history = entries  # already in place: each rule reads only the first ``history_len`` entries
    targets = _restore_targets(entries, acc.memo)
    index = 0
    try:
        for index, entry in enumerate(entries):
            acc.history_len = index
            if index in targets:
                acc.memo[index] = _at(acc, entries, index)
            (_RULES.get(type(entry)) or _rule(entry))(acc, entry)
    except ValueError as error:
        raise EntryCannotFollow(index, error) from error
    return _at(acc, entries, len(entries))


def _at(acc: Accumulator, entries: list[HistoryEntry], n: int) -> StateSnapshot:
    """Freeze the accumulator of a replay that has folded ``entries[:n]``."""
    acc.history_len = n
    if n:
        acc.created_at = entries[0].at
        acc.updated_at = entries[n - 1].at
    return acc.freeze()


def _restore_targets(entries: list[HistoryEntry], memo: dict[int, StateSnapshot]) -> set[int]:
    """The history lengths that the restore entries of ``entries`` go back to and ``memo`` lacks."""
    changes: Iterable[t.ContextChangeEntry]
    if _ENTRY_CLASSES.issuperset(map(type, entries)):  # the usual case: only the context changes need a look
        changes = compress(entries, map(partial(is_, t.ContextChangeEntry), map(type, entries)))  # type: ignore[arg-type]  # at C speed
    else:
        changes = [entry for entry in entries if isinstance(entry, t.ContextChangeEntry)]
    found = (change.content.restored_to for change in changes if change.content.kind == "restore")
    return {target for target in found if type(target) is int and target not in memo}
