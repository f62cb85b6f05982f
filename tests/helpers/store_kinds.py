"""The kinds of store the tests check, in one module: how to make each one, open it again (in this process or
another), and reach its raw data (to look at it, or damage it the way a crash, a loss of data or a careless hand
would); and the store contract every store must pass (`check_contract`).

Used by the store tests (`test_store.py`: the `store` fixture runs each check once per kind), the crash harness
(`test_crash.py` and its child process) and the group-commit tests. A new store joins them all by adding one
`StoreKind` to `KINDS`; a store of one's own checks itself with `check_contract` (see `test_store_skeleton.py`).
"""

from __future__ import annotations

import itertools
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import alpineagents.store as store_module
from alpineagents.agent import Agent
from alpineagents.postgres import PostgresStore
from alpineagents.state import State
from alpineagents.store import FileStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message

if TYPE_CHECKING:
    import pytest

SQLiteStore = store_module.SQLiteStore


class StoreKind:
    """One kind of store in the suite: how to make one, and how to reach its raw data (to look at it or damage it
    the way a crash, a loss of data or a careless hand would). A new store joins every check of the `store`
    fixture by adding a subclass to `KINDS`."""

    name: str
    store_type: type[Store]
    in_local_files = True
    """Whether the store keeps its data in files this process writes (a database server's files are not)."""
    group_commits = True
    """Whether the store commits its save points in groups (`_stores/group.py`), as the group-commit tests check."""

    def place(self, request: pytest.FixtureRequest | None, folder: Path) -> dict[str, str]:
        """Where a new, empty store keeps its data, as JSON text another process can be handed: the kind, a
        folder, and what else the store needs (`request` reaches fixtures such as a database server)."""
        return {"kind": self.name, "dir": str(folder)}

    def open(self, place: dict[str, str]) -> Store:
        """The store at `place` (in this process or another one)."""
        raise NotImplementedError

    def make(self, request: pytest.FixtureRequest | None, folder: Path) -> Store:
        """A new, empty store."""
        return self.open(self.place(request, folder))

    def reopen(self, store: Store) -> Store:
        """Another store object for the same storage."""
        raise NotImplementedError

    def raw_info(self, store: Store, state_id: str) -> str:
        raise NotImplementedError

    def set_info(self, store: Store, state_id: str, text: str) -> None:
        raise NotImplementedError

    def raw_lines(self, store: Store, state_id: str) -> list[str]:
        raise NotImplementedError

    def set_lines(self, store: Store, state_id: str, lines: list[str]) -> None:
        """Replace the State's stored entries (the store's own count of them follows)."""
        raise NotImplementedError

    def copy(self, store: Store, state_id: str, target: Path) -> Store:
        """A copy of the store's data as it is right now (what a crash at this moment leaves)."""
        raise NotImplementedError

    def bad_line_named(self, index: int) -> str:
        """How the damaged error names the stored entry at `index`."""
        raise NotImplementedError

    def growing_file(self, store: Store, state_id: str) -> Path:
        """The file a save of the State makes longer (stores that keep their data in files of this process)."""
        raise NotImplementedError

    def opener(self, store: Store) -> str:
        """Python source of an expression that opens this store in another process."""
        raise NotImplementedError


class FileKind(StoreKind):
    name = "file"
    store_type = FileStore

    def open(self, place: dict[str, str]) -> Store:
        return FileStore(Path(place["dir"]) / "runs")

    def _folder(self, store: Store, state_id: str) -> Path:
        assert isinstance(store, FileStore)
        return store._root / state_id  # pyright: ignore[reportPrivateUsage]

    def reopen(self, store: Store) -> Store:
        return FileStore(store._root)  # pyright: ignore[reportAttributeAccessIssue]

    def raw_info(self, store: Store, state_id: str) -> str:
        return (self._folder(store, state_id) / "info.json").read_text()

    def set_info(self, store: Store, state_id: str, text: str) -> None:
        (self._folder(store, state_id) / "info.json").write_text(text)

    def raw_lines(self, store: Store, state_id: str) -> list[str]:
        text = (self._folder(store, state_id) / "log.jsonl").read_text()
        assert text == "" or text.endswith("\n")
        return text.split("\n")[:-1]

    def set_lines(self, store: Store, state_id: str, lines: list[str]) -> None:
        (self._folder(store, state_id) / "log.jsonl").write_text("".join(line + "\n" for line in lines))

    def copy(self, store: Store, state_id: str, target: Path) -> Store:
        # Temporary files (".info.json.*") come and go while a save runs; a crash would leave at most one, which
        # loading ignores, so they are not copied (copying one that vanished midway would fail).
        shutil.copytree(self._folder(store, state_id), target / state_id, ignore=shutil.ignore_patterns(".*"))
        return FileStore(target)

    def bad_line_named(self, index: int) -> str:
        return f"line {index + 1}"

    def growing_file(self, store: Store, state_id: str) -> Path:
        return self._folder(store, state_id) / "log.jsonl"

    def opener(self, store: Store) -> str:
        return f"FileStore({str(store._root)!r})"  # pyright: ignore[reportAttributeAccessIssue]


class SQLiteKind(StoreKind):
    name = "sqlite"
    store_type = SQLiteStore

    def open(self, place: dict[str, str]) -> Store:
        return SQLiteStore(Path(place["dir"]) / "runs.db")

    def _connect(self, store: Store) -> sqlite3.Connection:
        assert isinstance(store, SQLiteStore)
        return sqlite3.connect(store._given)  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]

    def reopen(self, store: Store) -> Store:
        return SQLiteStore(store._given)  # pyright: ignore[reportAttributeAccessIssue]

    def raw_info(self, store: Store, state_id: str) -> str:
        with self._connect(store) as conn:
            return conn.execute("SELECT info FROM alpine_states WHERE id = ?", (state_id,)).fetchone()[0]

    def set_info(self, store: Store, state_id: str, text: str) -> None:
        with self._connect(store) as conn:
            conn.execute("UPDATE alpine_states SET info = ? WHERE id = ?", (text, state_id))

    def raw_lines(self, store: Store, state_id: str) -> list[str]:
        with self._connect(store) as conn:
            rows = conn.execute("SELECT line FROM alpine_entries WHERE state_id = ? ORDER BY seq", (state_id,))
            return [row[0] for row in rows]

    def set_lines(self, store: Store, state_id: str, lines: list[str]) -> None:
        with self._connect(store) as conn:
            conn.execute("DELETE FROM alpine_entries WHERE state_id = ?", (state_id,))
            conn.executemany(
                "INSERT INTO alpine_entries VALUES (?, ?, ?)", [(state_id, i, line) for i, line in enumerate(lines)]
            )
            conn.execute("UPDATE alpine_states SET count = ? WHERE id = ?", (len(lines), state_id))

    def copy(self, store: Store, state_id: str, target: Path) -> Store:
        target.mkdir(parents=True, exist_ok=True)
        dst = sqlite3.connect(target / "copy.db")
        with self._connect(store) as src:
            src.backup(dst)
        dst.close()
        return SQLiteStore(target / "copy.db")

    def bad_line_named(self, index: int) -> str:
        return f"entry {index}"

    def growing_file(self, store: Store, state_id: str) -> Path:
        return Path(store._given)  # pyright: ignore[reportAttributeAccessIssue]

    def opener(self, store: Store) -> str:
        return f"SQLiteStore({store._given!r})"  # pyright: ignore[reportAttributeAccessIssue]


class PostgresKind(StoreKind):
    """PostgresStore on the real PostgreSQL server of the test session (the `postgres` fixture), one schema a test."""

    name = "postgres"
    in_local_files = False
    group_commits = False

    store_type = PostgresStore
    _copies = itertools.count()

    def place(self, request: pytest.FixtureRequest | None, folder: Path) -> dict[str, str]:
        assert request is not None, "a PostgresStore needs the test session's server (the postgres fixture)"
        dsn = request.getfixturevalue("postgres").dsn
        return {**super().place(request, folder), "dsn": dsn, "schema": request.getfixturevalue("postgres_schema")}

    def open(self, place: dict[str, str]) -> Store:
        return PostgresStore(place["dsn"], schema=place["schema"])

    def _where(self, store: Store) -> tuple[str, str]:
        return store._conninfo, store._schema  # pyright: ignore[reportAttributeAccessIssue]

    def _sql(self, store: Store, query: str, *args: Any) -> list[Any]:
        import psycopg

        dsn, schema = self._where(store)
        with psycopg.connect(dsn, autocommit=True) as conn:
            cursor = conn.execute(query.replace("{schema}", schema), args)  # pyright: ignore
            return cursor.fetchall() if cursor.description else []

    def reopen(self, store: Store) -> Store:
        dsn, schema = self._where(store)
        return PostgresStore(dsn, schema=schema)

    def raw_info(self, store: Store, state_id: str) -> str:
        return self._sql(store, "SELECT info FROM {schema}.states WHERE id = %s", state_id)[0][0]

    def set_info(self, store: Store, state_id: str, text: str) -> None:
        self._sql(store, "UPDATE {schema}.states SET info = %s WHERE id = %s", text, state_id)

    def raw_lines(self, store: Store, state_id: str) -> list[str]:
        rows = self._sql(store, "SELECT line FROM {schema}.entries WHERE state_id = %s ORDER BY seq", state_id)
        return [row[0] for row in rows]

    def set_lines(self, store: Store, state_id: str, lines: list[str]) -> None:
        self._sql(store, "DELETE FROM {schema}.entries WHERE state_id = %s", state_id)
        for seq, line in enumerate(lines):
            self._sql(
                store, "INSERT INTO {schema}.entries (state_id, seq, line) VALUES (%s, %s, %s)", state_id, seq, line
            )
        self._sql(store, "UPDATE {schema}.states SET count = %s WHERE id = %s", len(lines), state_id)

    def copy(self, store: Store, state_id: str, target: Path) -> Store:
        dsn, schema = self._where(store)
        where = f"{schema}_copy{next(self._copies)}"
        copy = PostgresStore(dsn, schema=where)
        copy.list()  # makes its tables
        self._sql(store, f"INSERT INTO {where}.states SELECT * FROM {{schema}}.states WHERE id = %s", state_id)
        self._sql(store, f"INSERT INTO {where}.entries SELECT * FROM {{schema}}.entries WHERE state_id = %s", state_id)
        return copy

    def bad_line_named(self, index: int) -> str:
        return f"entry {index}"

    def opener(self, store: Store) -> str:
        dsn, schema = self._where(store)
        return f"__import__('alpineagents.postgres').postgres.PostgresStore({dsn!r}, schema={schema!r})"


KINDS: list[StoreKind] = [FileKind(), SQLiteKind(), PostgresKind()]
LOCAL_KINDS = [kind for kind in KINDS if kind.in_local_files]


def kind_named(name: str) -> StoreKind:
    """The kind of store called `name` ("file", "sqlite", "postgres")."""
    return next(kind for kind in KINDS if kind.name == name)


GROUP_KINDS = [kind for kind in KINDS if kind.group_commits]


# ---------------------------------------------------------------------------------------------------------------
# The store contract


@tool
def _add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _info(turn: int = 0) -> dict[str, Any]:
    return {
        "v": 5,
        "first_message": "hi",
        "created_at": None,
        "updated_at": None,
        "turn": turn,
        "stopped": None,
        "finished": False,
        "parent_id": None,
    }


def check_contract(store: Store, reopen: Callable[[Store], Store]) -> None:
    """Check `store` (new and empty) against the `Store` contract: a run saved and loaded back equal through
    another object for the same storage (`reopen`), which `==` ties to it; `create` refused for an id it has and
    a later write refused for one it lacks; entries sent again skipped and a gap refused; a State with no history
    saved; `list()` newest first and `delete` (when the store has them)."""
    state = State(id="contract", messages=[Message.user("What is 1+2?")])
    agent = Agent(FakeModel([tool_call("_add", a=1, b=2), "3"]), tools=[_add], store=store, reporter=None, human=None)
    assert agent.run(state) == "3"
    other = reopen(store)
    assert other == store and hash(other) == hash(store), "two objects for one storage must be equal"
    loaded = other.load("contract")
    assert loaded.history == state.history and loaded.snapshot() == state.snapshot()
    loaded.add_message(Message.user("and 2+2?"))
    store.save(loaded)  # a State loaded with one object is saved with the other, which is equal to it
    assert len(other.load("contract").history) == len(state.history) + 1

    try:
        store.write("contract", [], _info(), create=True)
    except ValueError:
        pass
    else:
        raise AssertionError("write(create=True) of an id the store has must raise ValueError")
    try:
        store.write("ghost", [], _info())
    except LookupError:
        pass
    else:
        raise AssertionError("write() of an id the store lacks must raise LookupError")
    record = store.read("contract")
    assert record is not None
    store.write("contract", record.entries[-2:], record.info)  # sent again: skipped
    again = store.read("contract")
    assert again is not None and again.entries == record.entries and again.info == record.info
    gap = dict(record.entries[-1], seq=len(record.entries) + 1)
    try:
        store.write("contract", [gap], record.info)
    except ValueError:
        pass
    else:
        raise AssertionError("entries that leave a gap must raise ValueError")
    assert store.read("nothing") is None

    empty = State(id="empty")
    store.save(empty)
    assert reopen(store).load("empty").history == ()
    if type(store).list is not Store.list:
        assert [info.id for info in store.list()] == ["contract", "empty"]  # newest first, no history last
    if type(store).delete is not Store.delete:
        store.delete("empty")
        store.delete("empty")  # nothing happens the second time
        assert store.read("empty") is None
