"""Following a State that runs elsewhere (a worker, another process) through its store: ``store.follow(...)``.

The store is read again every ``poll`` seconds; each entry saved since the last read becomes its events, by the
same function a live stream uses (``events.entry_events``), so a follower gets what ``agent.stream`` would give
from that history, at save-point granularity: whole texts, no deltas, no ``RunEnded`` (the end of a run is not
saved). Every store works this way, since it only uses the role's ``read``/``aread``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from alpineagents._history.decode import entry_from_dict
from alpineagents.errors import fix_message
from alpineagents.events import StreamEvent, checked_after, entry_events
from alpineagents.types import ModelReplyEntry, ToolCall

if TYPE_CHECKING:
    from alpineagents.store import Record

__all__ = ["Readable", "follow", "afollow"]


class Readable(Protocol):
    """What following needs from a store: the role's ``read`` and ``aread``."""

    def read(self, state_id: str) -> Any: ...

    async def aread(self, state_id: str) -> Any: ...


class _Cursor:
    """Where a follower is: the last position it gave, and the calls of the latest reply (for wait records)."""

    def __init__(self, state_id: str, after: int | None, poll: float, idle: float | None) -> None:
        if not (isinstance(poll, (int, float)) and poll > 0) or (idle is not None and not idle >= 0):
            raise ValueError(
                fix_message(
                    f"follow() needs poll > 0 and idle None or >= 0 seconds (got: poll={poll!r}, idle={idle!r})",
                    "pass how often to read the store, and how long to wait without news before ending",
                    "for event in store.follow(state_id, after=-1, poll=0.5, idle=30): ...",
                )
            )
        self.state_id = state_id
        self.seen = -1 if after is None else checked_after(after)
        self.path = (state_id,)
        self.calls: dict[str, ToolCall] = {}
        self.started = False
        self.news_at = time.monotonic()
        self.idle = idle

    def events(self, record: Record | None) -> list[StreamEvent]:
        if record is None:
            return []
        entries: Sequence[Mapping[str, Any]] = record.entries
        if not self.started:
            self.started = True
            self._find_calls(entries)
        found: list[StreamEvent] = []
        for position in range(self.seen + 1, len(entries)):
            entry = entry_from_dict(entries[position])
            if isinstance(entry, ModelReplyEntry):
                self.calls = {call.id: call for call in entry.content.message.tool_calls}
            where = {"state_id": self.state_id, "path": self.path, "position": position}
            found.extend(entry_events(entry, where, self.calls))  # type: ignore[arg-type]  # all StreamEvents
        if len(entries) > self.seen + 1:
            self.seen = len(entries) - 1
            self.news_at = time.monotonic()
        return found

    def _find_calls(self, entries: Sequence[Mapping[str, Any]]) -> None:
        for index in range(min(self.seen, len(entries) - 1), -1, -1):
            if entries[index].get("kind") == "model_reply":
                reply = entry_from_dict(entries[index])
                if isinstance(reply, ModelReplyEntry):
                    self.calls = {call.id: call for call in reply.content.message.tool_calls}
                return

    def done(self) -> bool:
        return self.idle is not None and time.monotonic() - self.news_at >= self.idle


def follow(
    store: Readable, state_id: str, *, after: int | None = None, poll: float = 0.25, idle: float | None = None
) -> Iterator[StreamEvent]:
    """The events of `state_id`'s saved history after position `after` (all when `None`), then of each entry
    saved later, read every `poll` seconds; ends after `idle` seconds without a new entry (`None`: never, leave
    the loop yourself). A State not saved yet is waited for."""
    cursor = _Cursor(state_id, after, poll, idle)
    while True:
        yield from cursor.events(store.read(state_id))
        if cursor.done():
            return
        time.sleep(poll)


async def afollow(
    store: Readable, state_id: str, *, after: int | None = None, poll: float = 0.25, idle: float | None = None
) -> AsyncIterator[StreamEvent]:
    """The async twin of `follow` (reads with `aread`)."""
    cursor = _Cursor(state_id, after, poll, idle)
    while True:
        for event in cursor.events(await store.aread(state_id)):
            yield event
        if cursor.done():
            return
        await asyncio.sleep(poll)
