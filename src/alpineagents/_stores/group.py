"""Group commit: save points of different States that arrive while a flush is going on are made durable together.

A writer puts its job in the store's queue and waits. One flusher thread per store takes every job queued so far
and hands them to the store's `flush`, which writes each job and makes them all durable with as few flushes to disk
as it can (SQLite: one transaction, so one flush of its journal). While it flushes, the jobs that arrive queue up
for the next group. A lone writer waits for nobody: the flusher takes its job at once. The flusher stays a moment
after the queue empties (so that a run's next save point does not start a thread), then ends.

The promise of a save point does not change: the writer returns only after its job is on stable storage, or raises
the job's own error (a job that failed its own checks does not affect the others), or the group's when the flush
as a whole failed. A sync writer that finds nothing being flushed flushes its own job on its own thread (no thread
hop for a lone writer), and so does an async writer whose task is the only one on its event loop; jobs that arrive
meanwhile queue up for the flusher. A writer interrupted while it waits
(Ctrl+C, a cancelled task) gives up waiting; its job may still be written, which is harmless: a store accepts
entries it already has when they are sent again.

Sync writers wait on an event (in short slices, so that Ctrl+C gets through); async writers await a future of
their event loop, so an async run's save point needs no thread of its own.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from alpineagents._stores.locks import SAVING

__all__ = ["GroupCommit", "Job", "GroupCommitting"]

_IDLE_SECONDS = 1.0
"""How long the flusher waits for more work after the queue empties before its thread ends."""


class Job:
    """One write waiting for a group commit, made in the writer's thread. `saving` is the State being saved then
    (the store ties its writer lock to it, on whichever thread flushes the job). `flush` sets `error` for a job
    that failed on its own."""

    __slots__ = ("error", "saving", "_event", "_loop", "_future")

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.saving = SAVING.get()
        self._event: threading.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._future: asyncio.Future[None] | None = None


def _wake_writers(group: list[Job]) -> None:
    """Wake the writers of a flushed group: sync ones through their events, async ones with one call per event
    loop (one wake-up of the loop for the whole group, where a call per job would make the flusher and the loop
    take turns at the interpreter lock once per job)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for job in group:
        if job._event is not None:
            job._event.set()
        elif job._loop is not None and job._future is not None:
            by_loop.setdefault(job._loop, []).append(job._future)
    for loop, futures in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, futures)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass


def _settle(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():  # a writer cancelled while it waited
            future.set_result(None)


class GroupCommit:
    """The queue and the flusher of one store (see the module)."""

    def __init__(self, flush: Callable[[Sequence[Job]], None], name: str) -> None:
        # Weakly: an idle flusher thread must not keep its store (and the store's open files) alive.
        self._flush = weakref.WeakMethod(flush)  # pyright: ignore[reportArgumentType]
        self._name = name
        self._queued: list[Job] = []
        self._wake = threading.Condition(threading.Lock())
        self._flushing = False

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's flusher thread and its queued jobs are not this process's."""
        self._queued = []
        self._wake = threading.Condition(threading.Lock())
        self._flushing = False

    def commit(self, job: Job) -> None:
        """Return once `job` is durable; raise its error when it failed.

        Raises:
            BaseException: the job's own error, or the flush's error for every job of the group.
        """
        with self._wake:
            alone = not self._flushing and not self._queued
            if alone:  # nothing is being flushed: this writer flushes its job itself, with no thread hop
                self._flushing = True
        if alone:
            self._flush_alone(job)
        else:
            job._event = event = threading.Event()
            self._enqueue(job)
            while not event.wait(0.1):  # in slices: Ctrl+C gets through
                pass
        if job.error is not None:
            raise job.error

    def _claim_alone(self) -> bool:
        """For an async writer: claim the flush when nothing is queued or being flushed and the calling task is the
        only one on its event loop (otherwise the job goes to the flusher)."""
        if self._flushing or self._queued or len(asyncio.all_tasks()) > 1:
            return False
        with self._wake:
            if self._flushing or self._queued:
                return False
            self._flushing = True
        return True

    def _flush_alone(self, job: Job) -> None:
        """Flush a lone writer's job on its own thread; the jobs that arrived meanwhile go to the flusher."""
        try:
            self._flush_group([job], wake=False)  # its writer is this thread: nobody to wake
        finally:
            with self._wake:
                more = bool(self._queued)
                if not more:
                    self._flushing = False
            if more:
                threading.Thread(target=self._flusher, name=self._name, daemon=True).start()

    async def acommit(self, job: Job) -> None:
        """`commit` for async code: awaits the job on this event loop (no thread of its own).

        A lone save point whose task is the only one on its loop is flushed right here, like a lone sync writer's:
        there is nobody to group with and nothing else on the loop that could run meanwhile, so handing it to the
        flusher thread and waking the loop back would only add two thread hand-offs.
        """
        if self._claim_alone():
            self._flush_alone(job)
            if job.error is not None:
                raise job.error
            return
        job._loop = loop = asyncio.get_running_loop()
        job._future = future = loop.create_future()
        self._enqueue(job)
        await future
        if job.error is not None:
            raise job.error

    def _enqueue(self, job: Job) -> None:
        with self._wake:
            self._queued.append(job)
            if self._flushing:
                self._wake.notify()
                return
            self._flushing = True
        threading.Thread(target=self._flusher, name=self._name, daemon=True).start()

    def _flusher(self) -> None:
        while True:
            with self._wake:
                if not self._queued:
                    self._wake.wait(_IDLE_SECONDS)
                group, self._queued = self._queued, []
                if not group:
                    self._flushing = False
                    return
            self._flush_group(group)
            del group  # a job can hold what its writer was saving (a State, and with it its lock): let it go now

    def _flush_group(self, group: list[Job], *, wake: bool = True) -> None:
        try:
            flush = self._flush()
            if flush is None:  # pragma: no cover - a writer waiting holds its store
                raise ReferenceError("the store of these save points is gone")
            flush(group)
        except BaseException as error:  # noqa: BLE001 - the flush as a whole failed: every job failed with it
            for job in group:
                if job.error is None:
                    job.error = _own_copy(error)
        if wake:
            _wake_writers(group)


def _own_copy(error: BaseException) -> BaseException:
    """A copy of `error` for one waiting writer to raise (one exception object raised by several threads at once
    would gather all their tracebacks), with the same cause."""
    try:
        own = copy.copy(error)
    except Exception:  # noqa: BLE001 - an exception class that cannot be copied: share the object
        return error
    own.__cause__ = error.__cause__
    own.__traceback__ = None
    return own


class GroupCommitting:
    """The `write` and `awrite` of a store that commits in groups (put it before `Store` in the store's bases).

    The store provides `_group` (its `GroupCommit`, made with its flush) and `_job`, which checks one write and
    encodes it into the store's `Job` in the writer's thread (so that what waits for the flush is text, not the
    entry dicts). `write` waits for the job's group commit on the calling thread; `awrite` on the caller's event
    loop, with no thread of its own. A subclass that overrides `write` gets it called by `awrite` on a worker
    thread, as for any store.
    """

    _group: GroupCommit

    def _job(self, state_id: str, entries: Sequence[dict[str, Any]], info: Mapping[str, Any], create: bool) -> Job:
        raise NotImplementedError

    def write(
        self, state_id: str, entries: Sequence[dict[str, Any]], info: Mapping[str, Any], *, create: bool = False
    ) -> None:
        """Add the entries the store lacks and replace the info, durably, before returning.

        Raises:
            ValueError: `create=True` and the id exists; the entries leave a gap or differ from saved ones; the
                saved data is damaged.
            LookupError: `create=False` and the id does not exist.
            StateLockedError: Another process is writing this State.
            OSError: The storage refused (a full disk says so, with where and what to do); nothing of this write
                is found by the next load.
        """
        self._group.commit(self._job(state_id, entries, info, create))

    async def awrite(
        self, state_id: str, entries: Sequence[dict[str, Any]], info: Mapping[str, Any], *, create: bool = False
    ) -> None:
        """`write` for async code: the same checks, then the save point waits for its group commit on this event
        loop (no thread of its own)."""
        if type(self).write is not GroupCommitting.write:  # a subclass's own write: run it as any store's
            await super().awrite(state_id, entries, info, create=create)  # pyright: ignore[reportAttributeAccessIssue]
            return
        job = self._job(state_id, entries, info, create)
        del entries, info  # the job holds their encoded form (see Store.asave)
        await self._group.acommit(job)
