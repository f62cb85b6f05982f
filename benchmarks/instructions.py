"""CPU instructions per unit of work, counted by valgrind (callgrind): figures that do not move with a noisy machine.

Run: `.venv/bin/python benchmarks/instructions.py [--src DIR]` (needs `valgrind`; about two minutes).

Each figure is the difference between a short and a long run of the same workload, divided by the extra units, so
start-up and imports cancel out:

- a turn of `run()` (sync tool) and of `arun()` (async tool), FakeModel, no store (`turns.py`'s runs, 200 vs 800
  turns);
- `State(history=...)` of a 2,400-entry history (`fold.py`'s history, 2 vs 12 replays);
- a durable turn with `FileStore` and with `SQLiteStore` (`store.py`'s run, 50 vs 250 turns; the flushes to disk
  are system calls, not counted);
- `load` of the 800-turn State (2,405 entries) from each store (1 vs 4 loads).

`--src DIR` measures the library in DIR instead of this checkout's `src/` (for example a checkout of an older
commit), with the same workloads: run it for both and compare.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS = {
    "run() turn": ("sync", 200, 800),
    "arun() turn": ("async", 200, 800),
    "State(history=) of 2,400 entries": ("replay", 2, 12),
    "durable turn, FileStore": ("durable-file", 50, 250),
    "durable turn, SQLiteStore": ("durable-sqlite", 50, 250),
    "load of 2,405 entries, FileStore": ("load-file", 1, 4),
    "load of 2,405 entries, SQLiteStore": ("load-sqlite", 1, 4),
}


def workload(what: str, n: int, folder: str) -> None:
    """One run of a workload (inside valgrind)."""
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
    sys.path.append(str(HERE))
    if what in ("sync", "async"):
        import turns

        run = turns.sync_run if what == "sync" else turns.async_run
        run(20)
        run(n)
    elif what == "replay":
        import fold

        from alpineagents.state import State
        from alpineagents.types import Message

        state = State(messages=[Message.user("Find the bug")])
        fold.grow_to(state, 2_400)
        history = state.history
        for _ in range(n + 1):
            State(history=history)
    elif what.startswith("durable-"):
        import store

        store.agent_run(what.split("-")[1], Path(tempfile.mkdtemp(dir=folder)), 20)
        store.agent_run(what.split("-")[1], Path(tempfile.mkdtemp(dir=folder)), n)
    else:
        import store

        kind = what.split("-")[1]
        saved = Path(folder) / f"saved-{kind}"
        state_id = next(info.id for info in store.make_store(kind, saved).list())
        for _ in range(n + 1):
            store.make_store(kind, saved).load(state_id)


def prepare(folder: str, src: str) -> None:
    """The 800-turn States that the load workloads read, saved once (outside valgrind)."""
    code = (
        "import sys; from pathlib import Path; sys.path.append(sys.argv[1]); import store; "
        "[store.agent_run(kind, Path(sys.argv[2]) / f'saved-{kind}', 800) for kind in ('file', 'sqlite')]"
    )
    subprocess.run([sys.executable, "-c", code, str(HERE), folder], check=True, env={**os.environ, "PYTHONPATH": src})


def counted(what: str, n: int, folder: str, src: str) -> int:
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__]
    done = subprocess.run(
        [*command, "--workload", what, str(n), folder],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": src},
        timeout=1800,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind failed on {what} {n}:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    if sys.argv[1:2] == ["--workload"]:
        workload(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--src", default=str(HERE.parent / "src"))
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    folder = tempfile.mkdtemp(prefix="alpineagents-instructions-")
    try:
        prepare(folder, options.src)
        print(f"instructions per unit, library in {options.src}")
        for name, (what, short, long) in WORKLOADS.items():
            extra = counted(what, long, folder, options.src) - counted(what, short, folder, options.src)
            print(f"  {name:<36} {extra / (long - short):>14,.0f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
