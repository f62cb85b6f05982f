"""Per-turn cost of a run: FakeModel, one tool call per turn, no store, no reporter.

Run: `.venv/bin/python benchmarks/turns.py`

Prints, for 50 and 800 turns:
1. `run()` with a sync tool: µs per turn, and the framework's own cost above the floor of handing one call to a
   worker thread and back (a round trip to a persistent worker thread). Target: <= 40 µs above the floor.
   - Each run alternates with as many floor round trips: back to back, and "in a turn" (after 30 µs of work on
     the calling thread before each one, as between two tool calls of a run). The figure above the floor is given
     as (best run - best in-turn floor) and as the median of the paired differences.
   - First with the process pinned to one CPU, then with the threads free to use every CPU. On a 2-core VM a
     thread woken on the other, idle CPU costs a hypervisor round trip that varies several-fold from minute to
     minute and that back-to-back round trips mostly avoid; on one CPU neither the floor nor the run pays it, so
     the difference is the framework's own cost. The second block shows what the wake-ups add on this machine.
2. `arun()` with an async tool (no thread): µs per turn. Target: <= 50 µs.
For both: the 800/50 ratio (target <= 1.3) and the peak traced memory of the 800-turn run (target <= 3 MiB).

Each figure is the lowest of several runs (sync: 31 of 50 turns, 11 of 800; async: 15 of 50, 5 of 800), so that
other work on a shared machine inflates it less.

The FakeModel used keeps only its latest request (`requests` is a bounded deque), and answers `arespond` inline
instead of on a worker thread: the double's request log and thread are not part of the framework's cost.
"""

from __future__ import annotations

import asyncio
import gc
import os
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


class Floor:
    """A persistent worker thread: `time(n)` is the seconds of `n` round trips to it (hand a call over, get the
    result back), the floor under every sync tool call."""

    def __init__(self) -> None:
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self.worker, daemon=True)
        self.thread.start()

    def worker(self) -> None:
        while True:
            item = self.inbox.get()
            if item is None:
                return
            event, box = item
            box.append("ok")
            event.set()

    def time(self, rounds: int, gap: float = 0.0) -> float:
        """Seconds of `rounds` round trips. With `gap`, the calling thread first computes for `gap` seconds before
        each round trip (not counted), as it does between two tool calls of a run: on a VM the worker's CPU may
        go idle meanwhile, and waking it then costs more than in back-to-back round trips."""
        inbox = self.inbox
        clock = time.perf_counter
        total = 0.0
        for _ in range(rounds):
            if gap:
                end = clock() + gap
                while clock() < end:
                    pass
            started = clock()
            event = threading.Event()
            box: list[str] = []
            inbox.put((event, box))
            event.wait()
            total += clock() - started
        return total

    def close(self) -> None:
        self.inbox.put(None)
        self.thread.join()


GAP = 30e-6
"""The calling thread's own work between two round trips of the in-turn floor: about one turn's work."""


def paired(fn: Any, floor: Floor, turns: int, repeat: int) -> tuple[float, float, float, float]:
    """Runs of `turns` turns alternating with `turns` floor round trips, back to back and after `GAP` of work each.

    Returns per turn: the best run, the best back-to-back floor, the best in-turn floor, and the median of the
    paired differences (run - in-turn floor). Alternating puts runs and floors under the same machine conditions,
    and the same count of round trips gives them the same chance of a quiet stretch.
    """
    gc.collect()
    runs: list[float] = []
    floors: list[float] = []
    in_turn: list[float] = []
    for _ in range(repeat):
        floors.append(floor.time(turns) / turns)
        in_turn.append(floor.time(turns, GAP) / turns)
        runs.append(fn(turns) / turns)
    differences = sorted(run - below for run, below in zip(runs, in_turn, strict=True))
    return min(runs), min(floors), min(in_turn), differences[len(differences) // 2]


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


def report(label: str, fn: Any) -> None:
    fn(300)  # warm up
    short = best_of(fn, 50, 15)
    long = best_of(fn, 800, 5)
    memory = peak(fn, 800)
    print(f"{label}")
    print(f"  50 turns:  {short * 1e6:7.1f} µs/turn")
    print(f"  800 turns: {long * 1e6:7.1f} µs/turn   (800/50 ratio {long / short:.2f}, target <= 1.3)")
    print(f"  peak traced memory, 800 turns: {memory:.2f} MiB (target <= 3)")


def report_sync(floor: Floor, label: str) -> None:
    sync_run(300)  # warm up (thread placement and caches settle in the first few hundred turns)
    floor.time(200)
    rows = [(turns, *paired(sync_run, floor, turns, repeat)) for turns, repeat in ((50, 31), (800, 11))]
    memory = peak(sync_run, 800)
    print(f"run() with a sync tool, {label}")
    for turns, run, back_to_back, in_turn, median in rows:
        print(
            f"  {turns:3d} turns: {run * 1e6:6.1f} µs/turn; floor {back_to_back * 1e6:5.1f} µs back to back,"
            f" {in_turn * 1e6:5.1f} µs in a turn; above the in-turn floor: {(run - in_turn) * 1e6:5.1f} µs"
            f" (best of each), {median * 1e6:5.1f} µs (median of pairs); target <= 40"
        )
    short, long = rows[0][1], rows[1][1]
    print(f"  800/50 ratio of the runs: {long / short:.2f} (target <= 1.3)")
    print(f"  peak traced memory, 800 turns: {memory:.2f} MiB (target <= 3)")


def pin_threads(cpus: set[int]) -> None:
    """Set the CPU affinity of every thread of this process (threads started later inherit the caller's)."""
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), cpus)
        except ProcessLookupError:  # the thread ended meanwhile
            pass


def main() -> None:
    floor = Floor()
    try:
        cpus = os.sched_getaffinity(0) if os.path.isdir("/proc/self/task") else set()
        if len(cpus) > 1:
            # The framework's own cost: on one CPU no wake-up crosses CPUs, for the floor and the runs alike. On a
            # VM, waking a thread whose CPU went idle costs a hypervisor round trip that varies several-fold from
            # minute to minute, and a turn leaves the worker's CPU idle for longer than the floor's round trips do.
            pin_threads({min(cpus)})
            try:
                report_sync(floor, "the process on one CPU (the framework's own cost)")
            finally:
                pin_threads(cpus)
        report_sync(floor, "threads free to use every CPU (adds the VM's cross-CPU wake-ups)")
    finally:
        floor.close()
    report("arun() with an async tool (target <= 50 µs/turn)", async_run)


if __name__ == "__main__":
    main()
