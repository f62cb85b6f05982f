"""A run as a stream of events: what ``agent.stream(...)`` and ``agent.astream(...)`` return.

The stream is built on the run's own seams, not on a second copy of the turn. A streamed run carries a ``Feed`` in
its run context (and so does every subagent run below it); each State of those runs hands it every entry it records
(``state._tap``), the think step its streamed text, and the run its end. The feed only queues what it is told, on
the recording thread: converting to events happens on the reader's side, with the same function that turns a
saved history into events (``events.entry_events``), so a live stream and a history read later agree.

The run goes on by itself (a daemon thread for ``stream``, a Task for ``astream``); a reader that falls behind
never slows it. What the reader has not read yet is one small record per entry (the entries are the State's own)
plus the streamed pieces (text, thinking, a tool call's arguments), each run of pieces of one kind merged into one
while unread.

Leaving the stream early (``close()``, ``break`` out of a ``with`` block, the stream being dropped, cancelling the
task that reads an ``astream``) stops the run the way Ctrl+C does: a ``KeyboardInterrupt`` raised in the run's
thread (a sync run), or the run's Task cancelled (an async run). The run then closes its pending calls and saves,
as on Ctrl+C, and the stream waits for that before it returns.
"""

from __future__ import annotations

import asyncio
import contextvars
import ctypes
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from alpineagents._async import run_in_thread, start_daemon
from alpineagents._turn.driver import Steps, adrive, drive
from alpineagents._turn.run import to_state
from alpineagents.events import (
    RunEnded,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    checked_after,
    entry_events,
    events_of_state,
)
from alpineagents.types import HistoryEntry, ModelReplyEntry, ToolCall

if TYPE_CHECKING:
    from alpineagents._turn.seams import Feed
    from alpineagents.state import State

__all__ = ["EventStream", "AsyncEventStream", "Runner", "STOP_DEADLINE"]

STOP_DEADLINE = 30.0
"""How long leaving a stream waits for its run to close its calls and save (seconds)."""

_ENTRY, _TEXT, _END, _THINKING, _ARGS = 0, 1, 2, 3, 4

_Item = Sequence[Any]
"""One item of the queue: its tag (`_ENTRY`, `_TEXT`, `_END`, `_THINKING`, `_ARGS`), the State's id and path, the
position, the body the tag says (a history entry; the chunks of text or thinking, in a list that later chunks join
while it waits; the run's end; the pieces of a call's arguments, likewise), and for `_ARGS` the call's id and its
tool's name."""


class Runner(Protocol):
    """What a stream needs from an Agent: the step sequence of a run followed by a feed."""

    def _run_steps(self, prompt_or_state: str | State, method: str, feed: Feed | None = None) -> Steps: ...


class _Queue:
    """The feed of one stream: what the run's States tell it, queued for the reader (see the module).

    ``lock`` guards the queue; ``wake`` is called with the lock held when the reader said it waits.
    """

    __slots__ = ("lock", "wake", "items", "paths", "waiting")

    def __init__(self, top: State, lock: AbstractContextManager[object], wake: Callable[[], None]) -> None:
        self.lock = lock
        self.wake = wake
        self.items: deque[Any] = deque()
        self.paths: dict[str, tuple[str, ...]] = {top.id: (top.id,)}
        self.waiting = False

    def _path(self, state: State) -> tuple[str, ...]:
        state_id = state.id
        path = self.paths.get(state_id)
        if path is None:  # a subagent's State: below the State whose call started it
            above = self.paths.get(state.parent_id or "")
            path = self.paths[state_id] = (*above, state_id) if above is not None else (state_id,)
        return path

    def _push(self, item: _Item) -> None:
        self.items.append(item)
        if self.waiting:
            self.waiting = False
            self.wake()

    def entry(self, state: State, position: int, entry: HistoryEntry) -> None:
        with self.lock:
            self._push((_ENTRY, state.id, self._path(state), position, entry))

    def text(self, state: State, chunk: str) -> None:
        self._piece(_TEXT, state, chunk)

    def thinking(self, state: State, chunk: str) -> None:
        self._piece(_THINKING, state, chunk)

    def tool_args(self, state: State, call_id: str, name: str, delta: str) -> None:
        self._piece(_ARGS, state, delta, call_id, name)

    def _piece(self, tag: int, state: State, chunk: str, *call: str) -> None:
        """Queue a streamed piece; one not read yet is merged with the piece before it when that is of the same
        kind, State (and call): what waits stays one item per run of pieces."""
        state_id = state.id
        with self.lock:
            items = self.items
            last = items[-1] if items else None
            if last is not None and last[0] == tag and last[1] == state_id and (not call or last[5] == call[0]):
                last[4].append(chunk)
                return
            self._push([tag, state_id, self._path(state), state._acc.history_len - 1, [chunk], *call])

    def ended(self, state: State, error: BaseException | None) -> None:
        end = RunEnded(
            state_id=state.id,
            path=self._path(state),
            position=state._acc.history_len - 1,
            stopped=state.stopped,
            error=None if error is None else _error_text(error),
            waiting=_waiting_of(state),
        )
        with self.lock:
            self._push((_END, state.id, end.path, end.position, end))

    def take(self) -> Any:
        """The oldest item, or None (then the reader is woken by the next item)."""
        with self.lock:
            if self.items:
                return self.items.popleft()
            self.waiting = True
            return None


def _error_text(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _waiting_of(state: State) -> tuple[Any, ...]:
    found = getattr(type(state), "awaiting_approval", None)
    return tuple(found.__get__(state)) if found is not None else ()


class _Reader:
    """Turns queued items into events, in order (the reader's side of a stream)."""

    __slots__ = ("ready", "streamed", "calls")

    def __init__(self) -> None:
        self.ready: deque[StreamEvent] = deque()
        self.streamed: set[str] = set()  # States whose current reply streamed its text
        self.calls: dict[str, dict[str, ToolCall]] = {}  # the calls of each State's latest reply

    def add(self, item: _Item) -> None:
        tag, state_id, path, position, body = item[:5]
        if tag == _TEXT:
            self.streamed.add(state_id)
            self.ready.append(TextDelta(state_id=state_id, path=path, position=position, text="".join(body)))
            return
        if tag == _END:
            self.ready.append(body)
            return
        if tag == _THINKING:
            self.ready.append(ThinkingDelta(state_id=state_id, path=path, position=position, text="".join(body)))
            return
        if tag == _ARGS:
            delta = "".join(body)
            self.ready.append(
                ToolCallArgsDelta(
                    state_id=state_id, path=path, position=position, call_id=item[5], name=item[6], delta=delta
                )
            )
            return
        streamed = False
        if isinstance(body, ModelReplyEntry):
            self.calls[state_id] = {call.id: call for call in body.content.message.tool_calls}
            streamed = state_id in self.streamed
            self.streamed.discard(state_id)
        where = {"state_id": state_id, "path": path, "position": position}
        self.ready.extend(entry_events(body, where, self.calls.get(state_id, {}), streamed=streamed))  # type: ignore[arg-type]


class _Base:
    """What the sync and async streams share: the State, the replay, the queue and the reader."""

    state: State
    """The State the stream runs (a prompt becomes a new State when the stream is made)."""

    def __init__(self, method: str, source: Runner, prompt_or_state: str | State, after: int | None) -> None:
        self.state = to_state(prompt_or_state, method)
        self._source = source
        self._after = None if after is None else checked_after(after)
        self._reader = _Reader()
        self._started = False
        self._closed = False
        self._error: BaseException | None = None
        self._result: Any = None

    @property
    def result(self) -> Any:
        """What the run returned (for a ``@loop``: ``state.answer``), once the stream has ended."""
        return self._result

    def _replay(self) -> list[StreamEvent]:
        """The events of the history after ``after`` (subagents' runs inline, read from the store when not in
        memory): what the stream yields before the live run."""
        return [] if self._after is None else list(events_of_state(self.state, after=self._after))

    def _next_ready(self, queue: _Queue) -> StreamEvent | None:
        ready = self._reader.ready
        while not ready:
            item = queue.take()
            if item is None:
                return None
            self._reader.add(item)
        return ready.popleft()


class EventStream(_Base):
    """The events of a run, as it goes (``agent.stream(...)``): an iterator, and a context manager that stops the
    run when its block is left early. See the module ``alpineagents.events`` for the events."""

    def __init__(self, source: Runner, prompt_or_state: str | State, after: int | None = None) -> None:
        super().__init__("stream", source, prompt_or_state, after)
        self._lock = threading.Condition(threading.Lock())
        self._queue = _Queue(self.state, self._lock, self._lock.notify)
        self._thread: threading.Thread | None = None
        self._done = False
        self._guard = threading.Lock()  # the interrupt is sent only while the run's call is going on

    def _start(self) -> None:
        self._started = True
        self._reader.ready.extend(self._replay())
        context = contextvars.copy_context()
        self._thread = start_daemon(lambda: context.run(self._work), "alpineagents-stream")

    def _work(self) -> None:
        try:
            try:
                self._result = drive(self._source._run_steps(self.state, "run", self._queue))
            except BaseException as error:  # noqa: BLE001 - raised by the reader, after the events
                self._error = error
            with self._guard:
                self._done = True
        except KeyboardInterrupt:  # the interrupt of a reader that left, arriving after the run
            with self._guard:
                self._done = True
        with self._lock:
            self._lock.notify_all()

    def __iter__(self) -> Iterator[StreamEvent]:
        return self

    def __next__(self) -> StreamEvent:
        if self._closed:
            raise StopIteration
        if not self._started:
            self._start()
        while True:
            event = self._next_ready(self._queue)
            if event is not None:
                return event
            with self._lock:
                if not self._queue.items:
                    if self._done:
                        break
                    self._lock.wait(0.5)
        self._closed = True
        error, self._error = self._error, None
        if error is not None:
            raise error
        raise StopIteration

    def close(self) -> None:
        """Stop reading. A run still going is stopped as by Ctrl+C (its calls closed, the State saved); returns
        when it has ended (or after ``STOP_DEADLINE`` seconds)."""
        if self._closed:
            return
        self._closed = True
        thread = self._thread
        if thread is None or thread.ident is None:
            return
        with self._guard:
            if not self._done:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(thread.ident), ctypes.py_object(KeyboardInterrupt)
                )
        thread.join(STOP_DEADLINE)
        error = self._error
        if error is not None and not isinstance(error, KeyboardInterrupt):
            self._error = None
            raise error

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if self._started and not self._closed:
            try:
                self.close()
            except BaseException:  # noqa: BLE001, S110 - nobody left to tell; the error is in the State's history
                pass


class AsyncEventStream(_Base):
    """The events of a run, as it goes (``agent.astream(...)``): an async iterator, and an async context manager
    that stops the run when its block is left early. Cancelling the task that reads it cancels the run. The replay
    of ``after=N`` is computed on a worker thread (it may read subagents from the store), not on the event loop."""

    def __init__(self, source: Runner, prompt_or_state: str | State, after: int | None = None) -> None:
        super().__init__("astream", source, prompt_or_state, after)
        self._waiter: asyncio.Future[None] | None = None  # what the reader awaits while nothing is queued
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._queue = _Queue(self.state, threading.Lock(), self._wake)
        self._task: asyncio.Task[Any] | None = None

    def _wake(self) -> None:
        if threading.get_ident() == self._loop_thread:
            self._resolve()
        elif self._loop is not None:
            self._loop.call_soon_threadsafe(self._resolve)

    def _resolve(self, *_: object) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _start(self) -> None:
        if self._after is not None:  # the replay may read subagents from a store: not on the event loop's thread
            self._reader.ready.extend(await run_in_thread(self._replay, name="alpineagents-replay"))
        self._started = True
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        steps = self._source._run_steps(self.state, "arun", self._queue)
        self._task = asyncio.ensure_future(adrive(steps))
        self._task.add_done_callback(self._resolve)

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self

    async def __anext__(self) -> StreamEvent:
        if self._closed:
            raise StopAsyncIteration
        if not self._started:
            await self._start()
        task = self._task
        assert task is not None
        while True:
            event = self._next_ready(self._queue)
            if event is not None:
                return event
            if task.done():
                if self._queue.items:
                    continue
                break
            # One future per wait, resolved by the next queued item or by the run's end (a plain future: no Task).
            assert self._loop is not None
            self._waiter = waiter = self._loop.create_future()
            try:
                await waiter
            except asyncio.CancelledError:
                await self._stop()
                raise
            finally:
                self._waiter = None
        self._closed = True
        return self._finish(task)

    def _finish(self, task: asyncio.Task[Any]) -> Any:
        if task.cancelled():
            raise StopAsyncIteration
        error = task.exception()
        if error is not None:
            raise error
        self._result = task.result()
        raise StopAsyncIteration

    async def _stop(self) -> None:
        self._closed = True
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_DEADLINE)
        except (asyncio.CancelledError, Exception):  # noqa: BLE001, S110 - the run's end is in its history
            pass

    async def aclose(self) -> None:
        """Stop reading. A run still going is cancelled (its calls closed, the State saved); returns when it has
        ended (or after ``STOP_DEADLINE`` seconds)."""
        if not self._closed:
            await self._stop()

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
