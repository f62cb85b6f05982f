"""A run as a sequence of items a stream sends: its history entries one by one, the text of the reply being
written as it arrives, and the end. One rule for every dialect and for a stream that is picked up again.

Where a stream stands is a `Cursor`: the number of history entries already sent, and how many characters of the
reply being written were already sent as deltas. Every item carries the cursor after it; it is the SSE event id, so
a client that reconnects with `Last-Event-ID` gets exactly what it missed: the entries after the first N, and the
reply it was reading minus the characters it already has (whether that reply has been recorded meanwhile or is
still being written).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from alpineagents.serve.errors import ApiError
from alpineagents.state import State
from alpineagents.types import ErrorEntry, HistoryEntry, ModelReplyEntry, ModelRequestEntry, WaitingCall
from alpineagents.viewer.runs import ending_error

_CURSOR = re.compile(r"(\d{1,12})(?:\.(\d{1,12}))?")

HEARTBEAT_SECONDS = 15.0
"""How long a stream stays silent before it sends an SSE comment (proxies close connections that say nothing)."""


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a stream stands: `entries` history entries sent, and `chars` characters of the reply being written."""

    entries: int = 0
    chars: int = 0

    def __str__(self) -> str:
        return str(self.entries) if not self.chars else f"{self.entries}.{self.chars}"

    @classmethod
    def parse(cls, text: str | None) -> Cursor:
        """The cursor of an event id (`"12"` or `"12.40"`); no text is the start. A 400 error for anything else."""
        if text is None or not text.strip():
            return cls()
        found = _CURSOR.fullmatch(text.strip())
        if found is None:
            raise ApiError(
                400,
                "bad_cursor",
                f"{text[:40]!r} is not an event id of this server: send the id of the last event received "
                "(a number, or two numbers joined by a dot) as Last-Event-ID or ?after=",
            )
        return cls(int(found.group(1)), int(found.group(2) or 0))


@dataclass(frozen=True, slots=True)
class Entry:
    """A history entry at `position`; `skip` characters of its reply text were already sent as deltas, and
    `request` is the position of the latest model request (the one a reply answers)."""

    position: int
    entry: HistoryEntry
    skip: int = 0
    request: int = -1

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.position + 1)


@dataclass(frozen=True, slots=True)
class Text:
    """More text of the reply to the model request at `request` (a history position), not recorded yet."""

    request: int
    delta: str
    cursor: Cursor


@dataclass(frozen=True, slots=True)
class End:
    """The run is not running (any more): how it stands."""

    cursor: Cursor
    finished: bool
    answer: Any
    stopped: Any
    """`state.stopped`: why it stopped, or None."""
    error: str | None
    """The error that ended the latest run ("Type: message"), or None."""
    waiting: tuple[WaitingCall, ...] = ()
    """The calls waiting for a person's decision."""

    @property
    def failed(self) -> bool:
        """True when the latest run ended with an error (not stopped, not finished)."""
        return self.error is not None and not self.finished and self.stopped is None


Item = Entry | Text | End


class Source(Protocol):
    """What a stream reads a run from: a run going on in this process, or one read from the store."""

    def entries(self) -> Sequence[HistoryEntry]:
        """The history as it stands."""
        ...

    def writing(self) -> tuple[int, str] | None:
        """`(position of the model request, text so far)` of the reply being written, or None."""
        ...

    def running(self) -> bool: ...

    async def changed(self, timeout: float) -> bool:
        """Wait until something changed (True) or `timeout` seconds passed (False)."""
        ...

    def end(self) -> End:
        """How the run stands once it is not running."""
        ...


def end_of(state: State, saved: int | None = None) -> End:
    """How `state` stands, its history taken up to `saved` entries (all by default)."""
    entries = state.history if saved is None else state.history[:saved]
    waiting = tuple(getattr(state, "awaiting_approval", ()))
    return End(Cursor(len(entries)), state.finished, state.answer, state.stopped, ending_error(entries), waiting)


async def items(source: Source, after: Cursor, *, heartbeat: float = HEARTBEAT_SECONDS) -> AsyncIterator[Item | None]:
    """The items of a run after `after`, as the run goes, then its `End`; None is a heartbeat (nothing new)."""
    position, chars = after.entries, after.chars
    request = answered = -1  # the positions of the latest model request, and of the latest one answered
    history = source.entries()
    for index in range(min(position, len(history))):
        request, answered = _follow(history[index], index, request, answered)
    while True:
        was_running = source.running()  # read before the history: an end seen here comes after every entry
        history = source.entries()
        while position < len(history):
            entry = history[position]
            skip = 0
            if isinstance(entry, ModelReplyEntry):
                skip, chars = chars, 0
            elif isinstance(entry, (ModelRequestEntry, ErrorEntry)):
                chars = 0
            request, answered = _follow(entry, position, request, answered)
            yield Entry(position, entry, skip, request)
            position += 1
        writing = source.writing()
        if writing is not None and answered < writing[0] < position and len(writing[1]) > chars:
            text = writing[1]
            yield Text(writing[0], text[chars:], Cursor(position, len(text)))
            chars = len(text)
        if not was_running:
            yield source.end()
            return
        if not await source.changed(heartbeat):
            yield None


def _follow(entry: HistoryEntry, position: int, request: int, answered: int) -> tuple[int, int]:
    """The latest model request and the latest one answered (by a reply or an error), after `entry`."""
    if isinstance(entry, ModelRequestEntry):
        return position, answered
    if isinstance(entry, (ModelReplyEntry, ErrorEntry)):
        return request, request
    return request, answered
