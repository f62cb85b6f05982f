"""The fold of a State's history: ``StateSnapshot`` and ``fold(snapshot, entry)`` (private helpers of ``state``).

A snapshot is frozen. The two sequences that grow with history (``history`` and ``messages``) live in shared,
append-only lists: a snapshot remembers a list and its length, and builds its tuple the first time the field is
read. Recording an entry therefore costs the same at 10 or 100,000 entries. Appending to a list that a newer
snapshot already extended (an old snapshot folded again) copies the prefix first, so every snapshot keeps its
value and ``fold`` stays a pure function.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from alpineagents._frozen import FrozenDict
from alpineagents._values.construct import maker
from alpineagents.types import (
    ContextChangeEntry,
    ErrorEntry,
    ExchangeEntry,
    ExtraDataEntry,
    HistoryEntry,
    Message,
    MessageEntry,
    ModelEventEntry,
    ModelReplyEntry,
    ModelRequestEntry,
    Reply,
    RunStartEntry,
    StopEntry,
    Stopped,
    StoppedByFinish,
    ToolCall,
    ToolOutcomeKind,
    ToolResultBlock,
    ToolResultEntry,
    Usage,
    format_call,
    result_text,
)

make_message = maker(Message)
make_result_block = maker(ToolResultBlock)

__all__ = [
    "CLEARED",
    "LATE_RESULT",
    "SUMMARY_PREFIX",
    "StateSnapshot",
    "fold",
    "replay",
]

CLEARED = "(cleared: kept in history)"
SUMMARY_PREFIX = "[notice] Summary so far:\n"
LATE_RESULT = "[notice] interrupted {call} finished later: {content}"

_ENTRY_CLASSES: tuple[type, ...] = (
    MessageEntry,
    ModelRequestEntry,
    ModelReplyEntry,
    ModelEventEntry,
    ToolResultEntry,
    ExchangeEntry,
    ContextChangeEntry,
    RunStartEntry,
    StopEntry,
    ExtraDataEntry,
    ErrorEntry,
)


@dataclass(frozen=True, kw_only=True, repr=False)
class StateSnapshot:
    """The frozen value of a State at one moment.

    ``==`` compares the public fields except the two times. Build an equal value in another process with
    ``State(history=snapshot.history)``.
    """

    history: tuple[HistoryEntry, ...] = ()
    messages: tuple[Message, ...] = ()
    pending_calls: tuple[ToolCall, ...] = ()
    turn: int = 0
    usage: Usage = Usage()
    extra_data: FrozenDict[str, Any] = field(default_factory=FrozenDict)
    finished: bool = False
    answer: Any = None
    stopped: Stopped | None = None
    created_at: datetime | None = field(default=None, compare=False)
    updated_at: datetime | None = field(default=None, compare=False)
    _turn_calls: tuple[ToolCall, ...] = field(default=(), compare=False, repr=False)
    _turn_results: tuple[ToolResultBlock | None, ...] = field(default=(), compare=False, repr=False)
    _queued: tuple[Message, ...] = field(default=(), compare=False, repr=False)
    _waiting: bool = field(default=False, compare=False, repr=False)
    _late_notices: tuple[str, ...] = field(default=(), compare=False, repr=False)
    _first_user_message: Message | None = field(default=None, compare=False, repr=False)
    _last_reply_text: str | None = field(default=None, compare=False, repr=False)
    _finish_answer: Any = field(default=None, compare=False, repr=False)
    _parent_id: str | None = field(default=None, compare=False, repr=False)
    _parent_call_id: str | None = field(default=None, compare=False, repr=False)
    _memo: dict[int, StateSnapshot] = field(default_factory=dict, compare=False, repr=False)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            # ``history`` and ``messages`` of a folded snapshot are built on first read, once.
            d = self.__dict__
            if name == "history" and "_h" in d:
                lst, n = d["_h"], d["_hn"]
            elif name == "messages" and "_m" in d:
                lst, n = d["_m"], d["_mn"]
            else:
                raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'", name=name, obj=self)
            value = tuple(lst) if len(lst) == n else tuple(lst[:n])
            if len(value) != n:  # the list grew while it was copied: take the prefix
                value = value[:n]
            d[name] = value
            return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {"history", "messages"})

    def __repr__(self) -> str:
        d = self.__dict__
        n_history = d["_hn"] if "_h" in d else len(self.history)
        n_messages = d["_mn"] if "_m" in d else len(self.messages)
        end = " finished>" if self.finished else ">"
        return (
            f"<StateSnapshot turn={self.turn} history={n_history} messages={n_messages} "
            f"pending={len(self.pending_calls)}{end}"
        )


StateSnapshot.__module__ = "alpineagents.state"  # its public home (pickle finds it there too)

# The generated __init__ keeps its defaults; without these class attributes a folded snapshot's unread
# ``history``/``messages`` reach ``__getattr__``, which builds them.
del StateSnapshot.history  # type: ignore[misc]
del StateSnapshot.messages  # type: ignore[misc]

_DONE = ToolOutcomeKind.DONE
_new = object.__new__
_set = object.__setattr__
_EMPTY_USAGE = Usage()


def _freeze(d: dict[str, Any]) -> StateSnapshot:
    """Wrap an accumulator dict (now owned by the snapshot) as a StateSnapshot."""
    snap = _new(StateSnapshot)
    _set(snap, "__dict__", d)
    return snap


def _acc(snap: StateSnapshot) -> dict[str, Any]:
    """A mutable accumulator holding the values of ``snap`` (shares its immutable parts and its lists)."""
    d = snap.__dict__.copy()  # dict.copy, unlike dict(...), stays fast when keys were deleted before
    if "history" in d:
        del d["history"]
    if "_h" not in d:
        d["_h"] = list(snap.history)
        d["_hn"] = len(d["_h"])
    if "_m" not in d:
        d["_m"] = list(snap.messages)
        d["_mn"] = len(d["_m"])
    return d


def empty_acc(memo: dict[int, StateSnapshot] | None = None) -> dict[str, Any]:
    """The accumulator of an empty history."""
    return {
        "pending_calls": (),
        "turn": 0,
        "usage": _EMPTY_USAGE,
        "extra_data": FrozenDict(),
        "finished": False,
        "answer": None,
        "stopped": None,
        "created_at": None,
        "updated_at": None,
        "_turn_calls": (),
        "_turn_results": (),
        "_queued": (),
        "_waiting": False,
        "_late_notices": (),
        "_first_user_message": None,
        "_last_reply_text": None,
        "_finish_answer": None,
        "_parent_id": None,
        "_parent_call_id": None,
        "_memo": {} if memo is None else memo,
        "_h": [],
        "_hn": 0,
        "_m": [],
        "_mn": 0,
    }


def _add_message(d: dict[str, Any], message: Message) -> None:
    """Append ``message`` to the shared messages list, copying it first if it grew past this snapshot."""
    lst = d["_m"]
    n = d["_mn"]
    if len(lst) == n:
        lst.append(message)
        if lst[n] is not message:  # another fold of the same list won the slot
            lst = lst[:n]
            lst.append(message)
            d["_m"] = lst
    else:
        lst = lst[:n]
        lst.append(message)
        d["_m"] = lst
    d["_mn"] = n + 1
    if "messages" in d:
        del d["messages"]


def _set_messages(d: dict[str, Any], messages: list[Message]) -> None:
    d["_m"] = messages
    d["_mn"] = len(messages)
    if "messages" in d:
        del d["messages"]


def current_messages(d: dict[str, Any]) -> list[Message]:
    """The messages of an accumulator, as a new list."""
    return d["_m"][: d["_mn"]]


def _release_queued(d: dict[str, Any]) -> None:
    queued = d["_queued"]
    if queued:
        for message in queued:
            _add_message(d, message)
        d["_queued"] = ()


def _answer(d: dict[str, Any]) -> None:
    finish = d["_finish_answer"]
    d["answer"] = finish if finish is not None else d["_last_reply_text"]


def _add_usage(d: dict[str, Any], usage: Usage | None) -> None:
    if usage is not None:
        d["usage"] = d["usage"] + usage


# --- rules per entry (each checks its precondition before changing anything) ---------------------------------


def _message(d: dict[str, Any], entry: MessageEntry) -> None:
    message = entry.message
    if d["_first_user_message"] is None and entry.kind == "user":
        d["_first_user_message"] = message
    if d["_waiting"] or d["_turn_calls"]:
        d["_queued"] = (*d["_queued"], message)
    else:
        _add_message(d, message)


def _request(d: dict[str, Any], entry: ModelRequestEntry) -> None:
    if d["_waiting"]:
        raise ValueError("a request is already waiting on the model")
    if d["_turn_calls"]:
        raise ValueError("calls of the last reply have no result yet")
    notices = d["_late_notices"]
    if notices:
        for text in notices:
            _add_message(d, Message.user(text))
        d["_late_notices"] = ()
    d["_waiting"] = True
    d["turn"] += 1


def _reply(d: dict[str, Any], entry: ModelReplyEntry) -> None:
    if not d["_waiting"]:
        raise ValueError("no request is waiting for this reply")
    reply = entry.content
    message = reply.message
    content = message.content
    usage = d["usage"] + reply.usage
    if len(content) == 1:  # fast path, the usual reply (one call, or one text): no list comprehension
        calls = content if type(content[0]) is ToolCall else ()
    else:
        calls = tuple([block for block in content if type(block) is ToolCall])
    if type(message) is Message:
        # Fast path: a Message's content is already a tuple, so the new message needs none of __post_init__.
        added = make_message("assistant", content, reply.context_tokens, reply.stop_reason)
    else:
        added = Message("assistant", content, tokens=reply.context_tokens, stop_reason=reply.stop_reason)
    d["_waiting"] = False
    d["usage"] = usage
    lst = d["_m"]
    n = d["_mn"]
    if len(lst) == n:
        lst.append(added)
        if lst[n] is not added:
            d["_m"] = [*lst[:n], added]
    else:
        d["_m"] = [*lst[:n], added]
    d["_mn"] = n + 1
    if "messages" in d:
        del d["messages"]
    if calls:
        d["_turn_calls"] = calls
        d["_turn_results"] = (None,) * len(calls)
        d["pending_calls"] = calls
    else:
        d["_last_reply_text"] = message.text
        _answer(d)
        _release_queued(d)


def _event(d: dict[str, Any], entry: ModelEventEntry) -> None:
    pass


def _error(d: dict[str, Any], entry: ErrorEntry) -> None:
    if d["_waiting"] and entry.call is None:
        d["_waiting"] = False
        d["turn"] -= 1
        _release_queued(d)


def _tool_result(d: dict[str, Any], entry: ToolResultEntry) -> None:
    if entry.late:
        _add_usage(d, entry.usage)
        notice = LATE_RESULT.format(call=format_call(entry.call), content=result_text(entry.content))
        d["_late_notices"] = (*d["_late_notices"], notice)
        return
    call_id = getattr(entry.call, "id", None)
    calls: tuple[ToolCall, ...] = d["_turn_calls"]
    results: tuple[ToolResultBlock | None, ...] = d["_turn_results"]
    index = -1
    still_open = 0
    if len(calls) == 1:
        if results[0] is None and calls[0].id == call_id:
            index = 0
    else:
        for i in range(len(calls)):
            if results[i] is None:
                if index < 0 and calls[i].id == call_id:
                    index = i
                else:
                    still_open += 1
    if index < 0:
        shown = format_call(entry.call) if isinstance(entry.call, ToolCall) else repr(entry.call)
        raise ValueError(f"{shown} is not a pending call, so it cannot get a result")
    slot = calls[index]
    content = entry.content
    if type(content) is str or type(content) is tuple:
        # Fast path: a str or tuple result is what ToolResultBlock.__post_init__ leaves as is.
        block = make_result_block(slot.id, content, slot.name, entry.outcome is not _DONE)
    else:
        block = ToolResultBlock(slot.id, content, name=slot.name, is_error=entry.outcome is not _DONE)
    usage = entry.usage
    if usage is not None:
        d["usage"] = d["usage"] + usage
    if len(calls) == 1:
        results = (block,)
    else:
        results = (*results[:index], block, *results[index + 1 :])
    if still_open:
        d["_turn_results"] = results
        d["pending_calls"] = tuple([call for call, result in zip(calls, results, strict=True) if result is None])
        return
    added = make_message("user", results, None, None)  # every slot is filled: a tuple of ToolResultBlock
    lst = d["_m"]
    n = d["_mn"]
    if len(lst) == n:
        lst.append(added)
        if lst[n] is not added:
            d["_m"] = [*lst[:n], added]
    else:
        d["_m"] = [*lst[:n], added]
    d["_mn"] = n + 1
    if "messages" in d:
        del d["messages"]
    d["_turn_calls"] = ()
    d["_turn_results"] = ()
    d["pending_calls"] = ()
    if d["_queued"]:
        _release_queued(d)


def _exchange(d: dict[str, Any], entry: ExchangeEntry) -> None:
    _add_usage(d, entry.usage)


def _run_start(d: dict[str, Any], entry: RunStartEntry) -> None:
    d["stopped"] = None
    if d["_parent_id"] is None and entry.parent_id is not None:
        d["_parent_id"] = entry.parent_id
        d["_parent_call_id"] = entry.parent_call_id


def _stop(d: dict[str, Any], entry: StopEntry) -> None:
    stopped = entry.content
    d["stopped"] = stopped
    if isinstance(stopped, StoppedByFinish):
        d["finished"] = True
        if stopped.answer is not None:
            d["_finish_answer"] = stopped.answer
            _answer(d)


def _extra_data(d: dict[str, Any], entry: ExtraDataEntry) -> None:
    current: FrozenDict[str, Any] = d["extra_data"]
    removed = entry.removed
    if removed:
        gone = set(removed)
        values = {key: value for key, value in current.items() if key not in gone}
    else:
        values = dict(current)
    values.update(entry.content)
    d["extra_data"] = FrozenDict(values)


def _context_change(d: dict[str, Any], entry: ContextChangeEntry) -> None:
    change = entry.content
    kind = change.kind
    if kind == "import":
        if d["_waiting"] or d["_turn_calls"]:
            raise ValueError("messages can only be imported between turns")
        for message in change.messages:
            _add_message(d, message)
        if d["_first_user_message"] is None:
            for message in change.messages:
                if message.role == "user":
                    d["_first_user_message"] = message
                    break
    elif kind == "compact":
        if d["_turn_calls"]:
            raise ValueError("cannot compact while calls are pending")
        if change.summary is None:
            raise ValueError("a compact entry needs its summary")
        kept = change.kept
        if kept < 0:
            raise ValueError(f"a compact entry cannot keep {kept} messages")
        head = d["_first_user_message"]
        messages: list[Message] = [] if head is None else [head]
        messages.append(Message.user(SUMMARY_PREFIX + change.summary))
        if kept:
            messages.extend(current_messages(d)[-kept:])
        _add_usage(d, change.usage)
        _set_messages(d, messages)
    elif kind == "clear_tool_results":
        _set_messages(d, cleared_messages(current_messages(d), set(change.cleared)))
    elif kind == "restore":
        restored_to = change.restored_to
        n = d["_hn"]
        if type(restored_to) is not int or not 0 <= restored_to <= n:
            raise ValueError(f"cannot restore to {restored_to!r}: the history has {n} entries before it")
        _take(d, target(d, restored_to))
    else:
        raise ValueError(f"unknown context change kind {kind!r}")


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


_TAKEN = (
    "pending_calls",
    "turn",
    "extra_data",
    "finished",
    "answer",
    "stopped",
    "_turn_calls",
    "_turn_results",
    "_queued",
    "_waiting",
    "_late_notices",
    "_first_user_message",
    "_last_reply_text",
    "_finish_answer",
)


def _take(d: dict[str, Any], snap: StateSnapshot) -> None:
    """Restore: take every value of ``snap`` except history, usage, times, parent link and memo."""
    source = snap.__dict__
    for key in _TAKEN:
        d[key] = source[key] if key in source else getattr(snap, key)
    if "_m" in source:
        d["_m"] = source["_m"]
        d["_mn"] = source["_mn"]
        if "messages" in source:
            d["messages"] = source["messages"]
        else:
            d.pop("messages", None)
    else:
        d["messages"] = snap.messages
        d["_m"] = list(snap.messages)
        d["_mn"] = len(d["_m"])


def target(d: dict[str, Any], restored_to: int) -> StateSnapshot:
    """The fold of the first ``restored_to`` entries of ``d``'s history (cached in the shared memo)."""
    memo: dict[int, StateSnapshot] = d["_memo"]
    snap = memo.get(restored_to)
    if snap is None:
        snap = replay(d["_h"][:restored_to], memo)
        memo[restored_to] = snap
    return snap


_RULES: dict[type, Any] = {
    MessageEntry: _message,
    ModelRequestEntry: _request,
    ModelReplyEntry: _reply,
    ModelEventEntry: _event,
    ToolResultEntry: _tool_result,
    ExchangeEntry: _exchange,
    ContextChangeEntry: _context_change,
    RunStartEntry: _run_start,
    StopEntry: _stop,
    ExtraDataEntry: _extra_data,
    ErrorEntry: _error,
}


def _rule(entry: Any) -> Any:
    rule = _RULES.get(type(entry))
    if rule is None:
        for cls in _ENTRY_CLASSES:
            if isinstance(entry, cls):
                return _RULES[cls]
        raise ValueError(f"cannot record an entry of type {type(entry).__name__}")
    return rule


def apply(d: dict[str, Any], entry: Any) -> None:
    """Fold ``entry`` into the accumulator ``d`` (raises the fold ``ValueError`` before changing anything).

    ``d`` holds no built ``history`` tuple (``_acc`` drops it).
    """
    rule = _RULES.get(type(entry)) or _rule(entry)
    rule(d, entry)
    at = entry.at
    n = d["_hn"]
    if n == 0:
        d["created_at"] = at
    lst = d["_h"]
    if len(lst) == n:
        lst.append(entry)
        if lst[n] is not entry:
            _branch_history(d, lst, n, entry)
    else:
        _branch_history(d, lst, n, entry)
    d["_hn"] = n + 1
    d["updated_at"] = at


def _branch_history(d: dict[str, Any], lst: list[Any], n: int, entry: Any) -> None:
    # The shared list grew past this snapshot (an old snapshot folded again): continue on a copy. Cached restore
    # targets beyond the branch point belong to the other branch.
    branch = lst[:n]
    branch.append(entry)
    d["_h"] = branch
    d["_memo"] = {k: v for k, v in d["_memo"].items() if k <= n}


def commit(values: dict[str, Any], entry: Any) -> dict[str, Any]:
    """The hot path of a State: the values after ``entry``, as a new dict (``values`` never changes).

    ``values`` is the ``__dict__`` of a folded snapshot (see ``values_of``); the result is one too. Same rules and
    errors as ``fold``.
    """
    d = values.copy()
    if "history" in d:
        del d["history"]
    apply(d, entry)
    return d


def values_of(snap: StateSnapshot) -> dict[str, Any]:
    """The values of a snapshot in the form ``commit`` takes (its own ``__dict__`` when it was folded)."""
    d = snap.__dict__
    if "_h" in d and "_m" in d:
        return d
    return _acc(snap)


def snapshot_of(values: dict[str, Any]) -> StateSnapshot:
    """A snapshot whose fields are ``values`` (shared: neither may change afterwards)."""
    snap = _new(StateSnapshot)
    _set(snap, "__dict__", values)
    return snap


def is_entry(value: Any) -> bool:
    """Whether ``value`` is an instance of one of the 11 history entry classes."""
    return type(value) in _RULES or isinstance(value, _ENTRY_CLASSES)


def first_non_entry(values: list[Any]) -> int:
    """The index of the first item of ``values`` that is not a history entry, or -1."""
    rules = _RULES
    for index, value in enumerate(values):
        if type(value) not in rules and not isinstance(value, _ENTRY_CLASSES):
            return index
    return -1


def fold(snap: StateSnapshot, entry: HistoryEntry) -> StateSnapshot:
    """The pure fold: the snapshot reached by recording ``entry`` after ``snap``.

    Raises ``ValueError`` when the entry cannot follow (a result for a call that is not pending, a reply with no
    waiting request, ...); ``snap`` never changes.
    """
    d = _acc(snap)
    apply(d, entry)
    return _freeze(d)


class _UsageSum:
    """A running ``Usage`` total for replay: ``+`` follows the rule of ``Usage.__add__`` but adds in place."""

    __slots__ = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "requests", "cost")

    def __init__(self) -> None:
        self.input_tokens = self.output_tokens = self.cache_read_tokens = self.cache_write_tokens = 0
        self.requests = 0
        self.cost: Any = None

    def __add__(self, other: Usage) -> _UsageSum:
        if self.requests == 0:
            cost = other.cost
        elif other.requests == 0:
            cost = self.cost
        elif self.cost is None or other.cost is None:
            cost = None
        else:
            cost = self.cost + other.cost
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.requests += other.requests
        self.cost = cost
        return self

    def usage(self) -> Usage:
        return Usage(
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.requests,
            self.cost,
        )


_PLAIN_KINDS = frozenset(_RULES) - {ContextChangeEntry}  # entry classes that are never a restore
_NO_CALLS: tuple[Any, ...] = ()


def replay(entries: list[Any], memo: dict[int, StateSnapshot] | None = None) -> StateSnapshot:
    """Fold ``entries`` from an empty snapshot with one mutable accumulator, frozen once at the end.

    ``entries`` must be a list nobody else changes: the result keeps it as its history. The snapshots that restore
    entries go back to are cached in ``memo`` on the way, so a history with many restores replays in one linear
    pass. A fold ``ValueError`` gets an ``index`` attribute (the position of the entry that cannot follow).
    """
    if memo is None:
        memo = {}
    targets: set[int] = set()
    has_restore = False
    if not _PLAIN_KINDS.issuperset(map(type, entries)):
        for entry in entries:
            kind = type(entry)
            if kind is not ContextChangeEntry and (kind in _RULES or not isinstance(entry, ContextChangeEntry)):
                continue
            if entry.content.kind == "restore":
                has_restore = True
                restored_to = entry.content.restored_to
                if type(restored_to) is int and restored_to not in memo:
                    targets.add(restored_to)
    d = empty_acc(memo)
    d["_h"] = entries  # the rules read at most the first ``_hn`` entries
    total = d["usage"] = _UsageSum()  # the rules add to it in place; a Usage is made at the end
    if has_restore:
        rules = _RULES
        index = 0
        try:
            for index, entry in enumerate(entries):
                d["_hn"] = index
                if index in targets:
                    reached = d.copy()
                    reached["usage"] = total.usage()
                    if index:
                        reached["created_at"] = entries[0].at
                        reached["updated_at"] = entries[index - 1].at
                    memo[index] = _freeze(reached)
                (rules.get(type(entry)) or _rule(entry))(d, entry)
        except ValueError as error:
            error.index = index  # type: ignore[attr-defined]
            raise
    else:  # no restore reads the history length: one tight loop
        _replay_plain(d, entries, total)
    d["_hn"] = len(entries)
    d["usage"] = total.usage()
    if entries:
        d["created_at"] = entries[0].at
        d["updated_at"] = entries[-1].at
    return _freeze(d)


def _replay_plain(d: dict[str, Any], entries: list[Any], total: _UsageSum) -> None:
    """The replay of a history without restores into the fresh accumulator ``d``.

    The usual turn (a request, a reply, the results of its calls) is folded here with the values it changes held
    in local variables, by the same rules as ``_request``, ``_reply`` and ``_tool_result``; every other entry, and
    every case those three rules treat specially (an error, a late result, queued messages), goes through its rule
    with the locals written back to ``d`` first and read again after. ``d["_m"]`` is this replay's own list, and
    its length is always ``d["_mn"]``.
    """
    rules = _RULES
    done = _DONE
    make_block = make_result_block
    make_msg = make_message
    waiting: bool = d["_waiting"]
    turn: int = d["turn"]
    calls: tuple[ToolCall, ...] = d["_turn_calls"]
    results: tuple[Any, ...] = d["_turn_results"]
    pending: tuple[ToolCall, ...] = d["pending_calls"]
    msgs: list[Message] = d["_m"]
    ti, to, tr, tw, tn, tc = 0, 0, 0, 0, 0, None  # the usage total (``total`` is empty)
    index = 0
    try:
        for index, entry in enumerate(entries):  # noqa: B007 - index names the failing entry
            cls = type(entry)
            if cls is ModelRequestEntry:
                if not waiting and not calls and not d["_late_notices"]:
                    waiting = True
                    turn += 1
                    continue
            elif cls is ModelReplyEntry:
                reply = entry.content
                if waiting and type(reply) is Reply:
                    message = reply.message
                    u = reply.usage
                    if type(message) is Message and type(u) is Usage:
                        content = message.content
                        if tn == 0:
                            tc = u.cost
                        elif u.requests == 0:
                            pass
                        elif tc is None or u.cost is None:
                            tc = None
                        else:
                            tc = tc + u.cost
                        ti += u.input_tokens
                        to += u.output_tokens
                        tr += u.cache_read_tokens
                        tw += u.cache_write_tokens
                        tn += u.requests
                        found = tuple([block for block in content if type(block) is ToolCall])
                        msgs.append(make_msg("assistant", content, reply.context_tokens, reply.stop_reason))
                        waiting = False
                        if found:
                            calls = pending = found
                            results = (None,) * len(found)
                            continue
                        d["_last_reply_text"] = message.text
                        _answer(d)
                        if d["_queued"]:
                            d["_mn"] = len(msgs)
                            _release_queued(d)
                            msgs = d["_m"]
                        continue
            elif cls is ToolResultEntry and not entry.late:
                call = entry.call
                content = entry.content
                u = entry.usage
                if (
                    type(call) is ToolCall
                    and (type(content) is str or type(content) is tuple)
                    and (u is None or type(u) is Usage)
                ):
                    call_id = call.id
                    count = len(calls)
                    slot_index = -1
                    still_open = 0
                    if count == 1:
                        if results[0] is None and calls[0].id == call_id:
                            slot_index = 0
                    else:
                        for i in range(count):
                            if results[i] is None:
                                if slot_index < 0 and calls[i].id == call_id:
                                    slot_index = i
                                else:
                                    still_open += 1
                    if slot_index >= 0:
                        slot = calls[slot_index]
                        block = make_block(slot.id, content, slot.name, entry.outcome is not done)
                        if u is not None:
                            if tn == 0:
                                tc = u.cost
                            elif u.requests == 0:
                                pass
                            elif tc is None or u.cost is None:
                                tc = None
                            else:
                                tc = tc + u.cost
                            ti += u.input_tokens
                            to += u.output_tokens
                            tr += u.cache_read_tokens
                            tw += u.cache_write_tokens
                            tn += u.requests
                        if count == 1:
                            results = (block,)
                        else:
                            results = (*results[:slot_index], block, *results[slot_index + 1 :])
                        if still_open:
                            pending = tuple([c for c, r in zip(calls, results, strict=True) if r is None])
                            continue
                        msgs.append(make_msg("user", results, None, None))
                        calls = results = pending = _NO_CALLS
                        if d["_queued"]:
                            d["_mn"] = len(msgs)
                            _release_queued(d)
                            msgs = d["_m"]
                        continue
            # Any other entry or case: its rule, on ``d`` brought up to date.
            d["_waiting"] = waiting
            d["turn"] = turn
            d["_turn_calls"] = calls
            d["_turn_results"] = results
            d["pending_calls"] = pending
            d["_mn"] = len(msgs)
            total.input_tokens, total.output_tokens, total.cache_read_tokens = ti, to, tr
            total.cache_write_tokens, total.requests, total.cost = tw, tn, tc
            (rules.get(cls) or _rule(entry))(d, entry)
            waiting = d["_waiting"]
            turn = d["turn"]
            calls = d["_turn_calls"]
            results = d["_turn_results"]
            pending = d["pending_calls"]
            msgs = d["_m"]
            ti, to, tr = total.input_tokens, total.output_tokens, total.cache_read_tokens
            tw, tn, tc = total.cache_write_tokens, total.requests, total.cost
    except ValueError as error:
        error.index = index  # type: ignore[attr-defined]
        raise
    d["_waiting"] = waiting
    d["turn"] = turn
    d["_turn_calls"] = calls
    d["_turn_results"] = results
    d["pending_calls"] = pending
    d["_m"] = msgs
    d["_mn"] = len(msgs)
    total.input_tokens, total.output_tokens, total.cache_read_tokens = ti, to, tr
    total.cache_write_tokens, total.requests, total.cost = tw, tn, tc


def snapshot_from(d: dict[str, Any]) -> StateSnapshot:
    """Freeze a copy of the accumulator ``d`` (which stays usable)."""
    return _freeze(d.copy())


def history_list(snap: StateSnapshot) -> tuple[list[HistoryEntry], int]:
    """The shared history list of a snapshot and its length (without building the tuple)."""
    d = snap.__dict__
    if "_h" in d:
        return d["_h"], d["_hn"]
    history = snap.history
    return list(history), len(history)


def message_count(snap: StateSnapshot) -> int:
    """``len(snap.messages)`` without building the tuple."""
    d = snap.__dict__
    return d["_mn"] if "_m" in d else len(snap.messages)


def last_message(snap: StateSnapshot) -> Message | None:
    """The last message of ``snap`` (``None`` when there is none), without building the tuple."""
    d = snap.__dict__
    if "_m" in d:
        n = d["_mn"]
        return d["_m"][n - 1] if n else None
    messages = snap.messages
    return messages[-1] if messages else None


def fork_snapshot(snap: StateSnapshot) -> StateSnapshot:
    """An equal snapshot that shares no list with ``snap`` and has its own (empty) restore memo."""
    d = snap.__dict__.copy()
    history, n = history_list(snap)
    d["_h"] = history[:n]
    d["_hn"] = n
    d["_m"] = list(snap.messages)
    d["_mn"] = len(d["_m"])
    d["_memo"] = {}
    return _freeze(d)
