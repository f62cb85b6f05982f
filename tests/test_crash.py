"""Crash safety of the stores: a real agent run is killed with SIGKILL at many points, then resumed elsewhere.

The child program is tests/helpers/crash_child.py (a zygote that forks one fresh child per job). For each store and each
kill point: the run dies by SIGKILL exactly at that point; a fresh process loads the State and resumes it. Every
time: no acknowledged entry is lost, the loaded history is a prefix of what the child had recorded, a torn last
record is ignored and repaired, a tool call whose result was saved never runs again (the journal of side effects
proves it), a call that was running gets the unknown result, and the resumed run finishes. A transaction cut off
before its commit (SQLite, Postgres) leaves nothing; a Postgres save point committed just before the kill is kept,
though the dead process never learned of it.

A power loss (the last test, for FileStore and SQLiteStore) is a journaled ext4 of the test's own, in a file mounted
through a loop device, copied while mounted: every State loads from the copy with every acknowledged entry, and no
`info.json` is left empty.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import alpineagents.store as store_module
from alpineagents import _serial
from alpineagents.state import STOPPED_WAITING, UNSAVED_RESULT, State
from alpineagents.store import FileStore, Store
from alpineagents.types import Message
from helpers.store_kinds import kind_named

CHILD = Path(__file__).parent / "helpers" / "crash_child.py"
SQLiteStore = store_module.SQLiteStore

COMMON = [
    "run_start:1",
    "think_start:1",
    "think_start:3",
    "respond:1",
    "respond:2",
    "respond:3",  # the compaction request
    "respond:4",
    "respond:5",
    "think_end:1",
    "think_end:2",
    "think_end:3",
    "think_end:4",
    "tool_pre:1",
    "tool:1",
    "tool:2",
    "tool:3",
    "tool:4",
    "tool_end:1",
    "tool_end:2",
    "tool_end:3",
    "tool_end:4",
    "context_change:1",  # a compaction recorded, not saved
]
FILE_ONLY = [
    "log_write:1",  # the create write
    "log_write:2",
    "log_write:5",
    "log_write:9",
    "log_write:14",
    "info_replace:3",
    "info_replace:8",
]
SQLITE_ONLY = ["sqlite_txn:1", "sqlite_txn:4", "sqlite_txn:9", "sqlite_txn:14"]
POSTGRES_ONLY = [
    "pg_txn_open:1",  # the create: first round trip sent, no commit
    "pg_txn_open:4",
    "pg_txn_open:9",
    "pg_txn_open:14",
    "pg_committed:1",  # the create committed, the State never told
    "pg_committed:4",
    "pg_committed:9",
    "pg_committed:14",
]
CASES = (
    [("file", p) for p in COMMON + FILE_ONLY]
    + [("sqlite", p) for p in COMMON + SQLITE_ONLY]
    + [("postgres", p) for p in COMMON + POSTGRES_ONLY]
)


class Zygote:
    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(CHILD.parent), *sys.path]))
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def do(self, **job: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        assert select.select([self.proc.stdout], [], [], 60)[0], "the crash zygote did not answer within 60 s"
        line = self.proc.stdout.readline()
        assert line, "the crash zygote died"
        return json.loads(line)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    z = Zygote()
    yield z
    z.close()


def open_store(job: dict[str, str]) -> Store:
    return kind_named(job["kind"]).open(job)


def place(request: pytest.FixtureRequest, kind: str, folder: Path) -> dict[str, str]:
    """Where the job's store keeps the State: the folder, and for Postgres a fresh schema on the test server."""
    return kind_named(kind).place(request, folder)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def journal(folder: Path) -> list[str]:
    path = folder / "journal.txt"
    return path.read_text().splitlines() if path.exists() else []


def error_text(folder: Path) -> str:
    path = folder / "error.txt"
    return path.read_text() if path.exists() else ""


def journal_key(entry: dict[str, Any]) -> str:
    call = entry["call"]
    return f"{call['name']} {next(iter(call['args'].values()))}"


@pytest.mark.parametrize(("kind", "point"), CASES, ids=[f"{k}-{p}" for k, p in CASES])
def test_a_run_killed_at_any_point_resumes_without_losing_or_rerunning_anything(
    zygote: Zygote, request: pytest.FixtureRequest, tmp_path: Path, kind: str, point: str
) -> None:
    where = place(request, kind, tmp_path)
    status = zygote.do(do="run", point=point, **where)
    assert status == {"signal": 9}, error_text(tmp_path) or f"the run was not killed at {point}: {status}"
    recorded = read_json(tmp_path / "recorded.json")
    ran_before = journal(tmp_path)
    log = tmp_path / "runs" / "crash" / "log.jsonl"
    if point.startswith("log_write:") and point != "log_write:1":
        assert not log.read_bytes().endswith(b"\n")  # the crash left a torn last line
    if point == "log_write:1":  # killed while creating: only a temporary folder, never listed
        assert [p.name.startswith(".new-crash-") for p in (tmp_path / "runs").iterdir()] == [True]
        assert FileStore(tmp_path / "runs").list() == []
    if point.startswith("info_replace:"):  # killed before the rename: the new info was written aside
        assert [p.name.startswith(".info.json.") for p in (tmp_path / "runs" / "crash").iterdir()].count(True) == 1

    status = zygote.do(do="resume", point="", **where)
    assert status == {"exit": 0}, error_text(tmp_path)
    loaded = read_json(tmp_path / "loaded.json")
    final = read_json(tmp_path / "final.json")

    # No acknowledged entry is lost, and the saved history is a prefix of what the child had recorded.
    saved = loaded["history"][: loaded["saved"]]
    assert not loaded["missing"] or recorded["acked"] == 0
    assert len(saved) >= recorded["acked"]
    assert saved == recorded["history"][: len(saved)]
    if point.startswith(("sqlite_txn:", "pg_txn_open:")):
        assert len(saved) == recorded["acked"]  # the transaction in flight left nothing
    if point.startswith("pg_committed:"):
        assert len(saved) > recorded["acked"]  # the committed save point is kept, though the State never heard

    # The turn left open is closed on loading: the request taken back, every pending call unknown.
    rebuilt = State(history=[_serial.entry_from_dict(entry) for entry in saved])
    closing = loaded["history"][loaded["saved"] :]
    expected_kinds = (["error"] if rebuilt.snapshot()._waiting else []) + ["tool_result"] * len(rebuilt.pending_calls)  # pyright: ignore[reportPrivateUsage]
    assert [e["kind"] for e in closing] == expected_kinds
    if rebuilt.snapshot()._waiting:  # pyright: ignore[reportPrivateUsage]
        assert closing[0]["content"] == STOPPED_WAITING
    unknown = [e for e in closing if e["kind"] == "tool_result"]
    assert [e["call"]["id"] for e in unknown] == [c.id for c in rebuilt.pending_calls]
    assert all(e["content"] == UNSAVED_RESULT and e["outcome"] == "aborted" for e in unknown)

    # A call that was running when the process died gets the unknown result.
    in_memory = State(history=[_serial.entry_from_dict(entry) for entry in recorded["history"]])
    requested = {c.id for c in rebuilt.pending_calls} | {e["call"]["id"] for e in saved if e["kind"] == "tool_result"}
    running = {c.id for c in in_memory.pending_calls} & requested
    if point.startswith(("tool:", "tool_pre:")):
        assert running
    if point.startswith("tool:"):  # the killed tool's side effect happened, its result was never recorded
        # (parallel calls may journal in either order, so the killed one need not be the last journal line)
        assert set(ran_before) & {journal_key(e) for e in unknown}
    assert running <= {e["call"]["id"] for e in unknown}

    # Side effects: each call ran at most once; every call with a saved result ran; the resume ran none again.
    assert len(ran_before) == len(set(ran_before))
    for entry in saved:
        if entry["kind"] == "tool_result" and entry["outcome"] == "done":
            assert journal_key(entry) in ran_before
    assert journal(tmp_path) == ran_before

    # The resumed run finished, and the store holds it completely.
    assert final["answer"] == "Resumed and finished"
    assert final["history"][: len(loaded["history"])] == loaded["history"]
    reloaded = open_store(where).load("crash")
    assert [_serial.entry_to_dict(e, i) for i, e in enumerate(reloaded.history)] == final["history"]
    if kind == "file":
        text = log.read_text()
        assert text.endswith("\n")
        for line in text.split("\n")[:-1]:
            json.loads(line)
        # what a killed writer left aside is removed by the next one that takes the State's lock
        assert sorted(p.name for p in log.parent.iterdir()) == ["info.json", "log.jsonl"]


# --- a power loss ------------------------------------------------------------------------------------------------
#
# A machine that loses power keeps only what reached its disk. The test gives FileStore a disk of its own: a small
# journaled ext4 (the common Linux default, ordered mode) in a file, mounted through a loop device. A copy of that
# file taken while it is mounted holds exactly what the file system has sent to its disk so far, so mounting the
# copy is mounting the disk after a power loss at that moment (the journal is replayed as it would be at boot).


def _mounted(image: Path, where: Path) -> None:
    where.mkdir()
    subprocess.run(["mount", "-o", "loop", str(image), str(where)], check=True, capture_output=True, timeout=60)


def _unmount(where: Path) -> None:
    """Unmount, at once even while something still holds a file there (then the kernel finishes when it lets go)."""
    if subprocess.run(["umount", str(where)], capture_output=True, timeout=60).returncode != 0:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=60)


def _power_loss_store(kind: str, disk: Path) -> Store:
    return kind_named(kind).open({"kind": kind, "dir": str(disk)})


def _save_and_lose_power(store: Store, image: Path, crashes: list[Path], *, at_once: bool) -> list[str]:
    """Save ten new States (`crashes[0]`: the disk as a power loss then would leave it), then twice more each
    (`crashes[1]`), one after another or all at once (`asave`s on one event loop: group commits). Each save is
    acknowledged: its entries are on the disk (a `FileStore` info is not flushed on its own). The States and their
    writer locks (open files on that disk) are gone when this returns."""

    async def save_all() -> None:
        await asyncio.gather(*(store.asave(state) for state in states))

    states = [State(id=f"s{n}", messages=[Message.user("first")]) for n in range(10)]
    for text, crash in (("first", crashes[0]), ("second", None), ("third", crashes[1])):
        for state in states:
            if text != "first":
                state.add_message(Message.user(text))
            if not at_once:
                store.save(state)
        if at_once:
            asyncio.run(save_all())
        if crash is not None:  # the power goes now: the disk holds what has reached it
            subprocess.run(["cp", "--sparse=always", str(image), str(crash)], check=True, timeout=60)
    return [state.id for state in states]


@pytest.mark.parametrize("at_once", [False, True], ids=["one_by_one", "at_once"])
@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_a_power_loss_right_after_saves_keeps_every_state_loadable_with_what_was_acknowledged(
    kind: str, at_once: bool, tmp_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a file system of its own needs root")
    image, disk = tmp_path / "disk.img", tmp_path / "disk"
    image.write_bytes(b"")
    os.truncate(image, 64 * 1024 * 1024)
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True, timeout=60)
        _mounted(image, disk)
    except (OSError, subprocess.SubprocessError) as error:
        pytest.skip(f"no journaled ext4 on a loop device here ({error})")
    crashes = [tmp_path / "crash-after-create.img", tmp_path / "crash-later.img"]
    try:
        store = _power_loss_store(kind, disk)
        ids = _save_and_lose_power(store, image, crashes, at_once=at_once)
        if isinstance(store, SQLiteStore):
            store.close()
        del store
    finally:
        _unmount(disk)
    for crash, saved in zip(crashes, (["first"], ["first", "second", "third"]), strict=True):
        after = tmp_path / crash.stem
        _mounted(crash, after)  # the journal is replayed, as at boot
        try:
            survivor = _power_loss_store(kind, after)
            for state_id in ids:
                if kind == "file":  # never an empty info.json
                    assert (
                        json.loads((after / "runs" / state_id / "info.json").read_bytes())["first_message"] == "first"
                    )
                assert [m.text for m in survivor.load(state_id).messages] == saved  # every acknowledged entry
            assert sorted(i.id for i in survivor.list()) == sorted(ids)
            if isinstance(survivor, SQLiteStore):
                survivor.close()
        finally:
            _unmount(after)
