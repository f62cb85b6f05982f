"""The runs a server has going on in this process, and what a stream reads a run from.

`Runs` starts each run as an asyncio task that reads the run's own event stream (`agent.astream`), and keeps a
`Live` for it until it ends: the State being run, the text of the reply being written, and a signal that wakes the
streams when anything happened. A stream never waits for a slow reader and nothing is queued for it: each stream
reads the State's history from where it stands, so a slow reader costs no memory and misses nothing, and a
thousand readers of one run cost the run nothing.

A run that is not going on here is read from the store (`Stored`), once; a run on the queue of `workers` is
followed through the store (`serve.queued`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from alpineagents.agent import Agent
from alpineagents.events import (
    ErrorRecorded,
    RequestSent,
    RunEnded,
    RunStarted,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
)
from alpineagents.serve.errors import ApiError, not_found, running
from alpineagents.serve.feed import End, Writing, Written, end_of
from alpineagents.serve.queued import Queued
from alpineagents.state import State
from alpineagents.store import StateLockedError, Store
from alpineagents.terminal import Terminal
from alpineagents.types import HistoryEntry, ModelReplyEntry
from alpineagents.viewer.runs import open_run

if TYPE_CHECKING:
    from alpineagents.workers import Workers

log = logging.getLogger("alpineagents.serve")


class Live:
    """A run going on in this process (a stream `Source`), told what happens by the run's own event stream."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.task: asyncio.Task[Any] | None = None
        self.started = asyncio.Event()  # set once the run's start is saved (or the run failed before that)
        self.failure: BaseException | None = None
        self.began = False
        self.done = False
        self._changed = asyncio.Event()
        self._writing: Writing | None = None
        self._seen = len(state.history)  # the history entries whose events the run's stream has given

    def seen(self, event: StreamEvent) -> None:
        """Take in one event of the run's stream (subagents' events only wake the readers)."""
        if self.began and not self.started.is_set():
            self.started.set()  # the event after RunStarted: the run_start entry is saved by now
        if len(event.path) == 1:
            self._seen = max(self._seen, event.position + 1)
            if isinstance(event, RunStarted) and not self.began:
                self.began = True
            elif isinstance(event, RequestSent):
                self._writing = Writing(event.position, ())
            elif isinstance(event, TextDelta):
                self._add(event, Written("text", event.text))
            elif isinstance(event, ThinkingDelta):
                self._add(event, Written("thinking", event.text))
            elif isinstance(event, ToolCallArgsDelta):
                self._add(event, Written("args", event.delta, event.call_id, event.name))
            elif isinstance(event, ErrorRecorded) or (isinstance(event, RunEnded) and not self._answered()):
                self._writing = None  # what was streamed of a reply that was never recorded is not shown
        self.wake()

    def _answered(self) -> bool:
        writing = self._writing
        later = self.state.history[writing.request + 1 :] if writing is not None else ()
        return any(isinstance(entry, ModelReplyEntry) for entry in later)

    def _add(self, event: StreamEvent, piece: Written) -> None:
        writing = self._writing
        if writing is None or isinstance(self.state.history[event.position], ModelReplyEntry):
            return  # the whole text of a reply that did not stream: the reply's entry carries it
        self._writing = Writing(writing.request, (*writing.pieces, piece))

    def wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # what a stream reads
    def entries(self) -> Sequence[HistoryEntry]:
        """The entries whose events the run's stream has given (all once the run is over): a reply shows only
        after the pieces streamed before it, which the run's stream gives first."""
        history = self.state.history
        return history if self.done else _Prefix(history, min(self._seen, len(history)))

    def writing(self) -> Writing | None:
        return self._writing

    def running(self) -> bool:
        return not self.done

    async def changed(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._changed.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def end(self) -> End:
        return end_of(self.state)


class _Prefix(Sequence[HistoryEntry]):
    """The first `size` entries of a history, without copying them."""

    def __init__(self, history: Sequence[HistoryEntry], size: int) -> None:
        self._history = history
        self._size = size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self._history[: self._size][index]
        if not -self._size <= index < self._size:
            raise IndexError(index)
        return self._history[index % self._size]


class Stored:
    """A run read from the store (a stream `Source` that is not running): its saved entries only."""

    def __init__(self, store: Store, state_id: str) -> None:
        try:
            run = open_run(store, state_id)
        except LookupError:
            raise not_found(state_id)
        self._entries = run.history
        self._state = run.state

    def entries(self) -> Sequence[HistoryEntry]:
        return self._entries

    def writing(self) -> Writing | None:
        return None

    def running(self) -> bool:
        return False

    async def changed(self, timeout: float) -> bool:
        return False

    def end(self) -> End:
        return end_of(self._state, len(self._entries))


def quiet(setting: Any) -> Any:
    """A reporter or human setting fit for a server: the Terminal (which prints and reads the console) is None."""
    return None if isinstance(setting, Terminal) else setting


class Runs:
    """The runs of one Agent that this process has going on, saved to one store; with `workers`, the runs go to
    their queue under the Agent's name there instead."""

    def __init__(self, agent: Agent, store: Store, workers: Workers | None = None) -> None:
        self.store = store
        self.live: dict[str, Live] = {}
        self.agent = agent.copy(store=store, reporter=quiet(agent.reporter), human=quiet(agent.human))
        self.workers = workers
        self.queued: dict[str, Queued] = {}
        self.name = None if workers is None else _name_in(workers, agent)

    def source(self, state_id: str) -> Live | Queued | Stored:
        """What a stream of `state_id` reads: its `Live` while it runs here, its queued run, else the store."""
        live = self.live.get(state_id)
        if live is not None:
            return live
        queued = self.queued.get(state_id)
        return queued if queued is not None and queued.running() else Stored(self.store, state_id)

    async def begin(self, state: State) -> None:
        """Start running `state`: here, or on the workers' queue."""
        if self.workers is None or self.name is None:
            await self.start(state)
            return
        from alpineagents.workers import StateBusyError

        if state.id in self.queued and self.queued[state.id].running():
            raise running(state.id)
        try:
            run = await asyncio.to_thread(self.workers.submit, self.name, state)
        except StateBusyError:
            raise running(state.id)
        queued = Queued(self.store, state, run)
        await queued.refresh()
        self.queued[state.id] = queued

    async def load(self, state_id: str) -> State:
        """The saved State `state_id` (404 when the store has none; 409 while it runs here)."""
        if state_id in self.live:
            raise running(state_id)
        try:
            return await asyncio.to_thread(self.store.load, state_id)
        except LookupError:
            raise not_found(state_id)

    async def start(self, state: State) -> Live:
        """Start running `state` here; returns once the run's start is saved (409 while it already runs, here or
        in another process that holds the State; 400 when the Agent refuses the State)."""
        if state.id in self.live:
            raise running(state.id)
        live = Live(state)
        self.live[state.id] = live
        live.task = asyncio.create_task(self._run(live), name=f"alpineagents.serve run {state.id}")
        await live.started.wait()
        if not live.began:
            raise _refusal(state.id, live.failure)
        return live

    async def _run(self, live: Live) -> None:
        try:
            async for event in self.agent.astream(live.state):
                live.seen(event)
        except asyncio.CancelledError:
            pass
        except BaseException as error:  # recorded in the State already; a start request may still report it
            live.failure = error
            if not isinstance(error, Exception):
                raise
            first = str(error).splitlines()[0] if str(error) else ""
            log.warning("run %s ended with %s: %s", live.state.id, type(error).__name__, first)
        finally:
            live.done = True
            if self.live.get(live.state.id) is live:
                del self.live[live.state.id]
            live.started.set()
            live.wake()

    def cancel(self, state_id: str) -> Live:
        """Cancel the run `state_id` going on here (its pending calls are closed and the State saved)."""
        live = self.live.get(state_id)
        if live is None or live.task is None:
            raise ApiError(409, "not_running", f"run {state_id!r} is not running here: there is nothing to cancel")
        live.task.cancel()
        return live

    async def close(self) -> None:
        """Cancel every run going on and wait for each to save its State."""
        tasks = [live.task for live in self.live.values() if live.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _name_in(workers: Workers, agent: Agent) -> str:
    """The name `agent` has among the Agents of `workers` (a `ValueError` when it is not one of them)."""
    for name, candidate in workers.agents.items():
        if candidate is agent:
            return name
    raise ValueError(
        f"the Agent served is not one of the Workers' Agents ({', '.join(sorted(workers.agents))}): "
        "serve one of them, e.g. serve.app(workers.agents['support'], store=workers.store, workers=workers)"
    )


def _refusal(state_id: str, error: BaseException | None) -> ApiError:
    """The answer to a start request whose run ended before it began."""
    if error is None:
        return ApiError(503, "cancelled", f"run {state_id!r} was cancelled before it started")
    if isinstance(error, StateLockedError):
        return ApiError(409, "run_running", f"run {state_id!r} is being run by another process")
    if isinstance(error, (TypeError, ValueError)):
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        return ApiError(400, "refused", first)
    log.error("run %s failed before it started", state_id, exc_info=error)
    return ApiError(500, "internal", "the run failed before it started; the server's log has the details")
