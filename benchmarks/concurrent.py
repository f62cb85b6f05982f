"""1,000 `arun`s of different States on one event loop, each a few turns with a model that awaits a short sleep.

Run: `.venv/bin/python benchmarks/concurrent.py`

Prints the total time next to the longest single run and the sum of all runs: the total should be close to the
longest run, not the sum.

This file's name is the name of the standard library package `concurrent`. When a script in this folder runs,
the folder is first on `sys.path`, so `import concurrent.futures` (done by asyncio) would find this file: in that
case it puts the real package in its place and defines nothing else.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))


def _without_this_folder() -> list[str]:
    return [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]


if __name__ != "__main__":
    # Imported as `concurrent`: load the standard library package instead.
    _saved = sys.path[:]
    sys.path[:] = _without_this_folder()
    try:
        del sys.modules[__name__]
        sys.modules[__name__] = importlib.import_module(__name__)
    finally:
        sys.path[:] = _saved
else:
    sys.path[:] = _without_this_folder()

RUNS = 1000
TURNS = 3
SLEEP = 0.05


def _benchmark() -> None:
    import asyncio
    import time

    from alpineagents.agent import Agent
    from alpineagents.testing import FakeModel, tool_call
    from alpineagents.tool import tool
    from alpineagents.types import Reply, Request

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

    asyncio.run(main())


if __name__ == "__main__":
    _benchmark()
