"""The messages of a request in a provider's wire form, kept between requests so that each request maps only the
messages that are new since the one before.

A conversation grows by appending: the State hands every request a new tuple, but the messages already in it are
the very same (frozen, immutable) `Message` objects as in the previous request. So a mapped prefix is reused when
its messages are the same objects, in the same order, at the start of the new request; the check is by identity,
never by equality (equal values may still map differently: `1 == True`, but JSON tells them apart).

What is kept, per adapter instance (`MappedMessages`):

- a few entries, most recently used first, at most `ENTRIES`; each is one conversation as it was last sent: its
  messages, the wire items they became, and where each run of same-role messages starts and ends;
- every entry is immutable once made; a request reads the list of entries under a lock, works out its items
  without the lock, and puts its own entry in under the lock, so one adapter can serve many States at once, from
  threads or from an event loop;
- a request that extends an entry (the entry's messages are all at the start of the request) replaces it; any other
  request adds an entry, and the least recently used one is dropped past `ENTRIES`. Memory is bounded by the
  conversations kept, and a conversation that is no longer used goes when newer ones push it out;
- the cache belongs to the adapter, not to a State, because a request carries no State: a conversation is
  recognised by its messages alone, so States, forks and copies that share messages share their wire form too;
- the entries are kept for one `settings` value, the settings the adapter's mapping of a message reads (its
  provider id, and for the Responses API whether responses are stored); when it changes, they all go.

What is reused: a run of same-role messages that ends before the first message that differs, and is followed by a
message of the other role (the API gets one message per run, so the last run must be mapped again when a message
of its role is appended). Compaction, clearing old tool results, a restore, a fork or a load from a store either
keeps the same message objects (then their runs are reused, which is correct because they map the same) or makes new
ones (then they are mapped again). A request built from the cache equals one built from scratch.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from itertools import compress, count
from operator import is_, is_not
from typing import Any

from alpineagents.models._json import WireList, dumps
from alpineagents.types import Message

__all__ = ["ENTRIES", "MappedMessages", "Merge", "WireItems"]

ENTRIES = 16
"""How many conversations one adapter instance keeps the mapped form of."""

WireItems = Callable[[Message], Sequence[dict[str, Any]]]
"""Maps one message (a run of same-role messages, already merged) to its items in the provider's wire form."""

Merge = Callable[[Sequence[Message]], list[Message]]
"""Merges runs of same-role messages into one message each (`Model._merge_same_role`)."""


class _Entry:
    """One conversation as last sent: its messages, their wire items and each item's JSON bytes, and the runs of
    same-role messages (the index just past each run in `messages`, and just past its items in `items`)."""

    __slots__ = ("settings", "messages", "items", "encoded", "run_ends", "item_ends")

    def __init__(
        self,
        settings: Hashable,
        messages: tuple[Message, ...],
        items: tuple[dict[str, Any], ...],
        encoded: tuple[bytes, ...] | None,
        run_ends: tuple[int, ...],
        item_ends: tuple[int, ...],
    ) -> None:
        self.settings = settings
        self.messages = messages
        self.items = items
        self.encoded = encoded
        self.run_ends = run_ends
        self.item_ends = item_ends


def _same_prefix(kept: tuple[Message, ...], messages: tuple[Message, ...]) -> int:
    """How many leading messages are the same objects in both (compared in C, stopping at the first that is not;
    the usual answer, all of the shorter, is found without counting)."""
    if all(map(is_, kept, messages)):
        return min(len(kept), len(messages))
    first_different = next(compress(count(), map(is_not, kept, messages)), None)
    if first_different is not None:
        return first_different
    return min(len(kept), len(messages))


def _runs_kept(entry: _Entry, same: int) -> int:
    """How many of the entry's runs are reused when its first `same` messages are unchanged: those that end
    before `same` (a run ending at `same` may continue with the next message)."""
    return bisect_left(entry.run_ends, same)


class MappedMessages:
    """The wire items of the messages of recent requests, reused for the unchanged start of the next request.

    `wire_items(messages, settings, to_items, merge)` returns what mapping every message from scratch returns:
    `merge(messages)`, then `to_items` of each merged message, the items concatenated in order; as a `WireList`,
    which carries each item's JSON bytes, encoded once when the item was made (see `_json`).
    """

    __slots__ = ("_entries", "_lock", "_settings")

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._lock = threading.Lock()
        self._settings: Hashable = None

    def clear(self) -> None:
        """Forget every kept conversation."""
        with self._lock:
            self._entries = []

    def wire_items(
        self, messages: tuple[Message, ...], settings: Hashable, to_items: WireItems, merge: Merge
    ) -> WireList:
        """The wire items of `messages` (a new list; the item dicts are shared with the cache and must not be
        changed), mapping only what the kept entries do not already hold."""
        if not messages:
            return WireList((), ())
        with self._lock:
            if settings != self._settings:
                self._entries = []
                self._settings = settings
            entries = tuple(self._entries)
        base, same = _best_entry(entries, settings, messages)
        if base is not None and same == len(messages) == len(base.messages):
            self._use(base, base)
            return WireList(base.items, base.encoded or ())
        entry = _extended(base, same, messages, settings, to_items, merge)
        self._use(entry, base if base is not None and same == len(base.messages) else None)
        return WireList(entry.items, entry.encoded or ())

    def _use(self, entry: _Entry, replaces: _Entry | None) -> None:
        """Put `entry` first (in place of `replaces`, when given and still kept), dropping the oldest past
        `ENTRIES`."""
        with self._lock:
            if entry.settings != self._settings:
                return
            kept = [e for e in self._entries if e is not entry and e is not replaces]
            kept.insert(0, entry)
            del kept[ENTRIES:]
            self._entries = kept


def _encoded(items: list[dict[str, Any]]) -> tuple[bytes, ...] | None:
    """Each item's JSON bytes; `None` when one holds a value JSON cannot (a non-finite number): such a body is
    encoded whole when it is sent, which raises."""
    try:
        return tuple(map(dumps, items))
    except ValueError:
        return None


def _best_entry(
    entries: Sequence[_Entry], settings: Hashable, messages: tuple[Message, ...]
) -> tuple[_Entry | None, int]:
    """The kept entry sharing the longest start with `messages`, and the length of that start (`None, 0` when
    none shares its first message). An entry whose messages all start `messages` is found by one identity check of
    its last message before the full check."""
    if not messages:
        return None, 0
    first = messages[0]
    candidates = [e for e in entries if e.settings == settings and e.messages and e.messages[0] is first]
    best: _Entry | None = None
    best_same = 0
    size = len(messages)
    for entry in candidates:  # whole-prefix matches first: the usual case of a conversation that grew
        length = len(entry.messages)
        if length <= size and length > best_same and messages[length - 1] is entry.messages[length - 1]:
            same = _same_prefix(entry.messages, messages)
            if same > best_same:
                best, best_same = entry, same
    if best is not None and best_same == len(best.messages):
        return best, best_same
    for entry in candidates:
        same = _same_prefix(entry.messages, messages)
        if same > best_same:
            best, best_same = entry, same
    return best, best_same


def _extended(
    base: _Entry | None,
    same: int,
    messages: tuple[Message, ...],
    settings: Hashable,
    to_items: WireItems,
    merge: Merge,
) -> _Entry:
    """The entry for `messages`: the runs of `base` that end before its first `same` messages end, then the rest
    of `messages` mapped run by run."""
    if base is None:
        runs = start = first_item = 0
    else:
        runs = _runs_kept(base, same)
        start = base.run_ends[runs - 1] if runs else 0
        first_item = base.item_ends[runs - 1] if runs else 0
    items: list[dict[str, Any]] = []
    run_ends: list[int] = []
    item_ends: list[int] = []
    add_run_end = run_ends.append
    add_item_end = item_ends.append
    size = len(messages)
    index = start
    while index < size:
        message = messages[index]
        role = message.role
        end = index + 1
        while end < size and messages[end].role == role:
            end += 1
        items += to_items(message if end == index + 1 else merge(messages[index:end])[0])
        add_run_end(end)
        add_item_end(first_item + len(items))
        index = end
    encoded = _encoded(items)
    if base is None or not runs:
        return _Entry(settings, messages, tuple(items), encoded, tuple(run_ends), tuple(item_ends))
    return _Entry(
        settings,
        messages,
        base.items[:first_item] + tuple(items),
        None if base.encoded is None or encoded is None else base.encoded[:first_item] + encoded,
        base.run_ends[:runs] + tuple(run_ends),
        base.item_ends[:runs] + tuple(item_ends),
    )
