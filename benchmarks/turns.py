"""Per-turn cost of a run: FakeModel, one tool call per turn, no store, no reporter.

Run: `.venv/bin/python benchmarks/turns.py`

Prints, for 50 and 800 turns:
1. `run()` with a sync tool: µs per turn, and the framework's own cost above the floor of handing one call to a
   worker thread and back (measured here as a round trip to a persistent worker thread). Target: <= 40 µs.
2. `arun()` with an async tool (no thread): µs per turn. Target: <= 50 µs.
For both: the 800/50 ratio (target <= 1.3) and the peak traced memory of the 800-turn run (target <= 3 MiB).

Each figure is the lowest of several runs (15 of 50 turns, 5 of 800, 5 rounds of the floor), so that other work
on a shared machine inflates it less.

The FakeModel used keeps only its latest request (`requests` is a bounded deque), and answers `arespond` inline
instead of on a worker thread: the double's request log and thread are not part of the framework's cost.
"""

from __future__ import annotations

import asyncio
import gc
import queue
import threading
import time
import tracemalloc
from collections import deque
from typing import Any

from alpineagents.agent import Agent
from alpineagents.loop import adefault_loop, default_loop
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool


@tool
def step(n: int) -> str:
    """One step."""
    return "ok"


@tool
async def astep(n: int) -> str:
    """One async step."""
    return "ok"


class InlineModel(FakeModel):
    """FakeModel whose `arespond` answers inline. The default `Model.arespond` hands each request to a worker
    thread (05 §2.5), which is the test double's cost, not the framework's."""

    async def arespond(self, request: Any, on_text: Any = None, on_event: Any = None) -> Any:
        return self.respond(request, on_text, on_event)


def make_model(turns: int, name: str) -> FakeModel:
    items: list[Any] = [tool_call(name, n=i) for i in range(turns - 1)]
    items.append("done")
    model = InlineModel(items)
    model.requests = deque(maxlen=1)  # type: ignore[assignment]
    return model


def sync_run(turns: int) -> float:
    agent = Agent(make_model(turns, "step"), tools=[step], reporter=None, loop=default_loop.copy(limit=turns + 5))
    started = time.perf_counter()
    agent.run("Go")
    return time.perf_counter() - started


def async_run(turns: int) -> float:
    agent = Agent(make_model(turns, "astep"), tools=[astep], reporter=None, loop=adefault_loop.copy(limit=turns + 5))

    async def main() -> float:
        started = time.perf_counter()
        await agent.arun("Go")
        return time.perf_counter() - started

    return asyncio.run(main())


def thread_floor(rounds: int = 3000) -> float:
    """Seconds for one round trip to a persistent worker thread (hand a call over, get the result back)."""
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def worker() -> None:
        while True:
            item = inbox.get()
            if item is None:
                return
            event, box = item
            box.append("ok")
            event.set()

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(rounds):
            event = threading.Event()
            box: list[str] = []
            inbox.put((event, box))
            event.wait()
        best = min(best, (time.perf_counter() - started) / rounds)
    inbox.put(None)
    thread.join()
    return best


def best_of(fn: Any, turns: int, repeat: int) -> float:
    gc.collect()
    return min(fn(turns) for _ in range(repeat)) / turns


def peak(fn: Any, turns: int) -> float:
    gc.collect()
    tracemalloc.start()
    fn(turns)
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top / (1024 * 1024)


def report(label: str, fn: Any, floor: float | None) -> None:
    fn(20)  # warm up
    short = best_of(fn, 50, 15)
    long = best_of(fn, 800, 5)
    memory = peak(fn, 800)
    print(f"{label}")
    print(f"  50 turns:  {short * 1e6:7.1f} µs/turn")
    print(f"  800 turns: {long * 1e6:7.1f} µs/turn   (800/50 ratio {long / short:.2f}, target <= 1.3)")
    if floor is not None:
        print(
            f"  above the thread floor: {(short - floor) * 1e6:6.1f} µs/turn (50), {(long - floor) * 1e6:6.1f} µs/turn"
            " (800), target <= 40"
        )
    print(f"  peak traced memory, 800 turns: {memory:.2f} MiB (target <= 3)")


def main() -> None:
    floor = thread_floor()
    print(f"thread round-trip floor: {floor * 1e6:.1f} µs")
    report("run() with a sync tool", sync_run, floor)
    report("arun() with an async tool (target <= 50 µs/turn)", async_run, None)


if __name__ == "__main__":
    main()
