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

The speed of the machine, which on a shared VM swings by 2-3x from minute to minute, is probed at the start and
at the end (200k squares), so that figures from a slow moment can be told apart.

Each figure is the lowest of several runs, gathered in 3 rounds spread over the script's run time (sync: 33 of 50
turns, 12 of 800; async: 15 of 50, 6 of 800), so that other work on a shared machine inflates it less.

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
    thread, which is the test double's cost, not the framework's."""

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


class Samples:
    """Per-turn timings of one form of run, gathered over the rounds: for each size, the runs and (sync) the floors
    measured right before each run."""

    def __init__(self) -> None:
        self.runs: dict[int, list[float]] = {50: [], 800: []}
        self.back_to_back: dict[int, list[float]] = {50: [], 800: []}
        self.in_turn: dict[int, list[float]] = {50: [], 800: []}
        self.memory = 0.0

    def best(self, turns: int) -> float:
        return min(self.runs[turns])

    def median_above(self, turns: int) -> float:
        """The median of the paired differences: each run minus the in-turn floor measured right before it."""
        pairs = sorted(run - below for run, below in zip(self.runs[turns], self.in_turn[turns], strict=True))
        return pairs[len(pairs) // 2]


def sample_sync(samples: Samples, floor: Floor, repeat: dict[int, int]) -> None:
    """Sync runs alternating with as many floor round trips, back to back and after `GAP` of work each.

    Alternating puts runs and floors under the same machine conditions, and the same count of round trips gives
    them the same chance of a quiet stretch.
    """
    sync_run(300)  # warm up (thread placement and caches settle in the first few hundred turns)
    floor.time(200)
    for turns, count in repeat.items():
        gc.collect()
        for _ in range(count):
            samples.back_to_back[turns].append(floor.time(turns) / turns)
            samples.in_turn[turns].append(floor.time(turns, GAP) / turns)
            samples.runs[turns].append(sync_run(turns) / turns)
    samples.memory = max(samples.memory, peak(sync_run, 800))


def sample_async(samples: Samples, repeat: dict[int, int]) -> None:
    async_run(300)  # warm up
    for turns, count in repeat.items():
        gc.collect()
        samples.runs[turns].extend(async_run(turns) / turns for _ in range(count))
    samples.memory = max(samples.memory, peak(async_run, 800))


def peak(fn: Any, turns: int) -> float:
    gc.collect()
    tracemalloc.start()
    fn(turns)
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top / (1024 * 1024)


def print_sync(label: str, samples: Samples) -> None:
    print(f"run() with a sync tool, {label}")
    for turns in (50, 800):
        run = samples.best(turns)
        in_turn = min(samples.in_turn[turns])
        print(
            f"  {turns:3d} turns: {run * 1e6:6.1f} µs/turn; floor {min(samples.back_to_back[turns]) * 1e6:5.1f} µs"
            f" back to back, {in_turn * 1e6:5.1f} µs in a turn; above the in-turn floor: {(run - in_turn) * 1e6:5.1f}"
            f" µs (best of each), {samples.median_above(turns) * 1e6:5.1f} µs (median of pairs); target <= 40"
        )
    print(f"  800/50 ratio of the runs: {samples.best(800) / samples.best(50):.2f} (target <= 1.3)")
    print(f"  peak traced memory, 800 turns: {samples.memory:.2f} MiB (target <= 3)")


def print_async(label: str, samples: Samples) -> None:
    short, long = samples.best(50), samples.best(800)
    print(label)
    print(f"  50 turns:  {short * 1e6:7.1f} µs/turn")
    print(f"  800 turns: {long * 1e6:7.1f} µs/turn   (800/50 ratio {long / short:.2f}, target <= 1.3)")
    print(f"  peak traced memory, 800 turns: {samples.memory:.2f} MiB (target <= 3)")


def pin_threads(cpus: set[int]) -> None:
    """Set the CPU affinity of every thread of this process (threads started later inherit the caller's)."""
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), cpus)
        except ProcessLookupError:  # the thread ended meanwhile
            pass


def python_speed_ms() -> float:
    """A probe of the machine's speed at this moment: the best of 5 timings of summing 200,000 squares."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        sum(i * i for i in range(200_000))
        best = min(best, time.perf_counter() - started)
    return best * 1e3


ROUNDS = 3
"""Each form is measured in this many rounds, spread over the script's run time: a slow spell of the machine
(seconds long on a shared VM) then does not cover every sample of a figure."""


def main() -> None:
    print(f"python speed (200k squares): {python_speed_ms():.1f} ms (an idle machine of this kind: about 8-10 ms)")
    cpus = os.sched_getaffinity(0) if os.path.isdir("/proc/self/task") else set()
    one_cpu, free, in_async = Samples(), Samples(), Samples()
    floor = Floor()
    try:
        for _ in range(ROUNDS):
            if len(cpus) > 1:
                # The framework's own cost: on one CPU no wake-up crosses CPUs, for the floor and the runs alike.
                # On a VM, waking a thread whose CPU went idle costs a hypervisor round trip that varies several-fold
                # from minute to minute, and a turn leaves the worker's CPU idle for longer than the floor's round
                # trips do.
                pin_threads({min(cpus)})
                try:
                    sample_sync(one_cpu, floor, {50: 11, 800: 4})
                finally:
                    pin_threads(cpus)
            sample_sync(free, floor, {50: 11, 800: 4})
            sample_async(in_async, {50: 5, 800: 2})
    finally:
        floor.close()
    if one_cpu.runs[50]:
        print_sync("the process on one CPU (the framework's own cost)", one_cpu)
    print_sync("threads free to use every CPU (adds the VM's cross-CPU wake-ups)", free)
    print_async("arun() with an async tool (target <= 50 µs/turn)", in_async)
    print(f"python speed (200k squares), at the end: {python_speed_ms():.1f} ms")


if __name__ == "__main__":
    main()
