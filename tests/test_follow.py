"""Following a State that runs in another process through its store (FileStore, SQLiteStore, PostgresStore)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from alpineagents.events import ApprovalNeeded, RunStarted, StopRecorded, events_of_state
from alpineagents.postgres import PostgresStore
from alpineagents.state import State
from alpineagents.store import FileStore, SQLiteStore, Store
from alpineagents.types import Message

CHILD = Path(__file__).parent / "approval_child.py"


def _store(kind: str, where: str) -> Store:
    if kind == "file":
        return FileStore(where)
    if kind == "sqlite":
        return SQLiteStore(os.path.join(where, "states.db"))
    dsn, schema = where.split("|")
    return PostgresStore(dsn, schema=schema)


def _follow_a_run_in_another_process(kind: str, where: str, tmp_path: Path) -> None:
    store = _store(kind, where)
    store.save(State(id="other", messages=[Message.user("made before the run")]))  # the store exists
    got: list[Any] = []
    follower = threading.Thread(target=lambda: got.extend(store.follow("job1", after=-1, poll=0.05, idle=3)))
    follower.start()
    env = {**os.environ, "SENT": str(tmp_path / "sent.txt")}
    done = subprocess.run(
        [sys.executable, str(CHILD), "start", kind, where, "job1"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    follower.join(60)
    assert not follower.is_alive()
    saved = store.load("job1")
    assert got == list(events_of_state(saved))  # every saved entry, once, in order
    assert isinstance(got[1], RunStarted)
    assert [type(e) for e in got if isinstance(e, ApprovalNeeded)] == [ApprovalNeeded, ApprovalNeeded]
    assert isinstance(got[-1], StopRecorded)
    cut = got[3].position
    later = list(store.follow("job1", after=cut, idle=0))
    assert later == [e for e in got if e.position > cut]


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_follow_a_run_in_another_process(tmp_path: Path, kind: str) -> None:
    _follow_a_run_in_another_process(kind, str(tmp_path), tmp_path)


def test_follow_a_run_in_another_process_with_postgres(tmp_path: Path, postgres: Any, postgres_schema: str) -> None:
    _follow_a_run_in_another_process("postgres", f"{postgres.dsn}|{postgres_schema}", tmp_path)


def test_afollow_and_its_checks(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    env = {**os.environ, "SENT": str(tmp_path / "sent.txt")}
    subprocess.run(
        [sys.executable, str(CHILD), "start", "file", str(tmp_path), "job1"], env=env, check=True, timeout=120
    )

    async def main() -> list[Any]:
        return [event async for event in store.afollow("job1", idle=0)]

    assert asyncio.run(main()) == list(events_of_state(store.load("job1")))
    with pytest.raises(ValueError, match="poll > 0"):
        next(store.follow("job1", poll=0))
    with pytest.raises(ValueError, match="-1 or more"):
        next(store.follow("job1", after=-5))
