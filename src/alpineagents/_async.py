"""Shared async plumbing: the async-run mark and running sync work off the event loop.

`ASYNC_RUN` (a fixed name: tests and stores read it) holds the event loop of the async run going on in this
context, or `None`. A sync method that would block (run, think, store.save, ...) checks `blocks_event_loop()` first,
so that a blocking call made by mistake inside an async run fails with a clear error instead of stalling the loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["ASYNC_RUN", "blocks_event_loop", "run_in_thread", "start_daemon"]

T = TypeVar("T")

ASYNC_RUN: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "alpineagents_async_run", default=None
)


def blocks_event_loop() -> bool:
    """True when called on the event-loop thread of an async run (a sync call there would block the loop).

    A thread with a running loop but no async run (a notebook cell) is not an async run.
    """
    mark = ASYNC_RUN.get()
    if mark is None:
        return False
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return False
    return running is mark


def start_daemon(target: Callable[[], None], name: str) -> threading.Thread:
    """Start `target` on a new daemon thread that carries a copy of the caller's contextvars."""
    ctx = contextvars.copy_context()
    thread = threading.Thread(target=ctx.run, args=(target,), name=name, daemon=True)
    thread.start()
    return thread


async def run_in_thread(
    fn: Callable[..., T], /, *args: object, name: str = "alpineagents-worker", **kwargs: object
) -> T:
    """Run the sync `fn(*args, **kwargs)` on a new daemon thread and await its result.

    The thread carries a copy of the caller's contextvars. Cancelling the awaiting task does not stop the
    thread; its result (or exception) is then dropped.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver_result(value: T) -> None:
        if not future.done():
            future.set_result(value)

    def deliver_error(error: BaseException) -> None:
        if not future.done():
            future.set_exception(error)

    def work() -> None:
        try:
            value = fn(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - handed to the awaiting task unchanged
            try:
                loop.call_soon_threadsafe(deliver_error, error)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass
            return
        try:
            loop.call_soon_threadsafe(deliver_result, value)
        except RuntimeError:
            pass

    start_daemon(work, name)
    return await future
