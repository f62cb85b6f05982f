"""Following a State that runs in another process through its store (FileStore, SQLiteStore, PostgresStore)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from alpineagents.agent import Agent
from alpineagents.events import LIVE_ONLY, ApprovalNeeded, RunStarted, StopRecorded, ToolCallStarted, events_of_state
from alpineagents.permissions import AllowByDefault, DeferByName
from alpineagents.postgres import PostgresStore
from alpineagents.state import State
from alpineagents.store import FileStore, SQLiteStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message
from helpers.subagents import asking_helper

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


@tool
def slow_add(a: int, b: int) -> int:
    """Add two numbers, slowly (so that a follower reads the store while the run goes on).

    Args:
        a: One.
        b: The other.
    """
    time.sleep(0.15)
    return a + b


def _run_with_subagents(store: Store) -> State:
    """A top Agent whose helper asks an inner helper (which adds), then a helper whose addition waits for approval:
    the run stops, the call is approved, and the run goes on. Returns the finished State."""
    helper = asking_helper(slow_add)
    careful = Agent(
        FakeModel([tool_call("slow_add", a=1, b=1), "Careful: 2."]),
        tools=[slow_add],
        name="careful",
        description="Adds, once a person agrees.",
        reporter=None,
        permissions=[DeferByName(["slow_add"]), AllowByDefault()],
    )
    script = [tool_call("helper", prompt="2 + 2?"), tool_call("careful", prompt="1 + 1?"), "Top: 4 and 2."]
    top = Agent(FakeModel(script), tools=[helper, careful], reporter=None, store=store)
    state = State(id="nested", messages=[Message.user("Ask the helpers")])
    top.run(state)
    (waiting,) = state.awaiting_approval
    assert len(waiting.path) == 2
    state.approve(waiting.call.id, by="ana")
    top.run(state)
    assert state.answer == "Top: 4 and 2."
    return state


def _follow_subagents_in_another_thread(store: Store) -> None:
    got: list[tuple[Any, bool]] = []
    ended = threading.Event()

    def read() -> None:
        for event in store.follow("nested", after=-1, poll=0.02, idle=2):
            got.append((event, ended.is_set()))

    follower = threading.Thread(target=read)
    follower.start()
    state = _run_with_subagents(store)
    ended.set()
    follower.join(60)
    assert not follower.is_alive()  # it ended (idle seconds after the run's last save point)
    events = [event for event, _ in got]
    assert {len(e.path) for e in events} == {1, 2, 3}  # the top State, its helpers, the inner helper
    assert events == list(events_of_state(state))  # no gap, no duplicate, in the replay's order, texts whole
    assert events == list(events_of_state(store.load("nested")))
    assert any(not late for _, late in got)  # some came while the run went on
    assert not any(isinstance(e, LIVE_ONLY) for e in events)
    cut = [e.position for e in events if e.state_id == "nested" and isinstance(e, ToolCallStarted)][0]
    again = list(store.follow("nested", after=cut, idle=0))
    assert again == list(events_of_state(state, after=cut))

    async def main() -> list[Any]:
        return [event async for event in store.afollow("nested", after=cut, idle=0)]

    assert asyncio.run(main()) == again


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_follow_gives_the_subagents_runs_inline_as_a_replay_does(tmp_path: Path, kind: str) -> None:
    _follow_subagents_in_another_thread(_store(kind, str(tmp_path)))


def test_follow_gives_the_subagents_runs_inline_with_postgres(postgres: Any, postgres_schema: str) -> None:
    _follow_subagents_in_another_thread(_store("postgres", f"{postgres.dsn}|{postgres_schema}"))
