"""A run as a sequence of items a stream sends: its history entries one by one, the text of the reply being
written as it arrives, and the end. One rule for every dialect and for a stream that is picked up again.

Where a stream stands is a `Cursor`: the number of history entries already sent, and how many characters of the
reply being written were already sent as deltas: of its text, and of its thinking and tool call arguments (which
a live run streams and the history keeps in another form). Every item carries the cursor after it; it is the SSE
event id, so a client that reconnects with `Last-Event-ID` gets exactly what it missed: the entries after the first
N, and the reply it was reading minus the characters it already has (whether that reply has been recorded meanwhile
or is still being written). Thinking and argument pieces are live only: a stream that reads a reply once it is
recorded gets its text and calls whole, and no thinking.
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

_CURSOR = re.compile(r"(\d{1,12})(?:\.(\d{1,12}))?(?:\.(\d{1,12}))?")

HEARTBEAT_SECONDS = 15.0
"""How long a stream stays silent before it sends an SSE comment (proxies close connections that say nothing)."""


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a stream stands: `entries` history entries sent, `chars` characters of the text of the reply being
    written, and `extra` characters of its thinking and tool call arguments."""

    entries: int = 0
    chars: int = 0
    extra: int = 0

    def __str__(self) -> str:
        if self.extra:
            return f"{self.entries}.{self.chars}.{self.extra}"
        return str(self.entries) if not self.chars else f"{self.entries}.{self.chars}"

    @classmethod
    def parse(cls, text: str | None) -> Cursor:
        """The cursor of an event id (`"12"`, `"12.40"` or `"12.40.7"`); no text is the start. A 400 error for
        anything else."""
        if text is None or not text.strip():
            return cls()
        found = _CURSOR.fullmatch(text.strip())
        if found is None:
            raise ApiError(
                400,
                "bad_cursor",
                f"{text[:40]!r} is not an event id of this server: send the id of the last event received "
                "(a number, or two or three numbers joined by dots) as Last-Event-ID or ?after=",
            )
        return cls(int(found.group(1)), int(found.group(2) or 0), int(found.group(3) or 0))


@dataclass(frozen=True, slots=True)
class Entry:
    """A history entry at `position`; `skip` characters of its reply text were already sent as deltas, `request`
    is the position of the latest model request (the one a reply answers), and `streamed` the ids of the reply's
    calls whose arguments the reader already has as pieces."""

    position: int
    entry: HistoryEntry
    skip: int = 0
    request: int = -1
    streamed: frozenset[str] = frozenset()

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
class Piece:
    """More thinking (`call_id` None) or more of the arguments of the call `call_id` to the tool `name`, of the
    reply to the model request at `request`, not recorded yet."""

    request: int
    call_id: str | None
    name: str
    delta: str
    cursor: Cursor


@dataclass(frozen=True, slots=True)
class Written:
    """What a live run has streamed of the reply to the model request at `request`, in the order it came: pieces
    of text (`kind` "text"), of thinking ("thinking") and of a call's arguments ("args", with its id and tool)."""

    kind: str
    delta: str
    call_id: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class Writing:
    """The reply being written (or the latest one written) by a live run: the request it answers and its pieces."""

    request: int
    pieces: tuple[Written, ...]

    @property
    def text(self) -> str:
        return "".join(piece.delta for piece in self.pieces if piece.kind == "text")


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


Item = Entry | Text | Piece | End


class Source(Protocol):
    """What a stream reads a run from: a run going on in this process, or one read from the store."""

    def entries(self) -> Sequence[HistoryEntry]:
        """The history as it stands."""
        ...

    def writing(self) -> Writing | None:
        """What was streamed of the latest reply of a live run, or None."""
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
    position = after.entries
    reading = _Reading(after.chars, after.extra)
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
            streamed: frozenset[str] = frozenset()
            if isinstance(entry, ModelReplyEntry):
                for item in reading.new(source.writing(), request, position, answered):  # what came before it
                    yield item
                skip, streamed = reading.chars, frozenset(reading.calls)
                reading = _Reading()
            elif isinstance(entry, (ModelRequestEntry, ErrorEntry)):
                reading = _Reading()
            request, answered = _follow(entry, position, request, answered)
            yield Entry(position, entry, skip, request, streamed)
            position += 1
        writing = source.writing()
        if writing is not None and answered < writing.request < position:
            for item in reading.new(writing, writing.request, position, answered):
                yield item
        if not was_running:
            yield source.end()
            return
        if not await source.changed(heartbeat):
            yield None


class _Reading:
    """How much of the reply being written one stream has sent: `chars` characters of its text, `extra` of its
    thinking and arguments, and the calls whose arguments it has begun."""

    def __init__(self, chars: int = 0, extra: int = 0) -> None:
        self.chars = chars
        self.extra = extra
        self.calls: set[str] = set()

    def new(self, writing: Writing | None, request: int, position: int, answered: int) -> list[Text | Piece]:
        """The pieces of `writing` this stream has not sent, consecutive ones of one kind joined, in the order
        they came; nothing unless `writing` answers `request` and that request is not answered yet."""
        if writing is None or writing.request != request or answered >= request:
            return []
        chars, extra = self.chars, self.extra  # what was sent is a prefix of the pieces: skip it
        out: list[Text | Piece] = []
        for piece in writing.pieces:
            delta = piece.delta
            if piece.kind == "text":
                cut, chars = min(chars, len(delta)), chars - min(chars, len(delta))
                delta = delta[cut:]
                if delta:
                    self.chars += len(delta)
                    before = out[-1] if out else None
                    joined = before.delta if isinstance(before, Text) else ""
                    if joined:
                        out.pop()
                    out.append(Text(request, joined + delta, Cursor(position, self.chars, self.extra)))
                continue
            cut, extra = min(extra, len(delta)), extra - min(extra, len(delta))
            delta = delta[cut:]
            call_id = piece.call_id if piece.kind == "args" else None
            begins = call_id is not None and call_id not in self.calls and not cut  # a call shows as it begins
            if call_id is not None and (cut or delta):
                self.calls.add(call_id)
            if not delta and not begins:
                continue
            if call_id is not None:
                self.calls.add(call_id)
            self.extra += len(delta)
            before = out[-1] if out else None
            if isinstance(before, Piece) and before.call_id == call_id:
                out[-1] = Piece(
                    request, call_id, piece.name, before.delta + delta, Cursor(position, self.chars, self.extra)
                )
            else:
                out.append(Piece(request, call_id, piece.name, delta, Cursor(position, self.chars, self.extra)))
        return out


def _follow(entry: HistoryEntry, position: int, request: int, answered: int) -> tuple[int, int]:
    """The latest model request and the latest one answered (by a reply or an error), after `entry`."""
    if isinstance(entry, ModelRequestEntry):
        return position, answered
    if isinstance(entry, (ModelReplyEntry, ErrorEntry)):
        return request, request
    return request, answered
