"""Store benchmark: the cost of saving and loading, for FileStore and SQLiteStore.

Run: `.venv/bin/python benchmarks/store.py` (add `--quick` for a short run; `--cpu` for the stores' own Python
without a flush, to compare two versions on a busy machine).

`--vs OLD_SRC [--pairs N --turns N --stores file,sqlite]`: a lone durable turn of this version against another
checkout's `src` folder (e.g. `git worktree add /tmp/old 8bac9a3`, the commit before group commit: `--vs
/tmp/old/src`), measured in one run, pair by pair; it prints per store the µs per turn of each and their ratio
(benchmarks/lone_turn.py does the measuring).

For runs of 50 and 800 turns (one tool call a turn, a real Agent with a scripted FakeModel) it prints, per store:

- µs per turn of the whole run with the store, and without a store (the difference is what saving costs);
- store-only µs per turn: the same 3 entries a turn recorded with the State's recording operations and saved at
  the same save points, without the Agent (what the store itself costs);
- fsync/fdatasync calls per save point that wrote something (counted by wrapping `os.fsync`/`os.fdatasync`; for
  SQLite, whose flushes happen inside the C library, counted with `strace -c` when strace is installed);
- bytes written per turn (`wchar` of /proc/self/io: everything handed to write calls, logs, info, WAL pages);
- the 800/50 ratio of the per-turn cost (saving appends, so it must stay near 1: target at most 1.3);
- the time to load the 800-turn State (about 2,400 entries; target under 20 ms), split into reading + parsing,
  converting, and replaying;

beside the cost of one bare `fsync` of a small append on the same disk and a fixed piece of pure-Python work
(how fast this machine is right now).
"""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from alpineagents import store as store_module
from alpineagents._history.decode import entries_from_dicts
from alpineagents.agent import Agent
from alpineagents.loop import default_loop
from alpineagents.state import State
from alpineagents.store import FileStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message, Reply, TextBlock, ToolCall, ToolOutcomeKind, Usage

SQLiteStore = store_module.SQLiteStore


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: " + "x" * 200


class Counter:
    """Counts os.fsync/os.fdatasync calls and store saves."""

    def __init__(self) -> None:
        self.syncs = 0
        self.sync_seconds = 0.0
        self.saves = 0
        self.writes = 0
        self._fsync = os.fsync
        self._fdatasync = getattr(os, "fdatasync", None)

    def __enter__(self) -> Counter:
        def fsync(fd: int) -> None:
            self.syncs += 1
            start = time.perf_counter()
            self._fsync(fd)
            self.sync_seconds += time.perf_counter() - start

        def fdatasync(fd: int) -> None:
            self.syncs += 1
            assert self._fdatasync is not None
            start = time.perf_counter()
            self._fdatasync(fd)
            self.sync_seconds += time.perf_counter() - start

        os.fsync = fsync
        if self._fdatasync is not None:
            os.fdatasync = fdatasync
        return self

    def __exit__(self, *exc: Any) -> None:
        os.fsync = self._fsync
        if self._fdatasync is not None:
            os.fdatasync = self._fdatasync


def counted(store: Store, counter: Counter) -> Store:
    save, write = store.save, store.write

    def counting_save(state: State) -> None:
        counter.saves += 1
        save(state)

    def counting_write(*args: Any, **kwargs: Any) -> None:
        counter.writes += 1
        write(*args, **kwargs)

    store.save = counting_save  # type: ignore[method-assign]
    store.write = counting_write  # type: ignore[method-assign]
    return store


def wchar() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    return 0


def make_store(kind: str, folder: Path, *, durable: bool = True) -> Store:
    if kind == "file":
        return FileStore(folder / "runs")
    store = SQLiteStore(folder / "runs.db")
    if not durable:  # for the CPU figure: SQLite's flushes happen in C, where they cannot be timed apart
        store._connect(create=True).execute("PRAGMA synchronous=OFF")  # pyright: ignore
    return store


def agent_run(kind: str | None, folder: Path, turns: int) -> dict[str, float]:
    """One Agent run of `turns` turns, one tool call each; returns µs per turn, syncs per write, bytes per turn."""
    counter = Counter()
    store = counted(make_store(kind, folder), counter) if kind else None
    replies: list[Any] = [tool_call("read_file", path=f"src/module_{i}.py") for i in range(turns)] + ["done"]
    loop = default_loop.copy(limit=turns + 5)
    agent = Agent(FakeModel(replies), tools=[read_file], loop=loop, store=store, reporter=None, human=None)
    state = State(id=f"run{turns}", messages=[Message.user("Read every module.")])
    before = wchar()
    with counter:
        start = time.perf_counter()
        agent.run(state)
        took = time.perf_counter() - start
    assert state.turn == turns + 1, state.turn
    return {
        "us_per_turn": took / turns * 1e6,
        "syncs_per_write": counter.syncs / max(counter.writes, 1),
        "saves": counter.saves,
        "writes": counter.writes,
        "bytes_per_turn": (wchar() - before) / turns,
    }


def store_only(kind: str, folder: Path, turns: int, *, durable: bool = True) -> dict[str, float]:
    """The same entries recorded with the State's own operations, saved at the same points, without the Agent.

    `us_per_turn` is the wall time; `cpu_us_per_turn` leaves out the time spent flushing to disk (for SQLite: a
    run with `synchronous=OFF`, given `durable=False`)."""
    counter = Counter()
    store = counted(make_store(kind, folder, durable=durable), counter)
    state = State(id=f"only{turns}", messages=[Message.user("Read every module.")])
    before = wchar()
    with counter:
        start = time.perf_counter()
        store.save(state)
        for turn in range(turns):
            call = ToolCall("read_file", {"path": f"src/module_{turn}.py"}, f"call_{turn:012x}")
            state._begin_think("fake/fake")  # pyright: ignore[reportPrivateUsage]
            store.save(state)
            reply = Reply(
                Message("assistant", (TextBlock("Reading the next module."), call)), Usage(900, 12, requests=1)
            )
            state._record_reply(reply)  # pyright: ignore[reportPrivateUsage]
            store.save(state)
            state._tool_result(call, read_file(path=call.args["path"]), ToolOutcomeKind.DONE)  # pyright: ignore
            store.save(state)
            store.save(state)  # the end of use_tools: nothing new, no write
        took = time.perf_counter() - start
    return {
        "us_per_turn": took / turns * 1e6,
        "cpu_us_per_turn": (took - counter.sync_seconds) / turns * 1e6,
        "syncs_per_write": counter.syncs / max(counter.writes, 1),
        "bytes_per_turn": (wchar() - before) / turns,
    }


def best(fn: Callable[[], Any], times: int = 5) -> float:
    result = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        fn()
        result = min(result, time.perf_counter() - start)
    return result


def without_gc(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        gc.disable()
        try:
            return fn()
        finally:
            gc.enable()

    return run


def load_figures(kind: str, folder: Path, state_id: str) -> dict[str, float]:
    store = make_store(kind, folder)
    record = store.read(state_id)
    assert record is not None
    entries = entries_from_dicts(record.entries)  # what load converts with
    return {
        "entries": len(record.entries),
        "load_ms": best(lambda: make_store(kind, folder).load(state_id)) * 1e3,
        # the parts as load runs them: without the cyclic garbage collector
        "read_ms": best(without_gc(lambda: make_store(kind, folder).read(state_id))) * 1e3,
        "convert_ms": best(without_gc(lambda: entries_from_dicts(record.entries))) * 1e3,
        "replay_ms": best(without_gc(lambda: State(id=state_id, history=entries))) * 1e3,
    }


def bare_fsync_us(folder: Path, times: int = 50) -> float:
    path = folder / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        start = time.perf_counter()
        for _ in range(times):
            os.write(fd, b"x" * 100 + b"\n")
            os.fsync(fd)
        return (time.perf_counter() - start) / times * 1e6
    finally:
        os.close(fd)
        path.unlink()


def python_speed_ms() -> float:
    return best(lambda: sum(i * i for i in range(200_000))) * 1e3


def sqlite_syncs_per_write(turns: int) -> str:
    """fsync+fdatasync calls per SQLite write, counted by strace in a child process."""
    if shutil.which("strace") is None:
        return "n/a (no strace)"
    with tempfile.TemporaryDirectory() as folder:
        out = subprocess.run(
            [
                "strace",
                "-f",
                "-c",
                "-e",
                "trace=fsync,fdatasync",
                sys.executable,
                __file__,
                "--sqlite-child",
                folder,
                str(turns),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        writes = int(out.stdout.strip().splitlines()[-1])
        calls = 0
        for line in out.stderr.splitlines():
            parts = line.split()
            if parts and parts[-1] in ("fsync", "fdatasync"):
                calls += int(parts[3])
        return f"{calls / writes:.2f} ({calls} for {writes} writes)"


def sqlite_child(folder: str, turns: int) -> None:
    counter = Counter()
    store = counted(SQLiteStore(Path(folder) / "runs.db"), counter)
    replies: list[Any] = [tool_call("read_file", path=f"src/module_{i}.py") for i in range(turns)] + ["done"]
    loop = default_loop.copy(limit=turns + 5)
    Agent(FakeModel(replies), tools=[read_file], loop=loop, store=store, reporter=None, human=None).run(
        State(id="s", messages=[Message.user("Read every module.")])
    )
    print(counter.writes)


def main(quick: bool) -> None:
    sizes = (50, 200) if quick else (50, 800)
    print(f"python speed (200k squares): {python_speed_ms():.1f} ms   (a current idle machine: about 8-10 ms)")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:  # BENCH_DIR: the disk to measure
        root = Path(tmp)
        print(f"bare fsync of a 101-byte append on this disk: {bare_fsync_us(root):.0f} µs")
        bare = {n: agent_run(None, root / f"none{n}", n)["us_per_turn"] for n in sizes}
        print(f"agent run without a store: {', '.join(f'{n} turns {bare[n]:.0f} µs/turn' for n in sizes)}")
        for kind in ("file", "sqlite"):
            print(f"\n== {'FileStore' if kind == 'file' else 'SQLiteStore'}")
            runs = {n: agent_run(kind, root / f"{kind}{n}", n) for n in sizes}
            only = {n: store_only(kind, root / f"{kind}only{n}", n) for n in sizes}
            cpu: dict[int, float] = {}
            for n in sizes:  # best of 3, interleaved: the machine is shared
                for attempt in range(3):
                    figures = store_only(kind, root / f"{kind}cpu{n}-{attempt}", n, durable=False)
                    cpu[n] = min(cpu.get(n, float("inf")), figures["cpu_us_per_turn"])
            for n in sizes:
                r, o = runs[n], only[n]
                print(
                    f"{n:4d} turns: agent run {r['us_per_turn']:7.0f} µs/turn ({r['us_per_turn'] - bare[n]:6.0f} for "
                    f"saving), {r['writes'] / n:.1f} writes/turn of {r['saves'] / n:.1f} save points; store only "
                    f"{o['us_per_turn']:6.0f} µs/turn, without the flushes {cpu[n]:5.0f} µs/turn; "
                    f"{r['bytes_per_turn']:6.0f} bytes written/turn"
                )
            small, large = sizes
            print(
                f"per-turn cost {large}/{small}: agent run {runs[large]['us_per_turn'] / runs[small]['us_per_turn']:.2f}, "
                f"store only {only[large]['us_per_turn'] / only[small]['us_per_turn']:.2f}, store only without the "
                f"flushes {cpu[large] / cpu[small]:.2f} (target <= 1.3)"
            )
            if kind == "file":
                print(
                    f"fsync/fdatasync per write: {runs[large]['syncs_per_write']:.3f} "
                    "(1 per append; creating a State adds one for its folder)"
                )
            else:
                print(f"fsync/fdatasync per write (strace): {sqlite_syncs_per_write(small)}")
            figures = load_figures(kind, root / f"{kind}only{large}", f"only{large}")
            print(
                f"load of {figures['entries']} entries: {figures['load_ms']:.1f} ms (target < 20 ms) = read+parse "
                f"{figures['read_ms']:.1f} + convert {figures['convert_ms']:.1f} + replay {figures['replay_ms']:.1f}"
            )


def cpu_only() -> None:
    """`--cpu`: the stores' own Python without a disk flush, for comparing two versions on a busy machine (run each
    version's process in turn, e.g. with `farm-bench --vs`, and compare their CPU time): 3,000 save points into
    `SQLiteStore(":memory:")` (the checks, the job, the group commit, the rows) and 30 loads each of a FileStore
    State of 2,400 entries and of that SQLite State (read, parse, decode, replay)."""
    store = store_module.SQLiteStore(":memory:")  # pyright: ignore[reportAttributeAccessIssue]
    state = State(id="s", messages=[Message.user("hi")])
    start = time.perf_counter()
    for n in range(3000):
        state.add_message(Message.user(f"message {n}"))
        store.save(state)
    save = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        files = FileStore(tmp)
        files.save(State(id="big", messages=[Message.user(f"m{n}") for n in range(2400)]))
        start = time.perf_counter()
        for _ in range(30):
            files.load("big")
            store.load("s")
        load = time.perf_counter() - start
    print(f"save point {save * 1e6 / 3000:.1f} µs; loads of 2,400 + 3,001 entries {load * 1e3 / 30:.2f} ms")


def lone_turn_vs(argv: list[str]) -> None:
    """`--vs OLD_SRC ...`: benchmarks/lone_turn.py with `--old OLD_SRC` and the other options as given."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import lone_turn  # pyright: ignore[reportMissingImports]

    lone_turn.main(["--old", *argv])  # pyright: ignore[reportUnknownMemberType]


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--vs":
        lone_turn_vs(sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "--sqlite-child":
        sqlite_child(sys.argv[2], int(sys.argv[3]))
    elif "--cpu" in sys.argv:
        cpu_only()
    else:
        main("--quick" in sys.argv)
