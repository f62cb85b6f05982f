"""Stores: the Store role, save/load, StateInfo, and the three stores that ship (FileStore, SQLiteStore, PostgresStore).

The checks that apply to any store run once per kind of store (the `store` fixture, over `KINDS` of
`store_kinds.py`); a new store joins them by adding one `StoreKind` to `KINDS`. Checks of one store's own layout or failure modes name it.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import gc
import json
import os
import select
import sqlite3
import stat
import threading
import time
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pydantic
import pytest

import alpineagents
import alpineagents.errors
import alpineagents.store as store_module
from alpineagents import _serial
from alpineagents._async import ASYNC_RUN
from alpineagents.agent import Agent
from alpineagents.errors import ResumeWarning
from alpineagents.state import STOPPED_WAITING, UNSAVED_RESULT, State
from alpineagents.store import FileStore, Record, StateInfo, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import (
    ErrorEntry,
    Image,
    Message,
    Reply,
    StoppedByFinish,
    StoppedByLimit,
    StoppedByPermission,
    StoppedByUntil,
    TextBlock,
    ToolCall,
    ToolOutcomeKind,
    ToolResultBlock,
    ToolResultEntry,
    Usage,
)
from conftest import slowness, timed
from helpers.store_kinds import KINDS, LOCAL_KINDS, StoreKind, check_contract

SQLiteStore = store_module.SQLiteStore
PNG = b"\x89PNG\r\n\x1a\n" + bytes(100)


# ---------------------------------------------------------------------------------------------------------------
# Helpers


class MemoryStore(Store):
    """The minimal store the Store contract describes (a dict of Records), that records every write as (state_id, [seq...], create)."""

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}
        self.writes: list[tuple[str, list[int], bool]] = []

    def write(self, state_id: str, entries: Sequence[dict[str, Any]], info: Any, *, create: bool = False) -> None:
        self.writes.append((state_id, [e["seq"] for e in entries], create))
        record = self.records.get(state_id)
        if create:
            if record is not None:
                raise ValueError(f"a State with id {state_id!r} is already saved")
            record = Record([], {})
        elif record is None:
            raise LookupError(f"no saved State with id {state_id!r}")
        have = len(record.entries)
        self.records[state_id] = Record(record.entries + [e for e in entries if e["seq"] >= have], dict(info))

    def read(self, state_id: str) -> Record | None:
        return self.records.get(state_id)


class AsyncMemoryStore(Store):
    """The same, reached only asynchronously."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.reads = 0

    async def awrite(
        self, state_id: str, entries: Sequence[dict[str, Any]], info: Any, *, create: bool = False
    ) -> None:
        self.inner.write(state_id, entries, info, create=create)

    async def aread(self, state_id: str) -> Record | None:
        self.reads += 1
        return self.inner.read(state_id)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def make_agent(replies: list[Any], store: Store | None = None, tools: Sequence[Any] = (add,), **kw: Any):
    fake = FakeModel(replies)
    return Agent(fake, tools=list(tools), store=store, reporter=None, human=None, **kw), fake


@pytest.fixture(params=KINDS, ids=[kind.name for kind in KINDS])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return request.param.make(request, tmp_path)


@pytest.fixture(params=LOCAL_KINDS, ids=[kind.name for kind in LOCAL_KINDS])
def local_store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """A store that keeps its data in files this process writes."""
    return request.param.make(request, tmp_path)


def test_every_store_passes_the_store_contract(store: Store) -> None:
    check_contract(store, reopen)


def kind_of(store: Store) -> StoreKind:
    return next(kind for kind in KINDS if isinstance(store, kind.store_type))


def reopen(store: Store) -> Store:
    """Another store object for the same storage."""
    return kind_of(store).reopen(store)


def raw_info(store: Store, state_id: str) -> Any:
    return json.loads(kind_of(store).raw_info(store, state_id))


def set_info(store: Store, state_id: str, info: Any) -> None:
    kind_of(store).set_info(store, state_id, info if isinstance(info, str) else json.dumps(info))


def raw_lines(store: Store, state_id: str) -> list[str]:
    return kind_of(store).raw_lines(store, state_id)


def set_lines(store: Store, state_id: str, lines: list[str]) -> None:
    kind_of(store).set_lines(store, state_id, lines)


def copy_state(store: Store, state_id: str, target: Path) -> Store:
    """A copy of the store's data as it is right now (what a crash at this moment leaves)."""
    return kind_of(store).copy(store, state_id, target)


def texts(state: State) -> list[str]:
    return [m.text for m in state.messages]


def run_sum(store: Store, state_id: str = "sum", **extra: Any) -> tuple[State, FakeModel]:
    state = State(id=state_id, messages=[Message.user("What is 1+2?")], **extra)
    agent, fake = make_agent([tool_call("add", a=1, b=2), "It is 3"], store)
    agent.run(state)
    return state, fake


def assert_same(loaded: State, state: State) -> None:
    assert loaded.id == state.id
    assert loaded.history == state.history
    assert [e.at for e in loaded.history] == [e.at for e in state.history]
    assert loaded.snapshot() == state.snapshot()
    assert (loaded.created_at, loaded.updated_at) == (state.created_at, state.updated_at)


# ---------------------------------------------------------------------------------------------------------------
# Checks of 06


def test_the_store_module_exports_its_four_names() -> None:
    assert store_module.__all__ == ["Store", "FileStore", "Record", "StateInfo"]
    assert alpineagents.FileStore is store_module.FileStore
    assert hasattr(alpineagents, "Record") is False
    assert _serial.VERSION == 5 and _serial.MIN_VERSION == 4
    assert store_module.SQLiteStore.__name__ == "SQLiteStore"


def test_a_run_saved_then_loaded_is_the_same_state(store: Store) -> None:
    state, _ = run_sum(store, extra_data={"seen": ["x", {"n": 1}]})
    loaded = reopen(store).load("sum")
    assert_same(loaded, state)
    assert loaded.turn == 2
    assert loaded.usage == state.usage
    assert loaded.answer == "It is 3"
    assert loaded.stopped == StoppedByUntil("waiting_for_user")
    assert loaded.extra_data == {"seen": ["x", {"n": 1}]}
    assert loaded.pending_calls == ()
    assert type(loaded) is State


def test_every_kind_of_entry_survives_save_and_load(store: Store) -> None:
    state = State(id="rich", messages=[Message.user("Look at this", Image(PNG))])
    state.add_message(Message.notice("a note"))
    with state.edit_extra_data() as data:
        data["a"] = [1]
    with state.edit_extra_data() as data:
        del data["a"]
        data["b"] = {"x": 1}
    agent, _ = make_agent([tool_call("add", a=1, b=2), "It is 3", '{"k": 1}', "The summary"], store)
    agent.run(state)
    before = state.snapshot()
    state.clear_tool_results(keep_last=0)
    assert agent.ask(state, "Give JSON", returns=dict) == {"k": 1}
    agent.compact(state)
    state.restore(before)
    state.finish({"summary": "done"})
    store.save(state)
    loaded = store.load("rich")
    assert_same(loaded, state)
    assert State(history=loaded.history).snapshot() == loaded.snapshot()
    assert loaded.finished and loaded.answer == {"summary": "done"}


def test_a_state_with_no_history_is_saved_and_listed(store: Store) -> None:
    store.save(State(id="empty"))
    loaded = store.load("empty")
    assert loaded.history == ()
    assert loaded.snapshot() == State().snapshot()
    (info,) = store.list()
    assert info.first_message is None
    assert info.created_at is None and info.updated_at is None
    assert info.turn == 0 and info.stopped is None and info.finished is False


def test_save_writes_only_the_new_entries() -> None:
    store = MemoryStore()
    state = State(id="s", messages=[Message.user("hi")])
    store.save(state)
    assert store.writes == [("s", [0], True)]
    store.save(state)
    assert len(store.writes) == 1
    state.add_message(Message.user("more"))
    with state.edit_extra_data() as data:
        data["k"] = 1
    store.save(state)
    assert store.writes[-1] == ("s", [1, 2], False)


def test_entries_of_a_failed_write_are_sent_again() -> None:
    class Flaky(MemoryStore):
        fail = True

        def write(self, state_id: str, entries: Sequence[dict[str, Any]], info: Any, *, create: bool = False) -> None:
            if self.fail:
                self.fail = False
                raise OSError("disk full")
            super().write(state_id, entries, info, create=create)

    store = Flaky()
    state = State(id="r", messages=[Message.user("hi")])
    with pytest.raises(OSError):
        store.save(state)
    state.add_message(Message.user("again"))
    store.save(state)
    assert store.writes == [("r", [0, 1], True)]
    assert len(store.load("r").history) == 2


def test_save_refuses_what_is_not_a_state() -> None:
    with pytest.raises(TypeError, match="takes a State") as info:
        MemoryStore().save("not a state")  # type: ignore[arg-type]
    assert str(info.value).startswith("save() takes a State (got: 'not a state')")

    async def main() -> None:
        with pytest.raises(TypeError, match=r"^asave\(\) takes a State"):
            await MemoryStore().asave(3)  # type: ignore[arg-type]

    asyncio.run(main())


def test_a_store_must_implement_write_and_read_and_may_omit_list_and_delete() -> None:
    class Nothing(Store):
        pass

    with pytest.raises(TypeError, match="neither write nor awrite") as info:
        Nothing()
    assert str(info.value).startswith("Nothing implements neither write nor awrite\nFix: ")
    with pytest.raises(TypeError, match="^Store implements neither write nor awrite"):
        Store()

    class WriteOnly(Store):
        def write(self, state_id: str, entries: Any, info: Any, *, create: bool = False) -> None:
            pass

    with pytest.raises(TypeError, match="^WriteOnly implements neither read nor aread"):
        WriteOnly()

    class Listless(MemoryStore):
        list = Store.list

    s = Listless()
    with pytest.raises(NotImplementedError, match="^Listless does not implement list$"):
        s.list()
    with pytest.raises(NotImplementedError, match="^Listless does not implement delete$"):
        s.delete("x")

    async def main() -> None:
        with pytest.raises(NotImplementedError, match="does not implement list"):
            await s.alist()
        with pytest.raises(NotImplementedError, match="does not implement delete"):
            await s.adelete("x")

    asyncio.run(main())


def test_an_async_only_store_works_only_asynchronously() -> None:
    store = AsyncMemoryStore()
    state = State(id="a", messages=[Message.user("hi")])

    async def save_and_load() -> State:
        await store.asave(state)
        return await store.aload("a")

    assert asyncio.run(save_and_load()).snapshot() == state.snapshot()
    with pytest.raises(TypeError, match="only asynchronously") as info:
        store.save(State(id="other", messages=[Message.user("x")]))
    assert str(info.value).startswith("AsyncMemoryStore works only asynchronously (it implements awrite, not write)")
    with pytest.raises(TypeError, match=r"\(it implements aread, not read\)"):
        store.load("a")
    agent, fake = make_agent(["hello"], AsyncMemoryStore())
    with pytest.raises(TypeError, match="only asynchronously"):
        agent.run("Go")
    assert fake.requests == []
    store2 = AsyncMemoryStore()
    agent, fake = make_agent([tool_call("add", a=1, b=2), "It is 3"], store2)
    running = State(id="ar", messages=[Message.user("Sum")])
    asyncio.run(agent.arun(running))

    async def reload() -> State:
        return await store2.aload("ar")

    assert_same(asyncio.run(reload()), running)


def test_a_sync_store_under_arun_writes_off_the_event_loop_thread(tmp_path: Path) -> None:
    threads: list[int] = []

    class Watched(FileStore):
        def write(self, state_id: str, entries: Any, info: Any, *, create: bool = False) -> None:
            threads.append(threading.get_ident())
            super().write(state_id, entries, info, create=create)

    store = Watched(tmp_path)
    agent, _ = make_agent([tool_call("add", a=1, b=2), "It is 3"], store)
    state = State(id="t", messages=[Message.user("Sum")])

    async def main() -> int:
        await agent.arun(state)
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert threads and loop_thread not in threads
    assert store.load("t").snapshot() == state.snapshot()


def test_a_sync_save_inside_an_async_run_is_refused(store: Store) -> None:
    async def main() -> None:
        ASYNC_RUN.set(asyncio.get_running_loop())
        with pytest.raises(TypeError, match="asave") as info:
            store.save(State())
        assert str(info.value).startswith(
            "store.save() was called inside an async run, where it would block the event loop"
        )
        await store.asave(State(id="ok"))

    asyncio.run(main())
    assert store.load("ok").history == ()

    async def notebook() -> None:  # a loop without an async run: save works
        store.save(State(id="nb"))

    asyncio.run(notebook())


def test_the_info_has_exactly_the_eight_keys() -> None:
    store = MemoryStore()
    agent, _ = make_agent([tool_call("add", a=1, b=2), "It is 3"], store)
    agent.run(State(id="c", messages=[Message.user("Sum")]))
    info = store.records["c"].info
    assert list(info) == [
        "v",
        "first_message",
        "created_at",
        "updated_at",
        "turn",
        "stopped",
        "finished",
        "parent_id",
    ]
    assert info["v"] == 5
    assert json.loads(json.dumps(info)) == info
    assert info["first_message"] == "Sum" and info["turn"] == 2
    assert info["stopped"] == {"kind": "until", "name": "waiting_for_user"}
    assert info["parent_id"] is None


def test_the_info_follows_finish() -> None:
    infos: list[dict[str, Any]] = []

    class Spy(MemoryStore):
        def write(self, state_id: str, entries: Any, info: Any, *, create: bool = False) -> None:
            infos.append(dict(info))
            super().write(state_id, entries, info, create=create)

    store = Spy()
    state = State(id="f", messages=[Message.user("hi")])
    store.save(state)
    state.finish("done")
    store.save(state)
    assert [i["finished"] for i in infos] == [False, True]
    assert infos[1]["stopped"] == {"kind": "finish", "answer": "done"}


def test_list_shows_the_full_first_message_and_the_stop(store: Store) -> None:
    state = State(id="multi", messages=[Message.user("First\nwith a second line")])
    store.save(state)
    fin = State(id="fin", messages=[Message.user("x")])
    fin.finish({"x": 1})
    store.save(fin)
    infos = {i.id: i for i in store.list()}
    assert infos["multi"].first_message == "First\nwith a second line"
    assert infos["fin"].finished is True
    assert infos["fin"].stopped == StoppedByFinish(answer={"x": 1})
    loaded = store.load("fin")
    assert (infos["fin"].created_at, infos["fin"].updated_at) == (loaded.created_at, loaded.updated_at)
    assert hasattr(infos["fin"], "task") is False


def test_first_message_is_the_first_user_text() -> None:
    store = MemoryStore()
    store.save(State(id="a", messages=[Message.user("imported first"), Message.assistant("ok")]))
    store.save(State(id="b", messages=[Message.user("", Image(PNG))]))
    later = State(id="c")
    later.add_message(Message.user("starts here"))
    store.save(later)
    assert [store.records[i].info["first_message"] for i in "abc"] == ["imported first", None, "starts here"]


def test_state_info_from_info_checks_version_and_keys() -> None:
    store = MemoryStore()
    store.save(State(id="x", messages=[Message.user("hi")]))
    info = store.records["x"].info
    assert StateInfo.from_info("x", info).first_message == "hi"
    with pytest.raises(ValueError, match="newer alpineagents"):
        StateInfo.from_info("x", {**info, "v": 6})
    with pytest.raises(ValueError, match="damaged: its info has no turn, finished"):
        StateInfo.from_info("x", {k: v for k, v in info.items() if k not in ("turn", "finished")})
    without_parent = {k: v for k, v in info.items() if k != "parent_id"}
    with pytest.raises(ValueError, match="no parent_id"):
        StateInfo.from_info("x", without_parent)
    assert StateInfo.from_info("x", {**without_parent, "v": 4}).parent_id is None
    v4 = {**without_parent, "v": 4, "stopped": {"kind": "limit", "turns": 3}}
    assert StateInfo.from_info("x", v4).stopped == StoppedByLimit(3)
    plain_info = StateInfo(
        id="x", first_message=None, created_at=None, updated_at=None, turn=0, stopped=None, finished=False
    )
    assert plain_info.parent_id is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        plain_info.turn = 3  # type: ignore[misc]


def test_a_new_state_with_a_saved_id_is_refused_before_the_model_is_called(store: Store) -> None:
    run_sum(store, "dup")
    second = State(id="dup", messages=[Message.user("another task")])
    agent, fake = make_agent(["never"], store)
    with pytest.raises(ValueError, match="already saved") as info:
        agent.run(second)
    assert "store.load" in str(info.value)
    assert fake.requests == []
    assert store.load("dup").messages[0].text == "What is 1+2?"


def test_a_state_is_saved_in_one_store_only(tmp_path: Path) -> None:
    state = State(id="bound", messages=[Message.user("hi")])
    FileStore(tmp_path / "a").save(state)
    with pytest.raises(ValueError, match="saved in another store"):
        FileStore(tmp_path / "b").save(state)
    agent, fake = make_agent(["x"], FileStore(tmp_path / "b"))
    with pytest.raises(ValueError, match="saved in another store"):
        agent.run(state)
    assert fake.requests == []
    assert FileStore(tmp_path) == FileStore(str(tmp_path) + "/.")
    assert hash(FileStore(tmp_path)) == hash(FileStore(str(tmp_path) + "/."))
    assert FileStore(tmp_path) != FileStore(tmp_path / "a")
    assert FileStore(tmp_path).__eq__(3) is NotImplemented
    loaded = FileStore(tmp_path / "a").load("bound")
    loaded.add_message(Message.user("more"))
    FileStore(str(tmp_path / "a") + "/.").save(loaded)
    assert len(FileStore(tmp_path / "a").load("bound").history) == 2
    assert repr(FileStore(".agent-runs")) == "FileStore('.agent-runs')"
    assert repr(SQLiteStore("runs.db")) == "SQLiteStore('runs.db')"
    assert SQLiteStore(tmp_path / "x.db") == SQLiteStore(str(tmp_path) + "/./x.db")


def test_older_and_newer_formats_are_refused_with_their_version(store: Store) -> None:
    store.save(State(id="old", messages=[Message.user("hi")]))
    store.save(State(id="new", messages=[Message.user("hi")]))
    info = raw_info(store, "old")
    set_info(store, "old", {**info, "v": 3})
    with pytest.raises(ValueError) as error:
        store.load("old")
    lines = str(error.value).splitlines()
    assert lines[0] == "saved State 'old' was saved by an older alpineagents (format 3, 0.4.x); 0.5 cannot load it"
    assert lines[1].startswith("Fix:")
    set_info(store, "old", {**info, "v": 2})
    with pytest.raises(ValueError, match=r"^saved State 'old' was saved by an older alpineagents \(format 2\); 0.5"):
        store.load("old")
    for v in (6, 99):
        set_info(store, "new", {**info, "v": v})
        with pytest.raises(ValueError) as error:
            store.load("new")
        assert str(error.value).splitlines()[0] == (
            f"saved State 'new' was saved by a newer alpineagents (format {v}); this alpineagents reads formats 4 to 5"
        )
        assert "upgrade alpineagents" in str(error.value)
    set_info(store, "new", {k: v for k, v in info.items() if k != "v"})
    with pytest.raises(ValueError, match="no format version"):
        store.load("new")


def test_the_version_is_checked_before_any_entry() -> None:
    store = MemoryStore()
    store.records["m"] = Record([{"seq": 0, "kind": "something_new"}], {"v": 3})
    with pytest.raises(ValueError, match="older alpineagents"):
        store.load("m")
    store.records["n"] = Record([], {"v": 6})
    with pytest.raises(ValueError, match="newer alpineagents"):
        asyncio.run(store.aload("n"))
    store.records["o"] = Record([], [1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^saved State 'o' is damaged: its info is not a dict$"):
        store.load("o")


def test_a_0_4_folder_is_refused_and_not_listed(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.save(State(id="real", messages=[Message.user("hi")]))
    old = tmp_path / "old"
    old.mkdir()
    (old / "log.jsonl").write_text("")
    (old / "snapshot.json").write_text(json.dumps({"v": 3, "messages": []}))
    with pytest.raises(ValueError, match=r"format 3, 0.4.x"):
        store.load("old")
    (tmp_path / ".new-staging").mkdir()
    (tmp_path / "notes.txt").write_text("hello")
    assert [i.id for i in store.list()] == ["real"]


def test_a_missing_or_unreadable_info_is_damaged(store: Store, tmp_path: Path) -> None:
    store.save(State(id="x", messages=[Message.user("hi")]))
    if isinstance(store, FileStore):
        (tmp_path / "runs" / "x" / "info.json").unlink()  # a file store's info can go missing on its own
    else:
        set_info(store, "x", "not json {")
    with pytest.raises(ValueError, match="damaged"):
        store.load("x")


def test_entries_with_a_gap_or_that_cannot_follow_are_damaged(store: Store) -> None:
    state = State(id="gap", messages=[Message.user("hi")])
    state.add_message(Message.user("b"))
    state.add_message(Message.user("c"))
    store.save(state)
    lines = raw_lines(store, "gap")
    set_lines(store, "gap", [lines[0], lines[2]])
    with pytest.raises(ValueError, match="history entry 1 has seq 2"):
        store.load("gap")
    state = State(id="bad")
    state.add_message(Message.user("hi"))
    store.save(state)
    reply = {
        "seq": 0,
        "kind": "model_reply",
        "turn": 1,
        "at": "2026-01-01T09:00:00+00:00",
        "content": {
            "message": {"role": "assistant", "content": [], "tokens": None},
            "usage": {"requests": 1},
            "context_tokens": None,
            "stop_reason": None,
            "model": None,
        },
    }
    set_lines(store, "bad", [json.dumps(reply)])
    with pytest.raises(ValueError, match="saved State 'bad' is damaged") as error:
        store.load("bad")
    assert "Fix: restore the store's data from a backup" in str(error.value)
    with pytest.raises(LookupError, match="no saved State") as missing:
        store.load("nope")
    assert str(missing.value) == f"no saved State with id 'nope' in {store!r}"


def test_a_state_saved_while_waiting_for_the_model_is_closed_on_load(store: Store) -> None:
    state = State(id="w", messages=[Message.user("Find the bug")])
    state._begin_think("fake/fake")  # pyright: ignore[reportPrivateUsage]
    store.save(state)
    loaded = store.load("w")
    assert loaded.turn == 0
    assert texts(loaded) == ["Find the bug"]
    assert len(loaded.history) == 3
    last = loaded.history[-1]
    assert isinstance(last, ErrorEntry) and last.content == STOPPED_WAITING and last.error is None
    assert len(raw_lines(store, "w")) == 2
    held = State(id="w2", messages=[Message.user("Find the bug")])
    held._begin_think("fake/fake")  # pyright: ignore[reportPrivateUsage]
    held.add_message(Message.user("hurry"))
    store.save(held)
    assert texts(store.load("w2")) == ["Find the bug", "hurry"]


def pending_state(state_id: str, *calls: ToolCall) -> State:
    state = State(id=state_id, messages=[Message.user("go")])
    state._begin_think("fake/fake")  # pyright: ignore[reportPrivateUsage]
    state._record_reply(Reply(Message("assistant", calls), Usage(requests=1)))  # pyright: ignore[reportPrivateUsage]
    return state


def test_pending_calls_are_closed_with_the_unknown_result_on_load(store: Store) -> None:
    c1, c2 = ToolCall("add", {"a": 1, "b": 2}, "c1"), ToolCall("add", {"a": 3, "b": 4}, "c2")
    store.save(pending_state("p", c1, c2))
    loaded = store.load("p")
    closing = loaded.history[-2:]
    for entry, call in zip(closing, (c1, c2), strict=True):
        assert isinstance(entry, ToolResultEntry)
        assert entry.call == call and entry.content == UNSAVED_RESULT
        assert entry.outcome is ToolOutcomeKind.ABORTED and entry.is_error
    last = loaded.messages[-1]
    assert [b.call_id for b in last.content if isinstance(b, ToolResultBlock)] == ["c1", "c2"]
    assert loaded.pending_calls == ()


def test_closing_entries_are_written_by_the_next_save() -> None:
    store = MemoryStore()
    store.save(pending_state("n", ToolCall("add", {"a": 1, "b": 2}, "c1")))
    assert len(store.records["n"].entries) == 3
    loaded = store.load("n")
    store.save(loaded)
    assert store.writes[-1] == ("n", [3], False)
    again = store.load("n")
    assert again.history == loaded.history and again.snapshot() == loaded.snapshot()
    writes = len(store.writes)
    store.save(again)
    assert len(store.writes) == writes
    waiting = State(id="wt", messages=[Message.user("Find the bug")])
    waiting._begin_think("fake/fake")  # pyright: ignore[reportPrivateUsage]
    store.save(waiting)
    resumed = store.load("wt")
    agent, fake = make_agent(["Found it"], store)
    agent.run(resumed)
    assert [m.text for m in fake.requests[0].messages] == ["Find the bug"]
    assert_same(store.load("wt"), resumed)


def test_a_copy_taken_inside_a_running_tool_loads_with_the_call_closed(store: Store, tmp_path: Path) -> None:
    copies: list[Store] = []

    @tool
    def snap(x: int) -> str:
        """Copy the store while running."""
        copies.append(copy_state(store, "crash", tmp_path / "copy"))
        return "snapped"

    agent, _ = make_agent([tool_call("snap", x=1), "done"], store, tools=[snap])
    state = State(id="crash", messages=[Message.user("go")])
    agent.run(state)
    loaded = copies[0].load("crash")
    result = loaded.history[-1]
    assert isinstance(result, ToolResultEntry)
    assert result.content == UNSAVED_RESULT and result.outcome is ToolOutcomeKind.ABORTED
    assert [m.role for m in loaded.messages] == ["user", "assistant", "user"]
    agent2, fake2 = make_agent(["I will check"], copies[0], tools=[snap])
    agent2.run(loaded)
    sent = fake2.requests[0].messages[-1].content[0]
    assert isinstance(sent, ToolResultBlock) and sent.content == UNSAVED_RESULT
    assert_same(copies[0].load("crash"), loaded)


def test_a_copy_taken_inside_a_slow_parallel_tool_keeps_the_fast_result(store: Store, tmp_path: Path) -> None:
    copies: list[Store] = []

    @tool
    def fast() -> str:
        """Fast."""
        return "fast result"

    @tool
    def slow() -> str:
        """Slow: waits until the other call's output is saved, then copies the store."""
        deadline = time.monotonic() + 10
        while not any(json.loads(line).get("content") == "fast result" for line in raw_lines(store, "par")):
            assert time.monotonic() < deadline
            time.sleep(0.005)
        copies.append(copy_state(store, "par", tmp_path / "copy"))
        return "slow result"

    agent, _ = make_agent([[tool_call("slow"), tool_call("fast")], "done"], store, tools=[fast, slow])
    agent.run(State(id="par", messages=[Message.user("go")]))
    loaded = copies[0].load("par")
    block_texts = {b.name: b.content for b in loaded.messages[-1].content if isinstance(b, ToolResultBlock)}
    assert block_texts == {"fast": "fast result", "slow": UNSAVED_RESULT}
    assert [b.name for b in loaded.messages[-1].content if isinstance(b, ToolResultBlock)] == ["slow", "fast"]


def test_entries_written_without_their_info_still_load(tmp_path: Path) -> None:
    class Half(FileStore):
        fail = False

        def write(self, state_id: str, entries: Sequence[dict[str, Any]], info: Any, *, create: bool = False) -> None:
            if not self.fail:
                return super().write(state_id, entries, info, create=create)
            have = len(self.read(state_id).entries)  # pyright: ignore[reportOptionalMemberAccess]
            log = self._root / state_id / "log.jsonl"
            store_module._write_file(log, store_module._lines([e for e in entries if e["seq"] >= have]), append=True)  # pyright: ignore[reportPrivateUsage]
            raise OSError("failed before the info")

    store = Half(tmp_path)
    state = State(id="h", messages=[Message.user("hi")])
    store.save(state)
    turn_before = store.list()[0].turn
    store.fail = True
    agent, _ = make_agent([tool_call("add", a=1, b=2), "It is 3"], store)
    with pytest.raises(OSError):
        agent.run(state)
    loaded = FileStore(tmp_path).load("h")
    assert loaded.history == state.history and loaded.snapshot() == state.snapshot()
    assert FileStore(tmp_path).list()[0].turn == turn_before


def test_sqlite_a_failed_transaction_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStore(tmp_path / "r.db")
    state = State(id="h", messages=[Message.user("hi")])
    store.save(state)
    real = SQLiteStore._write_one  # pyright: ignore

    def failing(self: Any, conn: Any, *args: Any, **kwargs: Any) -> None:
        real(self, conn, *args, **kwargs)  # the job's rows are written, then the transaction fails
        raise OSError("failed at the end of the transaction")

    monkeypatch.setattr(SQLiteStore, "_write_one", failing)
    state.add_message(Message.user("more"))
    with pytest.raises(OSError):
        store.save(state)
    monkeypatch.undo()
    assert len(SQLiteStore(tmp_path / "r.db").load("h").history) == 1
    store.save(state)
    assert_same(SQLiteStore(tmp_path / "r.db").load("h"), state)


def test_a_torn_last_line_is_ignored_then_cut_off(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    state, _ = run_sum(store, "torn")
    log = tmp_path / "torn" / "log.jsonl"
    with open(log, "a") as f:
        f.write('{"seq": 99, "kind": "us')
    fresh = FileStore(tmp_path)
    loaded = fresh.load("torn")
    assert_same(loaded, state)
    loaded.add_message(Message.user("And 2+2?"))
    agent, _ = make_agent(["It is 4"], fresh)
    agent.run(loaded)
    for line in log.read_text().split("\n")[:-1]:
        json.loads(line)
    assert log.read_text().endswith("\n")
    assert FileStore(tmp_path).load("torn").answer == "It is 4"


def test_unusual_characters_survive_save_and_load(store: Store) -> None:
    odd = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg"
    state = State(id="odd", messages=[Message.user(odd)], extra_data={"k": odd})
    store.save(state)
    state.add_message(Message.user("안녕하세요"))
    reopen(store).save(state)
    surrogate = State(id="sur", messages=[Message.user("bad \udcff name")])
    store.save(surrogate)
    surrogate.add_message(Message.user("again \udcff"))
    reopen(store).save(surrogate)
    loaded = reopen(store).load("odd")
    assert_same(loaded, state)
    assert loaded.extra_data["k"] == odd
    assert_same(reopen(store).load("sur"), surrogate)
    if isinstance(store, FileStore):
        assert "안녕하세요" in (store._root / "odd" / "log.jsonl").read_bytes().decode("utf-8")  # pyright: ignore


def test_file_store_layout_is_a_folder_with_info_and_log(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    run_sum(store, "lay")
    assert os.listdir(tmp_path) == ["lay"]
    assert sorted(os.listdir(tmp_path / "lay")) == ["info.json", "log.jsonl"]
    lines = [json.loads(line) for line in (tmp_path / "lay" / "log.jsonl").read_text().split("\n")[:-1]]
    state = store.load("lay")
    for index, line in enumerate(lines):
        assert list(line)[:5] == ["seq", "kind", "turn", "at", "content"]
        assert line["seq"] == index and "v" not in line
    assert [line["kind"] for line in lines] == [e.kind for e in state.history]
    info = json.loads((tmp_path / "lay" / "info.json").read_text())
    assert info["v"] == 5
    assert store.read("lay") == Record(lines, info)
    assert not (tmp_path / "lay" / "info.json").read_text().endswith("\n")
    assert stat.S_IMODE(os.stat(tmp_path / "lay").st_mode) == 0o700


def test_file_store_files_are_private_to_their_owner(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    run_sum(store, "m")
    for name in ("log.jsonl", "info.json"):
        assert stat.S_IMODE(os.stat(tmp_path / "m" / name).st_mode) == 0o600


def test_file_store_saves_append_to_the_log(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    state = State(id="two", messages=[Message.user("hi")])
    store.save(state)
    first = (tmp_path / "two" / "log.jsonl").read_text()
    state.add_message(Message.user("more"))
    state.finish()
    store.save(state)
    second = (tmp_path / "two" / "log.jsonl").read_text()
    assert second.startswith(first) and second.count("\n") == 3
    assert json.loads((tmp_path / "two" / "info.json").read_text())["finished"] is True
    assert not any(name.startswith(".") for name in os.listdir(tmp_path / "two"))


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_replaced_infos_leave_no_name_and_no_open_file_behind(tmp_path: Path) -> None:
    # The old version of a replaced info loses its name at once; the descriptor that keeps its blocks until a
    # background thread frees them is closed soon after, also when more saves come than may wait.
    store = FileStore(tmp_path)
    state = State(id="many", messages=[Message.user("0")])
    store.save(state)
    before = _open_descriptors()
    for n in range(1, 400):
        state.add_message(Message.user(str(n)))
        store.save(state)
        assert sorted(os.listdir(tmp_path / "many")) == ["info.json", "log.jsonl"]
    deadline = time.monotonic() + 20
    while _open_descriptors() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _open_descriptors() <= before
    assert texts(store.load("many")) == [str(n) for n in range(400)]


def _delalloc(path: Path) -> bool | None:
    """Whether a file has data whose blocks the file system has not allocated yet (delayed allocation, reported by
    the `FS_IOC_FIEMAP` ioctl without asking it to flush first); None where the file system cannot tell."""
    import fcntl
    import struct

    header, extent = "=QQIIII", "=QQQQQI12x"  # struct fiemap, struct fiemap_extent
    room = 8
    request = bytearray(struct.pack(header, 0, 2**64 - 1, 0, 0, room, 0) + bytes(struct.calcsize(extent) * room))
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, 0xC020660B, request, True)  # FS_IOC_FIEMAP
    except OSError:
        return None
    finally:
        os.close(fd)
    mapped = struct.unpack_from(header, request)[3]
    flags = [
        struct.unpack_from(extent, request, struct.calcsize(header) + i * struct.calcsize(extent))[5]
        for i in range(mapped)
    ]
    return any(flag & 0x4 for flag in flags)  # FIEMAP_EXTENT_DELALLOC


def test_a_replaced_info_is_allocated_before_its_rename_so_a_power_loss_cannot_leave_it_empty(
    tmp_path: Path,
) -> None:
    # The info is not flushed on its own. Its blocks are allocated before it gets its name (a new State's first
    # info too), so that ext4 commits the name only after the data: after a power loss info.json is the old or the
    # new one. A name that reached the disk before the data would leave an empty info.json, which no load can read.
    probe = tmp_path / "probe"
    probe.write_bytes(b"x")
    if not _delalloc(probe):
        pytest.skip("this file system does not delay allocation, or cannot tell (not ext4 with delalloc)")
    store = FileStore(tmp_path / "runs")
    state = State(id="a", messages=[Message.user("0")])
    store.save(state)
    assert _delalloc(tmp_path / "runs" / "a" / "info.json") is False
    for n in range(1, 4):
        state.add_message(Message.user(str(n)))
        store.save(state)
        assert _delalloc(tmp_path / "runs" / "a" / "info.json") is False


_TOPDIR = 0x00020000  # FS_TOPDIR_FL, what `chattr +T` sets


def _flags(path: Path, add: int = 0) -> int | None:
    """The file attributes of a folder (what `lsattr -d` shows), after adding `add`; None where the file
    system has none or refuses the change."""
    import array
    import fcntl

    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        flags = array.array("i", [0])
        fcntl.ioctl(fd, 0x80086601, flags, True)  # FS_IOC_GETFLAGS
        if add:
            flags[0] |= add
            fcntl.ioctl(fd, 0x40086602, flags, True)  # FS_IOC_SETFLAGS
            fcntl.ioctl(fd, 0x80086601, flags, True)
        return flags[0]
    except OSError:
        return None
    finally:
        os.close(fd)


def test_a_root_the_store_creates_spreads_its_folders_and_a_given_root_is_left_alone(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    probe.mkdir()
    probed = _flags(probe, add=_TOPDIR)
    if probed is None or not probed & _TOPDIR:
        pytest.skip("this file system does not take the hint (not ext4)")
    made = tmp_path / "made" / "runs"
    FileStore(made).save(State(id="a", messages=[Message.user("hi")]))
    assert (_flags(made) or 0) & _TOPDIR
    assert not (_flags(tmp_path / "made") or 0) & _TOPDIR  # only the root: not the parents it made
    given = tmp_path / "given"
    given.mkdir()
    flags = _flags(given)
    FileStore(given).save(State(id="b", messages=[Message.user("hi")]))
    assert _flags(given) == flags
    assert texts(FileStore(made).load("a")) == texts(FileStore(given).load("b")) == ["hi"]


def test_write_refuses_existing_ids_missing_ids_and_gaps(store: Store, tmp_path: Path) -> None:
    state = State(id="x", messages=[Message.user("hi")])
    entries = [_serial.entry_to_dict(state.history[0], 0)]
    info = {"v": 5, **_info_like()}
    store.write("x", entries, info, create=True)
    with pytest.raises(ValueError, match="already saved"):
        store.write("x", [], info, create=True)
    if isinstance(store, FileStore):
        assert os.listdir(tmp_path / "runs") == ["x"]
    with pytest.raises(LookupError, match="no saved State"):
        store.write("ghost", [], info)
    reopen(store).write("x", entries, info)
    assert store.read("x").entries == entries  # pyright: ignore[reportOptionalMemberAccess]
    with pytest.raises(ValueError, match=r"start at seq 3, but .* has 1"):
        store.write("x", [{**entries[0], "seq": 3}], info)
    assert store.read("x").entries == entries  # pyright: ignore[reportOptionalMemberAccess]


def _info_like() -> dict[str, Any]:
    return {
        "first_message": "hi",
        "created_at": None,
        "updated_at": None,
        "turn": 0,
        "stopped": None,
        "finished": False,
        "parent_id": None,
    }


def test_delete_removes_a_state_and_list_is_newest_first(store: Store) -> None:
    state = State(id="gone", messages=[Message.user("hi")])
    store.save(state)
    store.delete("gone")
    state.add_message(Message.user("more"))
    with pytest.raises(LookupError, match="no saved State"):
        store.save(state)
    run_sum(store, "one")
    run_sum(store, "two")
    assert [i.id for i in store.list()] == ["two", "one"]
    store.delete("one")
    store.delete("one")
    assert [i.id for i in store.list()] == ["two"]
    assert asyncio.run(store.alist())[0].id == "two"
    asyncio.run(store.adelete("two"))
    assert store.list() == []


def test_a_store_that_was_never_written_lists_nothing(tmp_path: Path) -> None:
    assert FileStore(tmp_path / "missing").list() == []
    assert SQLiteStore(tmp_path / "missing.db").list() == []
    assert FileStore(tmp_path / "missing").read("x") is None
    assert not (tmp_path / "missing").exists() and not (tmp_path / "missing.db").exists()


def delegate_tool(helper: Agent, child_id: str = "kid1") -> Any:
    @tool
    def delegate(prompt: str) -> str:
        """Hand the task to a helper."""
        return helper.run(State(id=child_id, messages=[Message.user(prompt)]))

    return delegate


def test_subagent_keys_are_written_only_when_set(store: Store) -> None:
    helper, _ = make_agent(["kid answer"], None)
    agent, _ = make_agent([tool_call("delegate", prompt="do it"), "done"], store, tools=[delegate_tool(helper)])
    parent_state = State(id="parent", messages=[Message.user("go")])
    agent.run(parent_state)
    parent = [json.loads(line) for line in raw_lines(store, "parent")]
    (closing,) = [e for e in parent if e["kind"] == "tool_result"]
    assert closing["child_ids"] == ["kid1"] and "usage" in closing
    kid = [json.loads(line) for line in raw_lines(store, "kid1")]
    (run_start,) = [e for e in kid if e["kind"] == "run_start"]
    assert run_start["parent_id"] == "parent" and run_start["parent_call_id"] == closing["call"]["id"]
    for entry in [e for e in parent if e["kind"] != "tool_result"] + [e for e in kid if e["kind"] != "run_start"]:
        assert not {"child_ids", "usage", "parent_id", "parent_call_id"} & set(entry)
    loaded = store.load("parent")
    assert loaded.usage == parent_state.usage  # the child's usage travels in the closing entry
    assert loaded.usage.requests == 3


def test_format_4_loads_and_its_next_save_writes_format_5(store: Store) -> None:
    helper, _ = make_agent(["kid answer"], None)
    agent, _ = make_agent([tool_call("delegate", prompt="do it"), "done"], store, tools=[delegate_tool(helper)])
    state = State(id="p4", messages=[Message.user("go")])
    agent.run(state)
    lines = [json.loads(line) for line in raw_lines(store, "p4")]
    for line in lines:
        for key in ("child_ids", "usage", "parent_id", "parent_call_id"):
            line.pop(key, None)
        if line["kind"] == "model_reply":
            line["content"]["usage"]["input_tokens"] = 10
    set_lines(store, "p4", [json.dumps(line) for line in lines])
    info = raw_info(store, "p4")
    del info["parent_id"]
    set_info(store, "p4", {**info, "v": 4})
    loaded = store.load("p4")
    assert loaded.usage.input_tokens == 20
    assert [i.parent_id for i in store.list() if i.id == "p4"] == [None]
    loaded.add_message(Message.user("more"))
    store.save(loaded)
    assert raw_info(store, "p4")["v"] == 5 and raw_info(store, "p4")["parent_id"] is None
    assert_same(store.load("p4"), loaded)
    bad = dict(lines[0], child_ids="kid1")
    with pytest.raises(ValueError, match="is damaged"):
        _serial.entry_from_dict(
            bad | {"kind": "tool_result", "call": {"name": "a", "args": {}, "id": "c"}, "outcome": "done"}
        )


def test_each_kind_of_stop_survives_save_and_load(store: Store) -> None:
    call = ToolCall("add", {"a": 1, "b": 2}, "c1")
    stops: list[Any] = [StoppedByUntil("waiting_for_user"), StoppedByLimit(3), StoppedByFinish({"x": [1]})]
    for index, stopped in enumerate(stops):
        state = State(id=f"s{index}", messages=[Message.user("hi")])
        state._record_stop(stopped)  # pyright: ignore[reportPrivateUsage]
        store.save(state)
        assert store.load(f"s{index}").stopped == stopped
    state = pending_state("perm", call)
    state._stop_turn(call, "not allowed", "DenyAll()")  # pyright: ignore[reportPrivateUsage]
    store.save(state)
    loaded = store.load("perm")
    assert loaded.stopped == StoppedByPermission(call, "DenyAll()")
    assert [i.stopped for i in store.list() if i.id == "perm"] == [StoppedByPermission(call, "DenyAll()")]
    agent, _ = make_agent(["ok"], store)
    agent.run(loaded)
    assert store.load("perm").stopped == StoppedByUntil("waiting_for_user")


def test_a_replys_stop_reason_is_saved_in_the_reply(store: Store) -> None:
    cut = Reply(Message.assistant("partial answ"), Usage(requests=1), context_tokens=7, stop_reason="max_tokens")
    agent, _ = make_agent([cut], store)
    agent.run(State(id="cut", messages=[Message.user("write")]))
    (reply,) = [json.loads(line) for line in raw_lines(store, "cut") if '"model_reply"' in line]
    assert "stop_reason" not in reply["content"]["message"]
    assert reply["content"]["stop_reason"] == "max_tokens"
    last = store.load("cut").messages[-1]
    assert last.stop_reason == "max_tokens" and last.cut_off


def test_images_survive_save_and_load_as_base64(store: Store) -> None:
    @tool
    def screenshot(url: str) -> Any:
        """Take a screenshot."""
        return (TextBlock("Loaded x.dev"), Image(PNG))

    agent, _ = make_agent([tool_call("screenshot", url="x.dev"), "A blank page"], store, tools=[screenshot])
    state = State(id="img", messages=[Message.user("Look", Image(PNG))])
    agent.run(state)
    assert store.load("img").messages == state.messages
    image = {"type": "image", "media_type": "image/png", "data": base64.b64encode(PNG).decode()}
    assert sum(json.dumps(image, separators=(",", ":")) in line for line in raw_lines(store, "img")) >= 2


@pytest.mark.parametrize("record", ["", "stacks"])
def test_exceptions_are_not_saved_only_their_text(store: Store, record: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the exception's text is saved; its stack (where it was raised, as text) only when ALPINEAGENTS_RECORD
    asks for stacks."""
    monkeypatch.setenv("ALPINEAGENTS_RECORD", record)

    class Secret(RuntimeError):
        token = "sk-very-secret"

    @tool
    def explode() -> str:
        """Fail."""
        raise Secret("boom")

    agent, _ = make_agent([tool_call("explode")], store, tools=[explode])
    with pytest.raises(Secret):
        agent.run(State(id="boom", messages=[Message.user("go")]))
    loaded = store.load("boom")
    assert [e.content for e in loaded.history if isinstance(e, ErrorEntry)] == ["Secret: boom"]
    assert all(e.error is None for e in loaded.history if isinstance(e, (ErrorEntry, ToolResultEntry)))
    everything = "\n".join(raw_lines(store, "boom")) + json.dumps(raw_info(store, "boom"))
    assert "sk-very-secret" not in everything  # the exception's attributes are never saved
    if not record:
        assert "Traceback" not in everything and "traceback" not in everything
        return
    saved = [json.loads(line) for line in raw_lines(store, "boom")]
    stacks = [entry.get("traceback") for entry in saved if entry["kind"] == "error"]
    assert stacks and all(isinstance(stack, str) for stack in stacks)  # where it was raised: text, not the object
    assert everything.count("Traceback (most recent call last)") == len(stacks)
    assert [e.traceback for e in loaded.history if isinstance(e, ErrorEntry)] == stacks


def test_times_are_saved_as_iso_text_in_utc(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import alpineagents.types as types_module

    fixed = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    monkeypatch.setattr(types_module, "_now", lambda: fixed)
    store.save(State(id="t", messages=[Message.user("hi")]))
    assert json.loads(raw_lines(store, "t")[0])["at"] == "2026-01-01T09:00:00+00:00"
    assert store.load("t").history[0].at.tzinfo is UTC


def test_a_value_json_cannot_hold_fails_the_save_and_writes_nothing(store: Store) -> None:
    state = State(id="set", messages=[Message.user("hi")])
    state._begin_think("fake/fake")  # pyright: ignore[reportPrivateUsage]
    state._record_reply(  # pyright: ignore[reportPrivateUsage]
        Reply(Message("assistant", (ToolCall("x", {"s": {1, 2}}, "c"),)), Usage(requests=1))
    )
    with pytest.raises(TypeError) as error:
        store.save(state)
    assert str(error.value).splitlines()[0] == "tool call x args['s'] holds set {1, 2}, which cannot be saved as JSON"
    assert store.list() == []


def test_answers_load_as_plain_frozen_json(store: Store) -> None:
    @dataclasses.dataclass
    class Verdict:
        ok: bool

    class Score(pydantic.BaseModel):
        score: int

    agent, _ = make_agent(['{"ok": true}'], store)
    state = State(id="ans", messages=[Message.user("hi")])
    agent.ask(state, "Is it ok?", returns=Verdict)
    state.finish(Score(score=3))
    store.save(state)
    loaded = store.load("ans")
    exchange = [e for e in loaded.history if e.kind == "ask"][0]
    assert exchange.content.answer == {"ok": True}  # pyright: ignore[reportAttributeAccessIssue]
    assert loaded.answer == {"score": 3}
    assert loaded.stopped == StoppedByFinish(answer={"score": 3})
    with pytest.raises(TypeError):
        loaded.answer["score"] = 4


def test_children_are_opened_from_the_store_the_parent_was_bound_to(store: Store, tmp_path: Path) -> None:
    helper, _ = make_agent(["kid answer"], None)
    agent, _ = make_agent([tool_call("delegate", prompt="do it"), "done"], store, tools=[delegate_tool(helper)])
    parent = State(id="parent", messages=[Message.user("go")])
    agent.run(parent)
    kid = parent.child("kid1")
    loaded = store.load("parent")
    first, second = loaded.child("kid1"), loaded.child("kid1")
    assert first.snapshot() == kid.snapshot() and first is not second
    assert first.parent_id == "parent"
    fork = loaded.fork()
    assert fork.child("kid1").snapshot() == kid.snapshot()
    FileStore(tmp_path / "elsewhere").save(fork)
    assert fork.child("kid1").snapshot() == kid.snapshot()
    own = FileStore(tmp_path / "own")
    helper2, _ = make_agent(["kid answer"], own)
    agent2, _ = make_agent([tool_call("delegate", prompt="x"), "done"], store, tools=[delegate_tool(helper2, "kid2")])
    agent2.run(State(id="parent2", messages=[Message.user("go")]))
    with pytest.raises(LookupError, match="no saved State"):
        store.load("parent2").child("kid2")
    assert [i.id for i in own.list()] == ["kid2"]
    assert "kid2" not in [i.id for i in store.list()]  # a subagent with its own store is listed only there


def test_children_of_an_async_only_store_open_only_with_achild() -> None:
    store = AsyncMemoryStore()
    helper, _ = make_agent(["kid answer"], None)
    agent, _ = make_agent([tool_call("delegate", prompt="do it"), "done"], store, tools=[_async_delegate(helper)])

    async def main() -> None:
        await agent.arun(State(id="parent", messages=[Message.user("go")]))
        loaded = await store.aload("parent")
        with pytest.raises(TypeError, match="only asynchronously"):
            loaded.child("kid1")
        reads = store.reads
        one = await loaded.achild("kid1")
        two = await loaded.achild("kid1")
        assert one.parent_id == "parent" and one is not two and store.reads == reads + 2

    asyncio.run(main())


def _async_delegate(helper: Agent) -> Any:
    @tool
    async def delegate(prompt: str) -> str:
        """Hand the task to a helper."""
        return await helper.arun(State(id="kid1", messages=[Message.user(prompt)]))

    return delegate


def test_subagent_states_are_listed_with_their_parent(store: Store) -> None:
    seen: dict[str, tuple[int, int]] = {}

    @tool
    def peek() -> str:
        """Load the child and the parent from the store."""
        for state_id in ("kid1", "lead"):
            state = store.load(state_id)
            seen[state_id] = (state.turn, sum(e.kind == "model_reply" for e in state.history))
        return "peeked"

    helper, _ = make_agent([tool_call("peek"), "kid answer"], None, tools=[peek])
    agent, _ = make_agent([tool_call("delegate", prompt="do it"), "done"], store, tools=[delegate_tool(helper)])
    agent.run(State(id="lead", messages=[Message.user("go")]))
    parents = {i.id: i.parent_id for i in store.list()}
    assert parents == {"lead": None, "kid1": "lead"}
    assert seen == {"kid1": (1, 1), "lead": (1, 1)}
    assert [i.id for i in store.list() if i.parent_id is None] == ["lead"]


def test_a_loaded_state_run_with_other_tools_warns_once(store: Store) -> None:
    @tool
    def search_web(q: str) -> str:
        """Search the web."""
        return "r"

    @tool
    def search_docs(q: str) -> str:
        """Search the docs."""
        return "r"

    agent, _ = make_agent(["hi"], store, tools=[search_web])
    agent.run(State(id="rw", messages=[Message.user("go")]))
    loaded = store.load("rw")
    loaded.add_message(Message.user("again"))
    other, _ = make_agent(["hi again"], store, tools=[search_docs])
    with pytest.warns(ResumeWarning) as caught:
        other.run(loaded)
    assert len(caught) == 1
    store.save(State(id="never", messages=[Message.user("go")]))
    fork_source = store.load("rw")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_agent(["a"], store, tools=[search_docs])[0].run(store.load("never"))
        fork = fork_source.fork()
        fork.add_message(Message.user("more"))
        make_agent(["b"], None, tools=[search_web])[0].run(fork)


def test_saving_is_one_write_per_save_point_and_loading_is_fast(tmp_path: Path) -> None:
    writes: list[tuple[int, int]] = []

    class Counting(FileStore):
        def write(self, state_id: str, entries: Sequence[dict[str, Any]], info: Any, *, create: bool = False) -> None:
            writes.append((entries[0]["seq"] if entries else -1, len(entries)))
            super().write(state_id, entries, info, create=create)

    store = Counting(tmp_path)
    state = State(id="long")
    state.add_message(Message.user("Start the long task"))
    store.save(state)
    for turn in range(800):
        call = ToolCall("read_file", {"path": f"src/module_{turn}.py"}, f"c{turn}")
        state._begin_think("fake/fake")  # pyright: ignore[reportPrivateUsage]
        store.save(state)
        state._record_reply(  # pyright: ignore[reportPrivateUsage]
            Reply(Message("assistant", (TextBlock("Reading the next file."), call)), Usage(10, 5, requests=1))
        )
        store.save(state)
        state._tool_result(call, "x" * 200, ToolOutcomeKind.DONE)  # pyright: ignore[reportPrivateUsage]
        store.save(state)
        store.save(state)  # nothing new: no write
    assert len(state.history) == 2401
    assert len(writes) == 2401
    assert all(n == 1 for _, n in writes)
    assert [seq for seq, _ in writes] == list(range(2401))
    FileStore(tmp_path).load("long")
    best = min(timed(lambda: FileStore(tmp_path).load("long")) for _ in range(5))
    assert best < 0.020 * slowness()
    assert FileStore(tmp_path).load("long").snapshot() == state.snapshot()


def test_an_entry_or_info_that_is_not_json_is_damaged(store: Store) -> None:
    state, _ = run_sum(store, "dmg")
    lines = raw_lines(store, "dmg")
    set_lines(store, "dmg", [lines[0], "not json", *lines[2:]])
    with pytest.raises(ValueError, match="is damaged") as error:
        store.load("dmg")
    assert kind_of(store).bad_line_named(1) in str(error.value)
    set_lines(store, "dmg", lines)
    set_info(store, "dmg", "{")
    with pytest.raises(ValueError, match="is damaged"):
        store.load("dmg")
    with pytest.raises(ValueError, match="is damaged"):
        store.list()


def test_list_puts_states_without_history_last_by_id(store: Store) -> None:
    for state_id in ("c", "a", "b"):
        store.save(State(id=state_id))
    for state_id in ("older", "newer"):
        store.save(State(id=state_id, messages=[Message.user(state_id)]))
        time.sleep(0.002)
    assert [i.id for i in store.list()] == ["newer", "older", "a", "b", "c"]


# ---------------------------------------------------------------------------------------------------------------
# Beyond the checks: ids, bad input, concurrency, SQLite


@pytest.mark.parametrize("bad", ["../x", "a/b", "dot.id", "", "a b", "x" * 129])
def test_ids_with_path_characters(store: Store, bad: str) -> None:
    with pytest.raises(ValueError, match="may only have letters, digits"):
        store.load(bad)
    with pytest.raises(ValueError, match="may only have letters, digits"):
        store.read(bad)
    with pytest.raises(ValueError, match="may only have letters, digits"):
        store.write(bad, [], {"v": 5})
    with pytest.raises(ValueError, match="may only have letters, digits"):
        store.delete(bad)
    with pytest.raises(TypeError, match="needs the id as a string"):
        store.load(3)  # type: ignore[arg-type]
    assert store.list() == []


def test_load_names_the_method(store: Store) -> None:
    with pytest.raises(ValueError, match=r"^load\(\) got the id '../x'"):
        store.load("../x")
    with pytest.raises(ValueError, match=r"^aload\(\) got the id '../x'"):
        asyncio.run(store.aload("../x"))


def test_threads_saving_different_states(store: Store) -> None:
    states = [State(id=f"t{i}", messages=[Message.user(str(i))]) for i in range(8)]

    def work(state: State) -> None:
        for n in range(20):
            state.add_message(Message.user(f"m{n}"))
            store.save(state)

    threads = [threading.Thread(target=work, args=(s,)) for s in states]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a saving thread did not finish within 60 s"
    for state in states:
        assert_same(reopen(store).load(state.id), state)


def test_two_state_objects_of_one_id_conflict(store: Store) -> None:
    store.save(State(id="twin", messages=[Message.user("hi")]))
    one, two = store.load("twin"), store.load("twin")
    one.add_message(Message.user("from one"))
    two.add_message(Message.user("from two"))
    store.save(one)
    with pytest.raises(ValueError, match="differs from the one") as error:
        store.save(two)
    assert "Fix: load it again with store.load(id)" in str(error.value)
    assert texts(store.load("twin")) == ["hi", "from one"]


def test_full_disk_keeps_what_was_saved(local_store: Store, tmp_path: Path) -> None:
    store = local_store
    import resource
    import signal

    state = State(id="full", messages=[Message.user("hi")])
    store.save(state)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    path = kind_of(store).growing_file(store, "full")
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(path) + 300, hard))
        state.add_message(Message.user("x" * 2000))
        with pytest.raises(OSError):
            store.save(state)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old_handler)
    assert len(reopen(store).load("full").history) == 1
    store.save(state)
    assert_same(reopen(store).load("full"), state)


def test_not_writable_directory(tmp_path: Path) -> None:
    if os.getuid() == 0:  # root writes anywhere a mode allows nothing; sysfs refuses even root
        root = Path("/sys/alpineagents-not-writable")
    else:
        root = tmp_path / "ro"
        root.mkdir()
        os.chmod(root, 0o555)
    for store in (FileStore(root / "runs"), SQLiteStore(root / "runs.db")):
        with pytest.raises(PermissionError):
            store.save(State(id="x", messages=[Message.user("hi")]))
        assert store.list() == []
        assert store.read("x") is None


def test_sqlite_file_cut_short_or_garbage(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    store = SQLiteStore(path)
    run_sum(store, "a")
    store.close()
    data = path.read_bytes()
    for name, damaged in [("garbage", data[:100] + os.urandom(len(data) - 100)), ("cut", data[:50])]:
        target = tmp_path / f"{name}.db"
        target.write_bytes(damaged)
        with pytest.raises((ValueError, LookupError)) as error:
            SQLiteStore(target).load("a")
        if isinstance(error.value, ValueError):
            assert "damaged" in str(error.value)


def test_sqlite_layout_and_same_json(tmp_path: Path) -> None:
    files, lite = FileStore(tmp_path / "f"), SQLiteStore(tmp_path / "s.db")
    import alpineagents.types as types_module

    fixed = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    original = types_module._now  # pyright: ignore[reportPrivateUsage]
    types_module._now = lambda: fixed  # pyright: ignore[reportPrivateUsage]
    try:
        run_sum(files, "same")
        run_sum(lite, "same")
    finally:
        types_module._now = original  # pyright: ignore[reportPrivateUsage]
    for a, b in zip(raw_lines(files, "same"), raw_lines(lite, "same"), strict=True):
        assert json.loads(a)["kind"] == json.loads(b)["kind"]
        if json.loads(a)["kind"] != "run_start":
            assert a.replace('"call_', "").split('"id"')[0] == b.replace('"call_', "").split('"id"')[0]
    assert raw_info(files, "same") == raw_info(lite, "same")
    assert sorted(os.listdir(tmp_path)) == ["f", "s.db", "s.db-lock", "s.db-shm", "s.db-wal"]
    with sqlite3.connect(tmp_path / "s.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_sqlite_memory_store() -> None:
    store = SQLiteStore(":memory:")
    state, _ = run_sum(store, "mem")
    assert_same(store.load("mem"), state)
    assert store != SQLiteStore(":memory:") and store == store


def test_record_is_frozen() -> None:
    record = Record([{"seq": 0}], {"v": 5})
    assert record == Record(entries=[{"seq": 0}], info={"v": 5})
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.info = {}  # type: ignore[misc]
    assert repr(record) == "Record(entries=[{'seq': 0}], info={'v': 5})"


HOLDER = """
import sys
from alpineagents.store import FileStore, SQLiteStore
from alpineagents.types import Message
store = eval(sys.argv[1])
state = store.load("held")
state.add_message(Message.user("from the other process"))
store.save(state)
print("holding", flush=True)
sys.stdin.readline()
"""


def test_a_second_process_gets_a_clear_error(store: Store) -> None:
    import gc
    import subprocess
    import sys

    state = State(id="held", messages=[Message.user("hi")])
    store.save(state)
    del state
    gc.collect()  # this process drops the State, and with it its lock
    other = subprocess.Popen(
        [sys.executable, "-c", HOLDER, kind_of(store).opener(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout is not None
        assert select.select([other.stdout], [], [], 60)[0], "the other process did not report within 60 s"
        assert other.stdout.readline() == "holding\n"
        mine = store.load("held")
        mine.add_message(Message.user("from this process"))
        with pytest.raises(store_module.StateLockedError, match="is being written by another process") as error:
            store.save(mine)
        assert "Fix: let that process finish with it" in str(error.value)
        assert isinstance(error.value, alpineagents.errors.AlpineAgentsError)
        assert texts(store.load("held")) == ["hi", "from the other process"]
    finally:
        assert other.stdin is not None
        other.stdin.close()
        other.wait(timeout=60)
    store.save(mine)  # the other process is gone: its lock went with it
    assert texts(store.load("held")) == ["hi", "from the other process", "from this process"]


def test_bad_write_arguments(store: Store) -> None:
    with pytest.raises(TypeError, match="without an integer seq"):
        store.write("x", [{"kind": "user"}], {"v": 5}, create=True)
    with pytest.raises(TypeError, match="info as a dict"):
        store.write("x", [], [1], create=True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of dicts"):
        store.write("x", "abc", {}, create=True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not JSON serializable"):
        store.write("x", [{"seq": 0, "s": {1}}], {"v": 5}, create=True)
    with pytest.raises(ValueError, match="Out of range float"):
        store.write("x", [{"seq": 0, "f": float("nan")}], {"v": 5}, create=True)
    assert store.read("x") is None and store.list() == []


def test_many_live_states_do_not_run_out_of_descriptors(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import alpineagents._stores.locks as shared

    monkeypatch.setattr(shared, "_MAX_HOLDS", 20)
    states = [State(id=f"live{i}", messages=[Message.user(str(i))]) for i in range(60)]
    for state in states:
        store.save(state)
    assert len(shared._HOLDS) <= 20  # pyright: ignore[reportPrivateUsage]
    for state in states:  # every State still saves (taking its lock again)
        state.add_message(Message.user("more"))
        store.save(state)
    for state in states:
        assert_same(reopen(store).load(state.id), state)


def test_a_state_collected_while_another_thread_holds_the_lock_table_never_blocks(store: Store) -> None:
    """A saved State collected in one thread while another holds the table of writer locks (it may be waiting for
    that very thread, e.g. for it to start): the collecting thread goes on at once, and the State's lock is let go
    at the table's next use."""
    import alpineagents._stores.locks as shared

    state = State(id="gone", messages=[Message.user("hi")])
    store.save(state)
    key = next(key for key in shared._HOLDS if key.endswith("gone"))  # pyright: ignore[reportPrivateUsage]
    handed = threading.Event()
    collected = threading.Event()
    holder: list[State | None] = [state]
    del state

    def collect() -> None:
        assert handed.wait(30)
        holder[0] = None  # the last reference: the State's finalizer runs in this thread
        gc.collect()
        collected.set()

    collector = threading.Thread(target=collect)
    collector.start()
    with shared._HOLDS_LOCK:  # pyright: ignore[reportPrivateUsage]
        handed.set()
        assert collected.wait(10), "the collecting thread waited for the table another thread held"
        assert shared.holds_lock(key)  # not yet let go: the table was busy
    collector.join(10)
    store.save(State(id="next", messages=[Message.user("hi")]))  # the table's next use lets the old claim go
    assert not shared.holds_lock(key)


# ---------------------------------------------------------------------------------------------------------------
# Lost and damaged data is refused, never loaded as a shorter history


def _lose_log(log: Path, how: str) -> None:
    data = log.read_bytes()
    if how == "deleted":
        log.unlink()
    elif how == "emptied":
        log.write_bytes(b"")
    elif how == "filled_with_nul":  # what a power loss can leave: the old size, all zero bytes
        log.write_bytes(bytes(len(data)))
    else:  # cut in half
        log.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("how", ["deleted", "emptied", "filled_with_nul", "cut_in_half"])
def test_a_file_log_that_lost_entries_its_info_records_is_damaged(tmp_path: Path, how: str) -> None:
    store = FileStore(tmp_path)
    run_sum(store, "lost")
    log = tmp_path / "lost" / "log.jsonl"
    _lose_log(log, how)
    assert [i.turn for i in store.list()] == [2]  # the listing still shows the State
    for reader in (store, FileStore(tmp_path)):
        with pytest.raises(ValueError, match=r"^saved State 'lost' is damaged: ") as error:
            reader.load("lost")
        assert str(log) in str(error.value)


def test_a_state_folder_without_a_log_has_no_entries_when_its_info_records_none(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.save(State(id="blank"))
    (tmp_path / "blank" / "log.jsonl").unlink()
    assert store.load("blank").history == ()
    assert FileStore(tmp_path).load("blank").snapshot() == State().snapshot()


def test_a_file_log_ahead_of_its_info_still_loads_every_entry(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    state, _ = run_sum(store, "ahead")
    info = (tmp_path / "ahead" / "info.json").read_bytes()
    state.add_message(Message.user("one more"))
    store.save(state)
    (tmp_path / "ahead" / "info.json").write_bytes(info)  # a crash between the log and the info
    assert_same(FileStore(tmp_path).load("ahead"), state)


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (
            "DELETE FROM alpine_entries WHERE seq = (SELECT max(seq) FROM alpine_entries)",
            r"^saved State 'lost' is damaged: ",
        ),
        ("DELETE FROM alpine_entries", r"^saved State 'lost' is damaged: "),
        ("DROP TABLE alpine_entries", r"^the database of SQLiteStore\(.*\) is damaged: .* but not alpine_entries"),
    ],
    ids=["last_row_deleted", "all_rows_deleted", "entries_table_dropped"],
)
def test_sqlite_rows_missing_from_what_the_state_counts_are_damaged(tmp_path: Path, damage: str, says: str) -> None:
    run_sum(SQLiteStore(tmp_path / "r.db"), "lost")
    with sqlite3.connect(tmp_path / "r.db") as conn:
        conn.execute(damage)
    store = SQLiteStore(tmp_path / "r.db")
    with pytest.raises(ValueError, match=says):
        store.load("lost")
    with pytest.raises(ValueError, match=says):
        store.load("lost")  # reading made nothing again: still damaged


def test_sqlite_entry_text_that_is_not_utf8_is_damaged_not_an_io_error(tmp_path: Path) -> None:
    run_sum(SQLiteStore(tmp_path / "r.db"), "bad")
    with sqlite3.connect(tmp_path / "r.db") as conn:
        conn.execute("UPDATE alpine_entries SET line = CAST(X'7B22FF227D' AS TEXT) WHERE seq = 1")
    with pytest.raises(ValueError, match=r"^saved State 'bad' is damaged: ") as error:
        SQLiteStore(tmp_path / "r.db").load("bad")
    assert not isinstance(error.value, OSError)


@pytest.mark.parametrize("table", ["alpine_states", "alpine_entries"])
def test_sqlite_database_holding_another_programs_table_is_damaged(tmp_path: Path, table: str) -> None:
    with sqlite3.connect(tmp_path / "other.db") as conn:
        conn.execute(f"CREATE TABLE {table} (name TEXT, price REAL)")
        conn.execute(f"INSERT INTO {table} VALUES ('tea', 2.5)")
    store = SQLiteStore(tmp_path / "other.db")
    for call in (lambda: store.load("x"), store.list, lambda: store.save(State(id="x"))):
        with pytest.raises(ValueError, match="is damaged") as error:
            call()
        assert not isinstance(error.value, OSError)
    with sqlite3.connect(tmp_path / "other.db") as conn:  # the other program's data is untouched
        assert conn.execute(f"SELECT * FROM {table}").fetchall() == [("tea", 2.5)]


@pytest.mark.parametrize("name", ["log.jsonl", "info.json"])
def test_a_state_file_that_is_a_folder_is_damaged(tmp_path: Path, name: str) -> None:
    store = FileStore(tmp_path)
    state, _ = run_sum(store, "odd")
    path = tmp_path / "odd" / name
    path.unlink()
    path.mkdir()
    with pytest.raises(ValueError, match=r"^saved State 'odd' is damaged: ") as error:
        FileStore(tmp_path).load("odd")
    assert str(path) in str(error.value)
    if name == "info.json":
        with pytest.raises(ValueError, match=r"^saved State 'odd' is damaged: "):
            store.list()
    if name == "log.jsonl":
        state.add_message(Message.user("more"))
        with pytest.raises(ValueError, match=r"^saved State 'odd' is damaged: "):
            store.save(state)


# ---------------------------------------------------------------------------------------------------------------
# A forked child is another process: it never writes a State its parent holds


def _in_forked_child(work: Any) -> int:
    """Run `work()` in a child made by `os.fork()`; its exit code: 0 when it raised StateLockedError, 1 when it
    returned, 2 for any other error. Waited for with a deadline."""
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            work()
            code = 1
        except store_module.StateLockedError:
            code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    raise AssertionError("the forked child did not finish within 60 s")


def test_a_forked_child_cannot_write_a_state_its_parent_holds(store: Store) -> None:
    state = State(id="held", messages=[Message.user("hi")])
    store.save(state)  # this process now holds the State's lock

    def save_the_inherited_state() -> None:
        state.add_message(Message.user("from the child"))
        store.save(state)

    def save_a_loaded_copy() -> None:
        copy = reopen(store).load("held")
        copy.add_message(Message.user("from the child"))
        reopen(store).save(copy)

    assert _in_forked_child(save_the_inherited_state) == 0
    assert _in_forked_child(save_a_loaded_copy) == 0
    assert texts(reopen(store).load("held")) == ["hi"]
    state.add_message(Message.user("from the parent"))
    store.save(state)  # the parent still writes it
    assert texts(reopen(store).load("held")) == ["hi", "from the parent"]


def test_a_forked_child_writes_a_state_nobody_holds(store: Store) -> None:
    import gc

    store.save(State(id="free", messages=[Message.user("hi")]))
    gc.collect()  # the State is gone, and with it this process's lock

    def continue_it() -> None:
        copy = reopen(store).load("free")
        copy.add_message(Message.user("from the child"))
        reopen(store).save(copy)

    assert _in_forked_child(continue_it) == 1
    assert texts(reopen(store).load("free")) == ["hi", "from the child"]


def test_importing_the_package_does_not_load_sqlite3() -> None:
    import subprocess
    import sys

    code = (
        "import sys, alpineagents, alpineagents.store\n"
        "assert alpineagents.SQLiteStore is alpineagents.store.SQLiteStore\n"
        "alpineagents.SQLiteStore(':memory:')\n"
        "print('sqlite3' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False\n"


def _save_then_exit_with_whether_it_was_refused(store: Store, state: State) -> None:
    state.add_message(Message.user("from the child"))
    try:
        store.save(state)
    except store_module.StateLockedError:
        raise SystemExit(0) from None
    raise SystemExit(1)


def test_a_multiprocessing_fork_child_cannot_write_a_state_its_parent_holds(store: Store) -> None:
    import multiprocessing

    state = State(id="held", messages=[Message.user("hi")])
    store.save(state)
    child = multiprocessing.get_context("fork").Process(
        target=_save_then_exit_with_whether_it_was_refused, args=(store, state)
    )
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
        child.join(timeout=10)
        raise AssertionError("the child process did not finish within 60 s")
    assert child.exitcode == 0  # StateLockedError
    assert texts(reopen(store).load("held")) == ["hi"]


def test_a_forked_child_is_not_stuck_on_a_guard_a_parent_thread_held_at_the_fork(
    local_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from alpineagents._stores import files

    store = local_store
    store.save(State(id="other", messages=[Message.user("hi")]))
    busy = State(id="busy", messages=[Message.user("hi")])
    store.save(busy)
    inside, leave = threading.Event(), threading.Event()

    def blocking(*args: Any, **kwargs: Any) -> Any:  # the parent's thread stops inside a write, holding its guards
        inside.set()
        assert leave.wait(60)
        return original(*args, **kwargs)

    if isinstance(store, FileStore):
        original = files.append_unflushed  # where an append writes the log (a group commit flushes it after)
        monkeypatch.setattr(files, "append_unflushed", blocking)
    else:
        original = SQLiteStore._write_one  # pyright: ignore[reportPrivateUsage]
        monkeypatch.setattr(SQLiteStore, "_write_one", blocking)
    busy.add_message(Message.user("more"))
    writer = threading.Thread(target=store.save, args=(busy,))
    writer.start()
    try:
        assert inside.wait(60)

        def read_in_the_child() -> None:
            assert texts(store.load("other")) == ["hi"]
            assert texts(store.load("busy")) == ["hi"]

        assert _in_forked_child(read_in_the_child) == 1  # it returned
    finally:
        leave.set()
        writer.join(timeout=60)
    assert not writer.is_alive()
    assert texts(reopen(store).load("busy")) == ["hi", "more"]


SPEC_EXAMPLE_LINES = [
    '{"seq":0,"kind":"context_change","turn":0,"at":"2026-01-01T09:00:00+00:00","content":{"kind":"import",'
    '"before_tokens":0,"after_tokens":11,"summary":null,"kept":0,"cleared":[],"messages":[{"role":"user","content":'
    '[{"type":"text","text":"Fix the failing test"}],"tokens":null}],"restored_to":null,"usage":null}}',
    '{"seq":1,"kind":"run_start","turn":0,"at":"2026-01-01T09:01:00+00:00","content":{"name":null,"model":"fake/fake",'
    '"system_sha256":null,"tools":["run_tests"],"mcp_servers":[]}}',
    '{"seq":2,"kind":"model_request","turn":1,"at":"2026-01-01T09:02:00+00:00","content":"fake/fake"}',
    '{"seq":3,"kind":"model_reply","turn":1,"at":"2026-01-01T09:03:00+00:00","content":{"message":{"role":"assistant",'
    '"content":[{"type":"tool_call","name":"run_tests","args":{},"id":"c1"}],"tokens":null},"usage":{"input_tokens":41,'
    '"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0,"requests":1,"cost":null},"context_tokens":41,'
    '"stop_reason":"tool_use","model":"fake"}}',
    '{"seq":4,"kind":"tool_result","turn":1,"at":"2026-01-01T09:04:00+00:00","content":"3 passed","call":{"name":'
    '"run_tests","args":{},"id":"c1"},"outcome":"done"}',
]


def test_a_plain_run_is_saved_with_exactly_the_lines_the_format_shows(
    local_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run with tools and no system prompt writes the format's lines to the letter: what the library records
    beside them (a request's input, an error's stack) is opt-in, so a plain run's lines carry no extra key."""
    import alpineagents.types as types_module

    ticks = iter(range(1000))
    start = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    monkeypatch.setattr(types_module, "_now", lambda: start + timedelta(minutes=next(ticks)))
    monkeypatch.delenv("ALPINEAGENTS_RECORD_INPUT", raising=False)

    @tool
    def run_tests() -> str:
        """Run the tests."""
        return "3 passed"

    fake = FakeModel([ToolCall("run_tests", {}, "c1"), "All tests pass now."])
    agent = Agent(fake, tools=[run_tests], store=local_store, reporter=None, human=None)
    agent.run(State(id="fix-1", messages=[Message.user("Fix the failing test")]))
    assert raw_lines(local_store, "fix-1")[:5] == SPEC_EXAMPLE_LINES
