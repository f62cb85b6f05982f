"""Where finished tool calls arrive: the thread or event loop that runs a turn's calls waits here for them.

`ThreadArrivals` serves a sync turn (every tool runs on a worker thread); `LoopArrivals` serves an async turn
(async tools run as Tasks on the loop, sync ones on worker threads that hand their result over thread-safely).
"""

from __future__ import annotations

import asyncio
import types
from collections import deque
from collections.abc import Callable, Generator
from queue import Empty, SimpleQueue
from typing import Generic, TypeVar

__all__ = ["LoopArrivals", "ThreadArrivals", "yield_once"]

T = TypeVar("T")


class ThreadArrivals(Generic[T]):
    """Finished jobs, delivered by worker threads to the thread that runs the calls (sync tools only)."""

    __slots__ = ("queue", "from_thread", "loop")

    def __init__(self) -> None:
        self.queue: SimpleQueue[T] = SimpleQueue()
        self.from_thread: Callable[[T], None] = self.queue.put  # the queue's own method: no call of ours between
        self.loop: None = None  # no event loop: every tool runs on a worker thread

    def wait(self) -> list[T]:
        """Block until at least one job arrived; return every job that did. Waits in 0.1 s slices, so that Ctrl+C
        gets through."""
        queue = self.queue
        while True:
            try:
                first = queue.get(timeout=0.1)
            except Empty:
                continue
            batch = [first]
            while not queue.empty():
                batch.append(queue.get_nowait())
            return batch

    def drain(self) -> list[T]:
        items: list[T] = []
        while True:
            try:
                items.append(self.queue.get_nowait())
            except Empty:
                return items


class LoopArrivals(Generic[T]):
    """Finished jobs, delivered to the event loop's thread (Tasks directly, worker threads thread-safely), where
    async tools run as Tasks."""

    __slots__ = ("loop", "items", "waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.items: deque[T] = deque()
        self.waiter: asyncio.Future[None] | None = None

    def put(self, job: T) -> None:
        self.items.append(job)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def from_thread(self, job: T) -> None:
        try:
            self.loop.call_soon_threadsafe(self.put, job)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    async def wait(self) -> list[T]:
        """Wait until at least one job arrived; return every job that did."""
        items = self.items
        while not items:
            self.waiter = waiter = self.loop.create_future()
            await waiter
        self.waiter = None
        batch = list(items)
        items.clear()
        return batch

    def drain(self) -> list[T]:
        items = list(self.items)
        self.items.clear()
        return items


@types.coroutine
def yield_once() -> Generator[None, None, None]:
    """`asyncio.sleep(0)` without its two extra frames: give the event loop one pass."""
    yield
