"""Opening a store to read it never writes: a file that is not a store is named as such and left as it was; saved
data that does not add up (a database emptied to 0 bytes, a State folder replaced by a file, an edited entry) is
called damaged, with the State's id.

The command line is run as a real process (`python -m alpineagents`), as a user would.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from alpineagents.agent import Agent
from alpineagents.state import State
from alpineagents.store import FileStore, SQLiteStore, Store
from alpineagents.testing import FakeModel
from alpineagents.types import Message
from helpers.cli_agents import cli


def saved(store: Store, state_id: str = "kept") -> State:
    state = State(id=state_id, messages=[Message.user("Hello")])
    Agent(FakeModel(["Hi"]), store=store, reporter=None, human=None).run(state)
    return state


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` with the hash of its bytes: what "left as it was" compares."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def error_line(done: object) -> str:
    stderr: str = done.stderr  # type: ignore[attr-defined]
    lines = stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, stderr  # type: ignore[attr-defined]
    return lines[0]


# -- reading never creates or migrates ---------------------------------------------------------------------------


def test_ls_of_an_empty_file_names_it_not_a_store_and_leaves_it_empty(tmp_path: Path) -> None:
    (tmp_path / "empty-notes.txt").write_bytes(b"")
    done = cli("ls", "--store", "empty-notes.txt", cwd=tmp_path)
    assert "empty-notes.txt is not a store of alpineagents: the file is empty" in error_line(done)
    assert snapshot(tmp_path) == {"empty-notes.txt": hashlib.sha256(b"").hexdigest()}
    assert (tmp_path / "empty-notes.txt").stat().st_size == 0
    with pytest.raises(ValueError, match="is not a store of alpineagents"):
        SQLiteStore(tmp_path / "empty-notes.txt").list()
    with pytest.raises(ValueError, match="is not a store of alpineagents"):
        SQLiteStore(tmp_path / "empty-notes.txt").load("x")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["empty-notes.txt"]


def test_ls_of_another_programs_database_adds_no_table_and_keeps_its_journal(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "other-app.db") as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        conn.execute("INSERT INTO notes (text) VALUES ('buy milk')")
    conn.close()
    before = snapshot(tmp_path)
    done = cli("ls", "--store", "other-app.db", cwd=tmp_path)
    assert "other-app.db is not a store of alpineagents" in error_line(done)
    assert "without this store's tables" in done.stderr
    for read in (lambda s: s.list(), lambda s: s.load("x"), lambda s: s.read("x"), lambda s: s.delete("x")):
        with pytest.raises(ValueError, match="is not a store of alpineagents"):
            read(SQLiteStore(tmp_path / "other-app.db"))
    assert snapshot(tmp_path) == before  # no table added, no -wal or -lock file made
    with sqlite3.connect(tmp_path / "other-app.db") as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    assert (tables, journal) == (["notes"], "delete")


def test_a_sqlite_store_emptied_to_zero_bytes_is_damaged_not_an_empty_store(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    saved(store)
    store.close()
    (tmp_path / "runs.db").write_bytes(b"")  # emptied (a careless hand, a disk that lost it)
    for path in tmp_path.glob("runs.db-*"):
        if not path.name.endswith("-lock"):
            path.unlink()
    fresh = SQLiteStore(tmp_path / "runs.db")
    with pytest.raises(ValueError, match=r"is damaged: the file is empty \(0 bytes\)"):
        fresh.list()
    with pytest.raises(ValueError, match="is damaged"):
        fresh.load("kept")
    with pytest.raises(ValueError, match="is damaged"):  # a write does not start a new, empty store over it
        saved(fresh, "new")
    assert (tmp_path / "runs.db").stat().st_size == 0
    done = cli("ls", "--store", "runs.db", cwd=tmp_path)
    assert "is damaged" in error_line(done)


def test_a_new_sqlite_store_still_starts_in_an_empty_file(tmp_path: Path) -> None:
    (tmp_path / "new.db").write_bytes(b"")  # made empty by the user, never written by a store
    store = SQLiteStore(tmp_path / "new.db")
    state = saved(store)
    assert SQLiteStore(tmp_path / "new.db").load(state.id).history == state.history


def test_a_python_file_given_as_store_is_not_a_store_not_damaged(tmp_path: Path) -> None:
    (tmp_path / "agents.py").write_text("from alpineagents import Agent\n")
    before = snapshot(tmp_path)
    for command in (("ls",), ("show", "x")):
        line = error_line(cli(*command, "--store", "agents.py", cwd=tmp_path))
        assert "agents.py is not a store of alpineagents: the file is not a SQLite database" in line
        assert "damaged" not in line
    assert snapshot(tmp_path) == before


def test_a_file_store_on_a_file_raises_instead_of_listing_nothing(tmp_path: Path) -> None:
    (tmp_path / "agents.py").write_text("print('hi')\n")
    store = FileStore(tmp_path / "agents.py")
    with pytest.raises(ValueError, match="is not a store of alpineagents: it is a file, and a FileStore is a folder"):
        store.list()
    with pytest.raises(ValueError, match="is not a store of alpineagents"):
        store.load("x")
    assert FileStore(tmp_path / "missing").list() == []  # a store never written is still an empty one


# -- FileStore damage is called damage ---------------------------------------------------------------------------


def test_a_state_folder_replaced_by_a_file_is_damaged_and_still_listed_as_such(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "runs")
    saved(store, "healthy")
    saved(store, "broken")
    folder = tmp_path / "runs" / "broken"
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    folder.write_text("not a folder\n")
    (tmp_path / "runs" / "notes.txt").write_text("someone's notes\n")  # not a State's name: not listed
    with pytest.raises(ValueError, match=r"^saved State 'broken' is damaged: .*broken is a file, not the State's"):
        store.load("broken")
    with pytest.raises(ValueError, match=r"^saved State 'broken' is damaged"):
        store.list()  # the run does not vanish from the listing: it is reported, as a damaged info is
    with pytest.raises(ValueError, match=r"^saved State 'broken' is damaged"):
        store.write("broken", [], {"v": 5})
    assert store.load("healthy").id == "healthy"


def test_an_edited_entry_kind_is_damaged_and_names_the_state(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "runs")
    saved(store, "edited")
    log = tmp_path / "runs" / "edited" / "log.jsonl"
    lines = log.read_text().splitlines()
    entry = json.loads(lines[1])
    entry["kind"] = "telepathy"
    lines[1] = json.dumps(entry)
    log.write_text("".join(line + "\n" for line in lines))
    with pytest.raises(ValueError, match=r"^saved State 'edited' is damaged: unknown history entry kind 'telepathy'"):
        store.load("edited")


_RACER = """
import sys, time
from alpineagents.agent import Agent
from alpineagents.state import State
from alpineagents.store import SQLiteStore
from alpineagents.testing import FakeModel
from alpineagents.types import Message

path, start, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
store = SQLiteStore(path)
while time.time() < start:
    time.sleep(0.001)
if name.startswith("reader"):
    deadline = time.time() + 2
    while time.time() < deadline:
        store.list()  # a store being made is either not there yet or whole: never "empty", never damaged
else:
    Agent(FakeModel(["Hi"]), store=store, reporter=None, human=None).run(State(id=name, messages=[Message.user("Hello")]))
"""


def test_processes_making_one_new_sqlite_store_at_once_all_find_it_whole(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys
    import time

    path = tmp_path / "new" / "runs.db"
    start = time.time() + 2  # every process started and importing done by then
    names = [f"writer{n}" for n in range(6)] + [f"reader{n}" for n in range(4)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(path), str(start), name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ},
        )
        for name in names
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    for name, process, (_, err) in zip(names, processes, outputs, strict=True):
        assert process.returncode == 0, f"{name}: {err.decode(errors='replace')[-2000:]}"
    assert sorted(info.id for info in SQLiteStore(path).list()) == [f"writer{n}" for n in range(6)]
    assert [name for name in os.listdir(path.parent) if ".new-" in name] == [], "no half-made database is left"
