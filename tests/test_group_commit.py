"""Group commit: save points of different States that arrive together share flushes, and lose nothing.

- many threads and many async runs saving at once: every State loads back exactly as it was saved;
- strace shows fewer flushes than save points under concurrency, and exactly one per save point for a lone writer;
- kill -9 during group flushes (at 20 points): every acknowledged save point is there, no State is torn, no State
  holds another's entries.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from alpineagents.agent import Agent
from alpineagents.state import State
from alpineagents.store import FileStore, SQLiteStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message
from helpers.store_kinds import GROUP_KINDS, kind_named

CHILD = Path(__file__).parent / "helpers" / "group_child.py"
KINDS = [kind.name for kind in GROUP_KINDS]


def make_store(kind: str, tmp_path: Path) -> tuple[Store, str]:
    """The store of `kind` in `tmp_path`, and the folder to hand the child process (which opens it the same way)."""
    return kind_named(kind).make(None, tmp_path), str(tmp_path)


def texts(state: State) -> list[str]:
    return [message.text for message in state.messages]


@pytest.mark.parametrize("kind", KINDS)
def test_threads_saving_at_once_each_load_back_exactly(kind: str, tmp_path: Path) -> None:
    store, _ = make_store(kind, tmp_path)
    states = [State(id=f"s{n}", messages=[Message.user(f"s{n} 0")]) for n in range(16)]
    start = threading.Barrier(len(states))
    failures: list[BaseException] = []

    def work(state: State) -> None:
        try:
            start.wait(timeout=30)
            for n in range(1, 26):
                state.add_message(Message.user(f"{state.id} {n}"))
                store.save(state)
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)

    workers = [threading.Thread(target=work, args=(state,)) for state in states]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not failures
    for state in states:
        loaded = store.load(state.id)
        assert texts(loaded) == [f"{state.id} {n}" for n in range(26)]
        assert loaded.history == state.history


@tool
async def step(n: int) -> str:
    """One step.

    Args:
        n: The step's number.
    """
    await asyncio.sleep(0.001)
    return f"step {n}"


@pytest.mark.parametrize("kind", KINDS)
def test_async_runs_saving_at_once_each_load_back_exactly(kind: str, tmp_path: Path) -> None:
    store, _ = make_store(kind, tmp_path)

    async def one(n: int) -> State:
        model = FakeModel([tool_call("step", n=1), tool_call("step", n=2), f"done {n}"])
        agent = Agent(model, tools=[step], store=store, reporter=None, human=None)
        state = State(id=f"a{n}", messages=[Message.user(f"task {n}")])
        await agent.arun(state)
        return state

    async def all_runs() -> list[State]:
        return await asyncio.wait_for(asyncio.gather(*(one(n) for n in range(100))), timeout=120)

    states = asyncio.run(all_runs())
    for n, state in enumerate(states):
        assert state.answer == f"done {n}"
        loaded = store.load(state.id)
        assert loaded.history == state.history
        assert loaded.answer == f"done {n}"


def flushes_between_markers(trace: Path) -> int:
    """The flushes (`fsync`, `fdatasync`, `syncfs`) strace saw between the child's two markers."""
    lines = trace.read_text().splitlines()
    marks = [i for i, line in enumerate(lines) if "alpineagents-marker" in line and "resumed>" not in line]
    assert len(marks) == 2, lines[-20:]
    return sum(1 for line in lines[marks[0] : marks[1]] if re.search(r"\b(fsync|fdatasync|syncfs)\(", line))


def run_child_under_strace(kind: str, tmp_path: Path, threads: int, saves: int, mode: str = "") -> int:
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    _, path = make_store(kind, tmp_path)
    trace = tmp_path / "trace.txt"
    command = [sys.executable, str(CHILD), kind, path, "-", str(threads), str(saves), *([mode] if mode else [])]
    done = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync,syncfs,access", "-o", str(trace), *command],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    return flushes_between_markers(trace)


@pytest.mark.parametrize("kind", KINDS)
def test_a_lone_writer_flushes_exactly_once_per_save_point(kind: str, tmp_path: Path) -> None:
    assert run_child_under_strace(kind, tmp_path, 1, 30, "lone") == 30


@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_save_points_share_flushes(kind: str, tmp_path: Path) -> None:
    saves = 16 * 30
    flushes = run_child_under_strace(kind, tmp_path, 16, 30)
    print(f"{kind}: {saves} save points, {flushes} flushes")
    assert 0 < flushes < saves * 0.75


def test_new_states_created_at_once_share_flushes(tmp_path: Path) -> None:
    # A lone new State flushes twice: its log, then the root that now names its folder. States created at once
    # are built together, their logs flushed by one pass and the root once for the group.
    assert run_child_under_strace("file", tmp_path, 1, 1, "creates") == 2
    creates = 16
    (tmp_path / "many").mkdir()
    flushes = run_child_under_strace("file", tmp_path / "many", creates, 1, "creates")
    print(f"{creates} new States, {flushes} flushes")
    assert 0 < flushes < creates


def acknowledged(acks: Path) -> dict[str, int]:
    """The most messages each State had at a save point its child process saw acknowledged."""
    latest: dict[str, int] = {}
    for line in acks.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2:  # a line cut by the kill was never acknowledged in full
            latest[parts[0]] = max(latest.get(parts[0], 0), int(parts[1]))
    return latest


@pytest.mark.parametrize("kind", KINDS)
def test_kill_9_during_group_flushes_loses_no_acknowledged_save_point(kind: str, tmp_path: Path) -> None:
    generator = random.Random(1234)
    threads = 12
    for point in range(20):
        folder = tmp_path / f"point{point}"
        folder.mkdir()
        _, path = make_store(kind, folder)
        acks = folder / "acks.txt"
        child = subprocess.Popen(
            [sys.executable, str(CHILD), kind, path, str(acks), str(threads), "400"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while not (acks.exists() and acks.stat().st_size > 0):  # the saves have started
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child never acknowledged a save"
            time.sleep(0.005)
        time.sleep(generator.uniform(0.0, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        seen = acknowledged(acks)
        store, _ = make_store(kind, folder)  # a fresh store object: what the disk holds
        for n in range(threads):
            state_id = f"t{n}"
            loaded = store.load(state_id)  # not torn: it loads
            got = texts(loaded)
            assert got == [f"{state_id} message {i}" for i in range(len(got))], "another State's entries, or a gap"
            assert len(got) >= seen.get(state_id, 0), f"point {point}: an acknowledged save point of {state_id} is lost"
        assert sum(seen.values()) > 0
        os.sync()


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts open files through /proc")
def test_async_writers_cancelled_while_they_wait_leave_whole_states_and_no_open_files(tmp_path: Path) -> None:
    """Writers cancelled while their group flushes: every State stays whole (the cancelled save landed or not),
    every one saves again, no temporary file is left and no descriptor leaks."""
    store = FileStore(tmp_path / "states")
    states = [State(id=f"c{n}", messages=[Message.user(f"c{n} 0")]) for n in range(40)]
    for state in states:
        store.save(state)
    before = open_descriptors()

    async def cancel_half() -> None:
        tasks = []
        for state in states:
            state.add_message(Message.user(f"{state.id} 1"))
            tasks.append(asyncio.ensure_future(store.asave(state)))
        await asyncio.sleep(0)  # every writer has handed its write to the group commit and waits
        for task in tasks[::2]:
            task.cancel()
        done = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=60)
        assert all(isinstance(r, asyncio.CancelledError) for r in done[::2]) and not any(done[1::2])
        await asyncio.sleep(0.2)  # the flusher ends the group the cancelled writers left

    asyncio.run(cancel_half())
    for state in states:  # a cancelled save may or may not have landed; a save now completes it
        store.save(state)
        assert texts(store.load(state.id)) == [f"{state.id} 0", f"{state.id} 1"]
    folders = os.listdir(tmp_path / "states")
    assert not [name for name in folders if name.startswith(".")]
    assert not [name for f in folders for name in os.listdir(tmp_path / "states" / f) if name.startswith(".")]
    deadline = time.monotonic() + 20  # the old versions of replaced infos are closed by a background thread
    while open_descriptors() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert open_descriptors() <= before


def test_a_fleet_of_more_states_than_the_lock_table_used_to_hold_keeps_every_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """600 States written by turns: each State's writer lock is taken at its first save and kept, not dropped and
    taken again at every save point (the table of held locks is sized from the open-file limit)."""
    from alpineagents._stores import files, locks

    assert locks._MAX_HOLDS >= 600  # pyright: ignore[reportPrivateUsage]
    store = FileStore(tmp_path / "states")
    states = [State(id=f"f{n}", messages=[Message.user("0")]) for n in range(600)]
    for state in states:
        store.save(state)
    taken: list[str] = []
    lock_folder = files.lock_folder

    def counted(folder: object, state_id: str, owner: object) -> object:
        taken.append(state_id)
        return lock_folder(folder, state_id, owner)  # pyright: ignore[reportArgumentType]

    monkeypatch.setattr(files, "lock_folder", counted)
    for n in (1, 2):
        for state in states:
            state.add_message(Message.user(str(n)))
            store.save(state)
    assert taken == []
    assert texts(store.load("f599")) == ["0", "1", "2"]


def _wait_until(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_save_points_that_fail_inside_a_group_fail_alone(tmp_path: Path) -> None:
    """In one group: a save point whose rows the database refuses ("b": a stray row where its next entry goes, so
    the group is written again with a savepoint per save point) and one that fails its own checks ("d": a gap)
    each get their error; the others of the group are written, once."""
    store = SQLiteStore(tmp_path / "runs.db")
    states = {name: State(id=name, messages=[Message.user(f"{name} 0")]) for name in "abce"}
    for state in states.values():
        store.save(state)
    with contextlib.closing(sqlite3.connect(tmp_path / "runs.db")) as db, db:
        count = db.execute("SELECT count FROM alpine_states WHERE id = 'b'").fetchone()[0]
        db.execute("INSERT INTO alpine_entries (state_id, seq, line) VALUES ('b', ?, '{}')", (count,))
    record = store.read("c")
    assert record is not None
    for state in states.values():
        state.add_message(Message.user(f"{state.id} 1"))
    results: dict[str, BaseException | None] = {}

    def save(name: str) -> None:
        try:
            if name == "d":  # a write with a gap: "c" has fewer entries than this one starts at
                store.write("c", [{"seq": len(record.entries) + 3, "kind": "message"}], record.info)
            else:
                store.save(states[name])
            results[name] = None
        except BaseException as error:  # noqa: BLE001 - checked below
            results[name] = error

    group = store._group  # pyright: ignore[reportPrivateUsage]
    with store._mutex:  # pyright: ignore[reportPrivateUsage] - the first writer flushes alone and waits here
        first = threading.Thread(target=save, args=("e",))
        first.start()
        _wait_until(lambda: group._flushing)  # pyright: ignore[reportPrivateUsage]
        others = [threading.Thread(target=save, args=(name,)) for name in "abd"]
        for thread in others:
            thread.start()
        _wait_until(lambda: len(group._queued) == 3)  # pyright: ignore[reportPrivateUsage] - one group of three
    for thread in (first, *others):
        thread.join(timeout=30)
    assert results.get("a", "missing") is None and results.get("e", "missing") is None, results
    assert isinstance(results["b"], ValueError) and "damaged" in str(results["b"]), results
    assert isinstance(results["d"], ValueError) and "start at seq" in str(results["d"]), results
    assert texts(store.load("a")) == ["a 0", "a 1"]
    assert texts(store.load("e")) == ["e 0", "e 1"]
    again = store.read("c")
    assert again is not None and again.entries == record.entries


@pytest.mark.parametrize("kind", KINDS)
def test_a_lone_async_save_point_is_flushed_by_its_writer_without_a_thread_hand_off(kind: str, tmp_path: Path) -> None:
    """A task alone on its event loop with nothing queued flushes its own save points (no flusher thread, no
    wake-up of the loop); a save point with another task on the loop still goes to the flusher."""
    store, _ = make_store(kind, tmp_path)
    state = State(id="lone", messages=[Message.user("lone 0")])

    before = set(threading.enumerate())  # flushers of earlier tests' stores may still be winding down

    def committers() -> list[str]:
        return [t.name for t in set(threading.enumerate()) - before if "commit" in t.name]

    async def lone() -> list[str]:
        seen: list[str] = []
        for n in range(1, 6):
            state.add_message(Message.user(f"lone {n}"))
            await store.asave(state)
            seen += committers()
        return seen

    assert asyncio.run(lone()) == []
    assert texts(store.load("lone")) == [f"lone {n}" for n in range(6)]

    async def with_company() -> list[str]:
        other = asyncio.create_task(asyncio.sleep(0.5))
        state.add_message(Message.user("lone 6"))
        await store.asave(state)
        seen = committers()
        other.cancel()
        return seen

    assert asyncio.run(with_company()) != [], "another task on the loop: the save point goes to the flusher"
    assert texts(store.load("lone"))[-1] == "lone 6"
