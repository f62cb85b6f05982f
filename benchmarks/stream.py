"""The cost of streaming a run's events, and of a turn with no reader.

Run: `.venv/bin/python benchmarks/stream.py` (or `... stream.py turns` for the no-reader figure alone, the command
to time with `farm-bench --vs` against the same script on another tree).

Prints, for a run of 400 turns (FakeModel answering inline, one async tool call per turn, no store, no reporter):
1. `arun()` with no reader: µs per turn (the figure the stream must not move: the seams a stream uses cost one
   attribute check per recorded entry and per model call when nobody reads);
2. `astream()` read to the end: µs per turn, events per turn, and the cost per event above `arun()`;
3. `stream()` (the run on its own thread) read to the end: the same figures.

Each figure is the lowest of 5 runs, so that other work on a shared machine inflates it less.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import deque
from typing import Any

from alpineagents.agent import Agent
from alpineagents.loop import adefault_loop, default_loop
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool

TURNS = 400
REPEAT = 5


@tool
async def astep(n: int) -> str:
    """One async step."""
    return "ok"


@tool
def step(n: int) -> str:
    """One step."""
    return "ok"


class InlineModel(FakeModel):
    """FakeModel whose `arespond` answers inline and keeps only its latest request (the double's costs are not
    the framework's)."""

    def __init__(self, items: list[Any]) -> None:
        super().__init__(items)
        self.requests = deque(maxlen=1)  # type: ignore[assignment]

    async def arespond(self, request: Any, on_text: Any = None, on_event: Any = None) -> Any:
        return self.respond(request, on_text, on_event)


def agent(turns: int, tool_name: str, tools: list[Any], loop: Any) -> Agent:
    script: list[Any] = [tool_call(tool_name, n=i) for i in range(turns)] + ["done"]
    return Agent(InlineModel(script), tools=tools, loop=loop.copy(limit=turns + 1), reporter=None)


def no_reader(turns: int) -> float:
    runner = agent(turns, "astep", [astep], adefault_loop)
    start = time.perf_counter()
    asyncio.run(runner.arun("go"))
    return time.perf_counter() - start


def async_reader(turns: int) -> tuple[float, int]:
    runner = agent(turns, "astep", [astep], adefault_loop)

    async def read() -> int:
        count = 0
        async for _event in runner.astream("go"):
            count += 1
        return count

    start = time.perf_counter()
    count = asyncio.run(read())
    return time.perf_counter() - start, count


def sync_reader(turns: int) -> tuple[float, int]:
    runner = agent(turns, "step", [step], default_loop)
    start = time.perf_counter()
    count = sum(1 for _event in runner.stream("go"))
    return time.perf_counter() - start, count


def best(fn: Any, turns: int) -> Any:
    return min((fn(turns) for _ in range(REPEAT)), key=lambda found: found if isinstance(found, float) else found[0])


def sync_no_reader(turns: int) -> float:
    runner = agent(turns, "step", [step], default_loop)
    start = time.perf_counter()
    runner.run("go")
    return time.perf_counter() - start


def main() -> None:
    if sys.argv[1:] == ["turns"]:  # about 1 s of turns, so that the start of the process weighs little
        for _ in range(25):
            no_reader(TURNS)
        return
    base = best(no_reader, TURNS)
    print(f"arun(), no reader:     {base / TURNS * 1e6:7.1f} µs per turn ({TURNS} turns)")
    seconds, events = best(async_reader, TURNS)
    per_turn = events / TURNS
    extra = (seconds - base) / events * 1e6
    print(
        f"astream(), read:       {seconds / TURNS * 1e6:7.1f} µs per turn, {per_turn:.1f} events per turn, "
        f"{extra:.2f} µs per event above arun()"
    )
    sync_base = best(sync_no_reader, TURNS)
    seconds, events = best(sync_reader, TURNS)
    extra = (seconds - sync_base) / events * 1e6
    print(f"run(), no reader:      {sync_base / TURNS * 1e6:7.1f} µs per turn")
    print(f"stream(), read:        {seconds / TURNS * 1e6:7.1f} µs per turn, {extra:.2f} µs per event above run()")


if __name__ == "__main__":
    main()
