"""A durable fleet: many `arun`s of different States at once, each saved to one store at every save point.

Run: `.venv/bin/python benchmarks/fleet.py` (`--runs 1000`, `--turns 5`, `--stores none,file,sqlite`).

Each run has `turns` turns (an async tool call each, then the answer) against a model that awaits 10 ms per
request. For each store it prints the wall time of all runs at once, the ratio to the same runs without a store,
and the number of save points that wrote something. Count the flushes to disk with strace:
`strace -f -c -e trace=fsync,fdatasync,syncfs .venv/bin/python benchmarks/fleet.py --stores sqlite`. It then times one
lone durable run (µs per turn above the model's time): what a run pays with nobody to share a flush with. The
first lines name the file system the stores write to: on ext4 without a journal, or with online discard, each save
point of `FileStore` costs more (see docs/stores.md). Under each store's time, the CPU the process spent on it, in
user space and in the kernel: `FileStore`'s kernel share is the file system's work per save point.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# This folder holds concurrent.py, which would shadow the standard library's package: drop it from the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from alpineagents.agent import Agent  # noqa: E402
from alpineagents.state import State  # noqa: E402
from alpineagents.store import FileStore, SQLiteStore, Store  # noqa: E402
from alpineagents.testing import FakeModel, tool_call  # noqa: E402
from alpineagents.tool import tool  # noqa: E402
from alpineagents.types import Message, Reply, Request  # noqa: E402

MODEL_SECONDS = 0.01


class SleepyModel(FakeModel):
    """A FakeModel whose async answer first awaits a short sleep, as a network request would."""

    async def arespond(self, request: Request, on_text: Any = None, on_event: Any = None) -> Reply:
        await asyncio.sleep(MODEL_SECONDS)
        return self.respond(request, on_text, on_event)


@tool
async def step(n: int) -> str:
    """One step.

    Args:
        n: The step's number.
    """
    return f"step {n} done"


def make_store(kind: str, folder: Path) -> Store | None:
    if kind == "none":
        return None
    if kind == "file":
        return FileStore(folder / "states")
    return SQLiteStore(folder / "runs.db")


def replies(turns: int, index: int) -> list[Any]:
    return [*(tool_call("step", n=n) for n in range(turns)), f"done {index}"]


async def fleet(store: Store | None, runs: int, turns: int) -> float:
    async def one(index: int) -> None:
        agent = Agent(SleepyModel(replies(turns, index)), tools=[step], reporter=None, human=None, store=store)
        state = State(id=f"run-{index}", messages=[Message.user(f"Task {index}")])
        await agent.arun(state)
        assert state.answer == f"done {index}", state.answer

    start = time.perf_counter()
    await asyncio.gather(*(one(n) for n in range(runs)))
    return time.perf_counter() - start


def count_writes(store: Store) -> list[int]:
    """Wrap the store's `write` and `awrite` to count the save points that wrote something."""
    counter = [0]
    write, awrite = store.write, store.awrite

    def counted_write(*args: Any, **kwargs: Any) -> None:
        counter[0] += 1
        write(*args, **kwargs)

    async def counted_awrite(*args: Any, **kwargs: Any) -> None:
        counter[0] += 1
        await awrite(*args, **kwargs)

    store.write = counted_write  # type: ignore[method-assign]
    if type(store).awrite is not Store.awrite:  # the default awrite calls write: counted there
        store.awrite = counted_awrite  # type: ignore[method-assign]
    return counter


def lone(kind: str, folder: Path, turns: int) -> float:
    store = make_store(kind, folder)
    agent = Agent(SleepyModel(replies(turns, 0)), tools=[step], reporter=None, human=None, store=store)
    state = State(id="lone", messages=[Message.user("Task 0")])
    start = time.perf_counter()
    asyncio.run(agent.arun(state))
    took = time.perf_counter() - start
    return (took - (turns + 1) * MODEL_SECONDS) / (turns + 1) * 1e6


def describe_disk(folder: Path) -> str:
    """The file system the stores write to, with what changes their cost: on ext4 without a journal every new file
    steps over the inodes freed lately, and with online discard freeing a file waits for the disk."""
    try:
        mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "unknown (no /proc/mounts)"
    where = str(folder.resolve())
    found = max(
        (m for m in mounts if len(m) >= 4 and (where == m[1] or where.startswith(m[1].rstrip("/") + "/"))),
        key=lambda m: len(m[1]),
        default=None,
    )
    if found is None:
        return "unknown"
    device, point, kind, options = found[:4]
    traits = ["online discard" if "discard" in options.split(",") else "no online discard"]
    journal = Path("/sys/fs/ext4") / Path(device).name / "journal_task"
    if kind == "ext4" and journal.exists():
        traits.insert(0, "no journal" if journal.read_text().strip() == "<none>" else "with a journal")
    return f"{kind} on {device} at {point} ({', '.join(traits)})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--stores", default="none,file,sqlite")
    options = parser.parse_args()
    kinds = options.stores.split(",")
    print(
        f"{options.runs} arun() at once, {options.turns} tool turns + the answer each, model {MODEL_SECONDS * 1e3:.0f} ms"
    )
    print(f"disk: {describe_disk(Path(tempfile.gettempdir()))}")
    baseline = None
    for kind in kinds:
        folder = Path(tempfile.mkdtemp(prefix="alpineagents-fleet-"))
        try:
            store = make_store(kind, folder)
            writes = count_writes(store) if store is not None else [0]
            before = resource.getrusage(resource.RUSAGE_SELF)
            took = asyncio.run(fleet(store, options.runs, options.turns))
            after = resource.getrusage(resource.RUSAGE_SELF)
            if kind == "none":
                baseline = took
            ratio = f", {took / baseline:.1f}x the runs without a store" if baseline and kind != "none" else ""
            print(f"  {kind:>6}: {took:6.2f} s{ratio}; {writes[0]} save points written")
            print(
                f"          CPU of the process (all its threads): {after.ru_utime - before.ru_utime:.2f} s in Python "
                f"and user space, {after.ru_stime - before.ru_stime:.2f} s in the kernel"
            )
            if kind != "none":
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                print(f"          one run alone: {lone(kind, folder, options.turns):.0f} µs per turn above the model")
        finally:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
