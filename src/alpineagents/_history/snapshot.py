"""``StateSnapshot``: the frozen value of a State at one moment (its public home is ``alpineagents.state``).

The two sequences that grow with history, ``history`` and ``messages``, are not copied into every snapshot: a
snapshot made by the fold keeps the fold's shared, append-only list and its own length, and builds the tuple the
first time the field is read. Recording an entry therefore costs the same at 10 or 100,000 entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from alpineagents._frozen import FrozenDict
from alpineagents.types import HistoryEntry, Message, Stopped, ToolCall, ToolResultBlock, Usage

__all__ = ["SHARED", "SharedPrefix", "StateSnapshot", "history_of", "is_folded", "messages_of", "prefix_tuple"]


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
            # Only reached for the ``history`` and ``messages`` of a snapshot made by the fold (the class has no
            # default for them): the tuple is built from the shared list on first read, once.
            lists = self.__dict__.get(SHARED)
            if lists is None or name not in _LIST_FIELDS:
                raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'", name=name, obj=self)
            position = _LIST_FIELDS[name]
            value = prefix_tuple(lists[position], lists[position + 1])
            self.__dict__[name] = value
            return value

    def __dir__(self) -> list[str]:
        return sorted(name for name in {*super().__dir__(), "history", "messages"} if name != SHARED)

    def __repr__(self) -> str:
        end = " finished>" if self.finished else ">"
        return (
            f"<StateSnapshot turn={self.turn} history={len(history_of(self))} messages={len(messages_of(self))} "
            f"pending={len(self.pending_calls)}{end}"
        )


StateSnapshot.__module__ = "alpineagents.state"  # its public home (pickle finds it there too)

# The generated __init__ keeps these defaults; without the class attributes, the unread ``history``/``messages`` of
# a folded snapshot reach ``__getattr__``, which builds them.
del StateSnapshot.history  # type: ignore[misc]
del StateSnapshot.messages  # type: ignore[misc]


SHARED = "_shared_lists"
"""The attribute of a folded snapshot that holds ``(history list, its length, messages list, its length)``."""

_LIST_FIELDS = {"history": 0, "messages": 2}


def prefix_tuple(items: list[Any], n: int) -> tuple[Any, ...]:
    """The first ``n`` items of a list that only ever grows, as a tuple (also while another thread appends)."""
    value = tuple(items) if len(items) == n else tuple(items[:n])
    return value if len(value) == n else value[:n]  # the list grew while it was copied: take the prefix


class SharedPrefix:
    """The first ``length`` items of a list that only ever grows (shared by the snapshots of one State)."""

    __slots__ = ("items", "length")

    def __init__(self, items: list[Any], length: int) -> None:
        self.items = items
        self.length = length

    def __len__(self) -> int:
        return self.length


def _shared(snap: StateSnapshot, name: str) -> SharedPrefix:
    lists = snap.__dict__.get(SHARED)
    if lists is not None:
        position = _LIST_FIELDS[name]
        return SharedPrefix(lists[position], lists[position + 1])
    items = list(getattr(snap, name))
    return SharedPrefix(items, len(items))


def history_of(snap: StateSnapshot) -> SharedPrefix:
    """The history of ``snap`` without building its tuple (a fresh list for a snapshot built by hand)."""
    return _shared(snap, "history")


def messages_of(snap: StateSnapshot) -> SharedPrefix:
    """The messages of ``snap`` without building their tuple (a fresh list for a snapshot built by hand)."""
    return _shared(snap, "messages")


def is_folded(snap: StateSnapshot) -> bool:
    """Whether the fold made ``snap`` (rather than ``StateSnapshot(...)`` or ``dataclasses.replace``)."""
    return SHARED in snap.__dict__
