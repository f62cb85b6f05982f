"""A lone durable turn, this version against an older one, measured in one run.

Run: `.venv/bin/python benchmarks/lone_turn.py --old /tmp/old/src` where `/tmp/old` is a checkout of the version to
compare with (`git worktree add /tmp/old 8bac9a3`, the commit before group commit). `--pairs 10`, `--turns 200`,
`--stores file,sqlite` (`none`: the same run without a store, what the turn costs without saving), `--new` another
src folder in place of this checkout's.

One run of `turns` durable tool turns (a real Agent, a scripted FakeModel, a tool call a turn, the State saved at
every save point, three a turn) in a fresh process, for one store: it prints the µs per turn. The two versions take
turns, pair by pair (old then new, then new then old), each in its own process with its own `src` first on the path,
so a busy machine slows both sides of a pair alike. The script prints, per store, the median µs per turn of each
version and the median of the new/old ratios of the pairs (with their smallest and largest): of the wall time, what
the run takes, and of the CPU time of its process (every thread, user and kernel), which holds better when other
programs keep the CPUs busy but leaves out the waits for the disk.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
NEW_SRC = HERE.parent / "src"

ONE_RUN = """
import sys, tempfile, time
from alpineagents import Agent, FileStore, Message, SQLiteStore, State, tool
from alpineagents.loop import default_loop
from alpineagents.testing import FakeModel, tool_call

@tool
def add(a: int, b: int) -> int:
    '''Add two numbers.

    Args:
        a: the first.
        b: the second.
    '''
    return a + b

kind, turns, folder = sys.argv[1], int(sys.argv[2]), sys.argv[3]
stores = {"file": lambda: FileStore(folder + "/runs"), "sqlite": lambda: SQLiteStore(folder + "/runs.db")}
store = stores[kind]() if kind != "none" else None
replies = [tool_call("add", a=1, b=2) for _ in range(turns)] + ["done"]
loop = default_loop.copy(limit=turns + 5)  # the default stops at 50 turns
agent = Agent(FakeModel(replies), tools=[add], loop=loop, store=store, reporter=None, human=None)
state = State(messages=[Message.user("go")])
started, cpu = time.perf_counter(), time.process_time()
agent.run(state)
took, cpu = time.perf_counter() - started, time.process_time() - cpu
assert state.answer == "done" and state.turn == turns + 1, (state.answer, state.turn)
print(took / turns * 1e6, cpu / turns * 1e6)
"""


def one(src: Path, kind: str, turns: int) -> tuple[float, float]:
    """µs per turn of one lone durable run with the package at `src`, in a fresh process: wall time, and CPU time
    (of all the process's threads, in user space and in the kernel)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("ALPINEAGENTS_RECORD", None)
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as folder:
        done = subprocess.run(
            [sys.executable, "-c", ONE_RUN, kind, str(turns), folder],
            env=env, capture_output=True, text=True, timeout=600, check=True,
        )  # fmt: skip
    wall, cpu = done.stdout.split()[-2:]
    return float(wall), float(cpu)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, type=Path, help="the src folder of the version to compare with")
    parser.add_argument("--new", type=Path, default=NEW_SRC, help="the src folder of the new version (this checkout's)")
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--stores", default="file,sqlite")
    args = parser.parse_args(argv)
    for flag, src in (("--old", args.old), ("--new", args.new)):
        if not (src / "alpineagents" / "__init__.py").exists():
            parser.error(f"{flag} {src} holds no alpineagents package: give the src folder of a checkout")
    for kind in args.stores.split(","):
        old: list[tuple[float, float]] = []
        new: list[tuple[float, float]] = []
        for pair in range(args.pairs):
            order = [(args.old, old), (args.new, new)]
            for src, kept in order if pair % 2 == 0 else order[::-1]:
                kept.append(one(src, kind, args.turns))
        for index, what in enumerate(("wall", "cpu")):
            olds, news = [o[index] for o in old], [n[index] for n in new]
            ratios = sorted(n / o for n, o in zip(news, olds, strict=True))
            print(
                f"{kind:6} {what:4} old {statistics.median(olds):7.1f} µs/turn   new {statistics.median(news):7.1f} "
                f"µs/turn   new/old median {statistics.median(ratios):.3f} (pairs {ratios[0]:.3f}–{ratios[-1]:.3f}, "
                f"n={len(ratios)})"
            )


if __name__ == "__main__":
    main()
