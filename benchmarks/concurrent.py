"""1,000 `arun`s of different States on one event loop, each a few turns with a model that awaits a short sleep.

Run: `.venv/bin/python benchmarks/concurrent.py`

Prints the total time next to the longest single run and the sum of all runs: the total should be close to the
longest run, not the sum.
"""

from __future__ import annotations

import os
import sys

# This file's name shadows the standard library's `concurrent` package when run as a script: drop its folder.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

import asyncio  # noqa: E402
import time  # noqa: E402
from typing import Any

from alpineagents.agent import Agent  # noqa: E402
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Reply, Request

RUNS = 1000
TURNS = 3
SLEEP = 0.05


class SleepyModel(FakeModel):
    """A FakeModel whose async answer awaits a short sleep first (like a network request)."""

    async def arespond(self, request: Request, on_text: Any = None, on_event: Any = None) -> Reply:
        await asyncio.sleep(SLEEP)
        return self.respond(request, on_text, on_event)


@tool
async def step(n: int) -> str:
    """One step."""
    return "ok"


async def one_run(index: int) -> float:
    items: list[Any] = [tool_call("step", n=i) for i in range(TURNS - 1)]
    items.append(f"done {index}")
    agent = Agent(SleepyModel(items), tools=[step], reporter=None)
    started = time.perf_counter()
    answer = await agent.arun(f"Task {index}")
    assert answer == f"done {index}"
    return time.perf_counter() - started


async def main() -> None:
    started = time.perf_counter()
    durations = await asyncio.gather(*(one_run(i) for i in range(RUNS)))
    total = time.perf_counter() - started
    print(f"{RUNS} arun() at once, {TURNS} turns each, model sleeps {SLEEP * 1000:.0f} ms per request")
    print(f"  total:            {total:6.2f} s")
    print(f"  longest run:      {max(durations):6.2f} s")
    print(f"  sum of all runs:  {sum(durations):6.2f} s")
    print(f"  one run alone would take at least {TURNS * SLEEP:.2f} s of model sleeps")


if __name__ == "__main__":
    asyncio.run(main())
