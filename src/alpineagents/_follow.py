"""Following a State that runs elsewhere (a worker, another process) through its store: ``store.follow(...)``.

The store is read again every ``poll`` seconds; the entries saved since the last read become their events, by the
same rule a replay uses (``events.replay_events``, that of ``events_of_state``), so a follower gets what
``agent.stream`` would give from that history, at save-point granularity: whole texts, no deltas, no ``RunEnded``
(the end of a run is not saved). Subagents' runs come inline, tagged with their place, where a replay of the
finished run gives them: right before the entry of the State above that ends the call's part (its result, or its
wait record), read then from the same store. Every store works this way, since it only uses the role's
``read``/``aread``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from alpineagents._history.decode import entry_from_dict
from alpineagents._values.approval import children_named
from alpineagents.errors import fix_message
from alpineagents.events import StreamEvent, checked_after, replay_events
from alpineagents.types import HistoryEntry

if TYPE_CHECKING:
    from alpineagents.store import Record

__all__ = ["Readable", "follow", "afollow"]


class Readable(Protocol):
    """What following needs from a store: the role's ``read`` and ``aread``."""

    def read(self, state_id: str) -> Any: ...

    async def aread(self, state_id: str) -> Any: ...


class _Saved:
    """A State as its store has saved it, for the replay: its id, its decoded entries, its subagents read."""

    def __init__(self, state_id: str, history: list[HistoryEntry], found: dict[str, _Saved]) -> None:
        self.id = state_id
        self.history: Sequence[HistoryEntry] = history
        self._found = found

    def child(self, child_id: str) -> _Saved:
        return self._found[child_id]


def _decoded(record: Record, start: int = 0) -> list[HistoryEntry]:
    return [entry_from_dict(entry) for entry in record.entries[start:]]


class _Cursor:
    """Where a follower is: the top State's entries read so far, the last position it gave, and the subagents
    read for the entries it is about to give."""

    def __init__(self, state_id: str, after: int | None, poll: float, idle: float | None) -> None:
        if not (isinstance(poll, (int, float)) and poll > 0) or (idle is not None and not idle >= 0):
            raise ValueError(
                fix_message(
                    f"follow() needs poll > 0 and idle None or >= 0 seconds (got: poll={poll!r}, idle={idle!r})",
                    "pass how often to read the store, and how long to wait without news before ending",
                    "for event in store.follow(state_id, after=-1, poll=0.5, idle=30): ...",
                )
            )
        self.seen = -1 if after is None else checked_after(after)
        self.found: dict[str, _Saved] = {}
        self.top = _Saved(state_id, [], self.found)
        self.entries: list[HistoryEntry] = []
        self.unsaved = False  # a subagent named by a new entry is not in the store yet: give those entries later
        self.news_at = time.monotonic()
        self.idle = idle

    def take(self, record: Record | None) -> None:
        """Decode the top State's entries saved since the last read."""
        if record is not None and len(record.entries) > len(self.entries):
            self.entries.extend(_decoded(record, len(self.entries)))
            self.top.history = self.entries

    def missing(self) -> list[str]:
        """The subagents the new entries need (with theirs, and so on) that are not read yet."""
        if self.unsaved:
            return []
        wanted = [child for entry in self.entries[self.seen + 1 :] for child in children_named(entry)]
        missing: list[str] = []
        visited: set[str] = set()
        while wanted:
            child_id = wanted.pop()
            if child_id in visited:
                continue
            visited.add(child_id)
            node = self.found.get(child_id)
            if node is None:
                missing.append(child_id)
            else:
                wanted.extend(child for entry in node.history for child in children_named(entry))
        return missing

    def give(self, child_id: str, record: Record | None) -> None:
        """Keep a subagent read from the store (until the entries that need it are given)."""
        if record is None:
            self.unsaved = True
        else:
            self.found[child_id] = _Saved(child_id, _decoded(record), self.found)

    def events(self) -> list[StreamEvent]:
        """The events of the new entries, with the subagent runs they end inline."""
        found: list[StreamEvent] = []
        if len(self.entries) > self.seen + 1 and not self.unsaved:
            found = list(replay_events(self.top, self.seen + 1, growing=True))
            self.seen = len(self.entries) - 1
            self.news_at = time.monotonic()
        self.found.clear()  # a subagent may run again: read it afresh for the entries that end its next run
        self.unsaved = False
        return found

    def done(self) -> bool:
        return self.idle is not None and time.monotonic() - self.news_at >= self.idle


def follow(
    store: Readable, state_id: str, *, after: int | None = None, poll: float = 0.25, idle: float | None = None
) -> Iterator[StreamEvent]:
    """The events of `state_id`'s saved history after position `after` (all when `None`), then of each entry
    saved later, read every `poll` seconds, with its subagents' runs inline (read from the same store); ends after
    `idle` seconds without a new entry (`None`: never, leave the loop yourself). A State not saved yet is waited
    for, and so are entries that name a subagent not saved yet."""
    cursor = _Cursor(state_id, after, poll, idle)
    while True:
        cursor.take(store.read(state_id))
        while missing := cursor.missing():
            for child_id in missing:
                cursor.give(child_id, store.read(child_id))
        yield from cursor.events()
        if cursor.done():
            return
        time.sleep(poll)


async def afollow(
    store: Readable, state_id: str, *, after: int | None = None, poll: float = 0.25, idle: float | None = None
) -> AsyncIterator[StreamEvent]:
    """The async twin of `follow` (reads with `aread`)."""
    cursor = _Cursor(state_id, after, poll, idle)
    while True:
        cursor.take(await store.aread(state_id))
        while missing := cursor.missing():
            for child_id in missing:
                cursor.give(child_id, await store.aread(child_id))
        for event in cursor.events():
            yield event
        if cursor.done():
            return
        await asyncio.sleep(poll)
