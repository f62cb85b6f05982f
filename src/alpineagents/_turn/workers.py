"""The daemon worker threads that run tool calls.

A `WorkerPool` runs each job on a daemon thread of its own (daemon, so a tool left running after Ctrl+C never
delays the interpreter's exit). A worker whose job ended parks for a few seconds and may take the next job:
starting a thread costs more than a whole turn. A worker still running a job is never given another one.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["WorkerPool"]

Job = TypeVar("Job")
Where = TypeVar("Where")
Result = TypeVar("Result")

IDLE_SECONDS = 10.0
"""How long a parked worker waits for another job before its thread ends."""


class _Worker(Generic[Job, Where]):
    """One daemon thread: runs one job at a time, parks (idle) between jobs."""

    __slots__ = ("wake", "task")

    def __init__(self, task: tuple[contextvars.Context, Job, Where]) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()
        self.task: tuple[contextvars.Context, Job, Where] | None = task


class WorkerPool(Generic[Job, Where, Result]):
    """Runs `work(job, where)` on a worker thread in the given contextvars context, then `complete(job, where,
    result)` on that same thread, after the worker parked (so the thread that `complete` wakes does not contend
    with this one for the GIL)."""

    def __init__(self, work: Callable[[Job, Where], Result], complete: Callable[[Job, Where, Result], None]) -> None:
        self._work = work
        self._complete = complete
        self._idle: list[_Worker[Job, Where]] = []
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        """In a forked child the parked workers do not exist: start afresh."""
        self._idle = []
        self._lock = threading.Lock()

    def start(self, context: contextvars.Context, job: Job, where: Where) -> None:
        """Run `job` on a parked worker, or on a new daemon thread when none is parked."""
        task = (context, job, where)
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is not None:
            worker.task = task
            worker.wake.release()
            return
        thread = threading.Thread(target=self._main, args=(_Worker(task),), name="alpineagents-tool", daemon=True)
        thread.start()

    def _main(self, worker: _Worker[Job, Where]) -> None:
        while True:
            task = worker.task
            worker.task = None
            if task is not None:
                context, job, where = task
                result = context.run(self._work, job, where)
                del task, context
                # Park first, then complete: the waiting thread wakes while this one is about to block, so the two
                # do not contend for the GIL. A start may take this worker before the completion below; its job
                # is read on the next pass.
                with self._lock:
                    self._idle.append(worker)
                self._complete(job, where, result)
                del job, where, result
            else:
                with self._lock:
                    self._idle.append(worker)
            if worker.wake.acquire(timeout=IDLE_SECONDS):
                continue
            with self._lock:
                if worker in self._idle:
                    self._idle.remove(worker)
                    return
            worker.wake.acquire()  # taken by a start right at the timeout: its job is on the way
