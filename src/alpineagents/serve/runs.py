"""The runs a server has going on in this process, and what a stream reads a run from.

`Runs` starts each run as an asyncio task (`agent.arun`) and keeps a `Live` for it until it ends: the State being
run, the text of the reply being written, and a signal that wakes the streams when anything changed. The signal is
given by a Reporter placed in front of the Agent's own (which still gets every call); reporters may be called from
worker threads, so waking is passed to the event loop. A stream never waits for a slow reader and nothing is
queued for it: each stream reads the State's history from where it stands, so a slow reader costs no memory and
misses nothing.

A run that is not going on here is read from the store (`Stored`), once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from alpineagents.agent import Agent
from alpineagents.reporter import Reporter
from alpineagents.serve.errors import ApiError, not_found, running
from alpineagents.serve.feed import End, end_of
from alpineagents.state import State
from alpineagents.store import StateLockedError, Store
from alpineagents.terminal import Terminal
from alpineagents.types import ContextChange, HistoryEntry, ModelEvent, Reply, ToolCall, ToolOutcome
from alpineagents.viewer.runs import open_run

log = logging.getLogger("alpineagents.serve")


class Live:
    """A run going on in this process (a stream `Source`)."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.task: asyncio.Task[Any] | None = None
        self.started = asyncio.Event()  # set once the run is recorded and saved (or failed before that)
        self.failure: BaseException | None = None
        self.began = False
        self.done = False
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._changed = asyncio.Event()
        self._lock = threading.Lock()
        self._writing: tuple[int, str] | None = None

    # what the Reporter tells (any thread)
    def mark_started(self) -> None:
        self.began = True
        self._loop.call_soon_threadsafe(self.started.set)
        self.wake()

    def begin_reply(self) -> None:
        with self._lock:
            self._writing = (len(self.state.history) - 1, "")
        self.wake()

    def add_text(self, chunk: str) -> None:
        with self._lock:
            if self._writing is not None:
                self._writing = (self._writing[0], self._writing[1] + chunk)
        self.wake()

    def end_reply(self) -> None:
        with self._lock:
            self._writing = None
        self.wake()

    def wake(self) -> None:
        if threading.get_ident() == self._thread:
            self._wake()
        else:
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # what a stream reads (the event loop's thread)
    def entries(self) -> Sequence[HistoryEntry]:
        return self.state.history

    def writing(self) -> tuple[int, str] | None:
        with self._lock:
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
        state = self.state
        return end_of(state.history, state.answer, state.finished, state.stopped)


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

    def writing(self) -> tuple[int, str] | None:
        return None

    def running(self) -> bool:
        return False

    async def changed(self, timeout: float) -> bool:
        return False

    def end(self) -> End:
        state = self._state
        return end_of(self._entries, state.answer, state.finished, state.stopped)


class _Tee(Reporter):
    """Tells the `Live` of a top-level run what happened, then passes each call to the Agent's own reporter."""

    def __init__(self, inner: Reporter | None, find: Callable[[str], Live | None]) -> None:
        self.inner = inner
        self.find = find

    def on_run_start(self, state: State) -> None:
        if self.inner is not None:
            self.inner.on_run_start(state)
        live = self.find(state.id)
        if live is not None:
            live.mark_started()

    def on_think_start(self, state: State) -> None:
        if self.inner is not None:
            self.inner.on_think_start(state)
        live = self.find(state.id)
        if live is not None:
            live.begin_reply()

    def on_text(self, state: State, chunk: str) -> None:
        if self.inner is not None:
            self.inner.on_text(state, chunk)
        live = self.find(state.id)
        if live is not None:
            live.add_text(chunk)

    def on_think_end(self, state: State, reply: Reply) -> None:
        if self.inner is not None:
            self.inner.on_think_end(state, reply)
        live = self.find(state.id)
        if live is not None:
            live.end_reply()

    def on_tool_start(self, state: State, call: ToolCall) -> None:
        if self.inner is not None:
            self.inner.on_tool_start(state, call)
        self._wake(state)

    def on_tool_end(self, state: State, call: ToolCall, result: Any, outcome: ToolOutcome) -> None:
        if self.inner is not None:
            self.inner.on_tool_end(state, call, result, outcome)
        self._wake(state)

    def on_context_change(self, state: State, change: ContextChange) -> None:
        if self.inner is not None:
            self.inner.on_context_change(state, change)
        self._wake(state)

    def on_model_event(self, state: State, event: ModelEvent) -> None:
        if self.inner is not None:
            self.inner.on_model_event(state, event)
        self._wake(state)

    def on_run_end(self, state: State, error: BaseException | None) -> None:
        if self.inner is not None:
            self.inner.on_run_end(state, error)
        live = self.find(state.id)
        if live is not None:
            live.end_reply()

    def _wake(self, state: State) -> None:
        live = self.find(state.id)
        if live is not None:
            live.wake()


def quiet(setting: Any) -> Any:
    """A reporter or human setting fit for a server: the Terminal (which prints and reads the console) is None."""
    return None if isinstance(setting, Terminal) else setting


class Runs:
    """The runs of one Agent that this process has going on, saved to one store."""

    def __init__(self, agent: Agent, store: Store) -> None:
        self.store = store
        self.live: dict[str, Live] = {}
        self.agent = agent.copy(
            store=store, reporter=_Tee(quiet(agent.reporter), self.live.get), human=quiet(agent.human)
        )

    def source(self, state_id: str) -> Live | Stored:
        """What a stream of `state_id` reads: its `Live` while it runs here, else the store."""
        live = self.live.get(state_id)
        return live if live is not None else Stored(self.store, state_id)

    async def load(self, state_id: str) -> State:
        """The saved State `state_id` (404 when the store has none; 409 while it runs here)."""
        if state_id in self.live:
            raise running(state_id)
        try:
            return await asyncio.to_thread(self.store.load, state_id)
        except LookupError:
            raise not_found(state_id)

    async def start(self, state: State) -> Live:
        """Start running `state`; returns once the run is recorded and saved (409 while it already runs, 400 when
        the Agent refuses the State, 503 when another process holds it)."""
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
            await self.agent.arun(live.state)
        except asyncio.CancelledError:
            pass
        except BaseException as error:  # recorded in the State already; a start request may still report it
            live.failure = error
            if not isinstance(error, Exception):
                raise
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
