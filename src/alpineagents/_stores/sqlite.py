"""`SQLiteStore`: many States in one SQLite file (standard library `sqlite3`, WAL journal).

Tables (created on the first write):

```
alpine_states (id TEXT PRIMARY KEY, count INTEGER, info TEXT, updated TEXT)   one row per State
alpine_entries (state_id TEXT, seq INTEGER, line TEXT, PRIMARY KEY (state_id, seq))
```

`line` is the same compact JSON text a `FileStore` writes as a line of `log.jsonl`; `info` the same as
`info.json`; `updated` the info's `updated_at` in UTC, for `list()` to sort in the query. A save point is written
in one transaction (`BEGIN IMMEDIATE` ... `COMMIT`, `synchronous=FULL`: one flush of the WAL per commit), so a crash
leaves either all of a save point or nothing of it. Save points of other States that arrive while a commit is
being flushed share the next transaction, each in a savepoint of its own (group commit, `_stores/group.py`): a
thousand runs saving at once need far fewer flushes than save points, and a lone save point waits for nobody. The writer lock of a State is a byte-range lock in the file
`{path}-lock` (see `alpineagents._stores.locks`). `sqlite3` is imported by the first store that opens its file, so
that importing the package does not load it.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any

from alpineagents._stores.batch import Lines, already_saved_error, check_write, entries_to_add, not_saved_error
from alpineagents._stores.damage import check_count, damaged_store_error, not_a_store_error, not_json_error
from alpineagents._stores.disk import disk_full_error
from alpineagents._stores.group import GroupCommit, GroupCommitting, Job
from alpineagents._stores.lines import json_line, parse_all, parse_each
from alpineagents._stores.listing import Unlisted, listing, raise_damage, updated_key
from alpineagents._stores.locks import Release, at_fork_in_child, drop_lock, hold_lock, locked_error, settle_lock
from alpineagents._stores.paths import AtPath, check_path
from alpineagents._stores.runrows import RunPage, RunQuery, line_holds
from alpineagents._stores.runsql import Dialect, gone_query, search, stale_query, stale_rows, table_query, upsert_query
from alpineagents.state import check_id
from alpineagents.store import Entries, Info, Record, StateInfo, Store

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS alpine_states (
    id TEXT PRIMARY KEY, count INTEGER NOT NULL, info TEXT NOT NULL, updated TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS alpine_states_updated ON alpine_states (updated);
CREATE TABLE IF NOT EXISTS alpine_entries (
    state_id TEXT NOT NULL, seq INTEGER NOT NULL, line TEXT NOT NULL, PRIMARY KEY (state_id, seq)
) WITHOUT ROWID;
"""
_RUNS = Dialect(
    mark="?",
    runs="alpine_runs",
    states="alpine_states",
    entries="alpine_entries",
    hits="temp.alpine_hits",
    holds="alpine_holds(line, ?, ?)",
    find="instr",
    collate="",
    no_limit=-1,
)
"""The run list's table and search (`find_runs`, see `_stores/runsql.py`): `alpine_holds` is `line_holds`,
registered on the connection, so the content search folds case as Python does."""
_HEADER = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file."""
_TABLES = {"alpine_states": ("id", "count", "info", "updated"), "alpine_entries": ("state_id", "seq", "line")}


def _create_database(path: str) -> None:
    """Make a new store's database file at `path` whole: its tables are made, in WAL mode, in a file of its own
    beside it, which is then linked into place. So no process ever finds the store's file there but empty (which
    would read as "not a store", or as damage), even while several processes make the same new store at once: the
    first link wins and the others use its file."""
    import sqlite3  # here, not at the top: importing alpineagents does not load sqlite3

    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    new = f"{path}.new-{os.getpid()}-{threading.get_ident()}"
    os.close(os.open(new, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600))
    try:
        conn = sqlite3.connect(new, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(_SCHEMA)
            conn.execute("PRAGMA journal_mode=WAL")  # kept in the file's header
        finally:
            conn.close()
        with contextlib.suppress(FileExistsError):  # another process made the store first: its file is used
            os.link(new, path)
    finally:
        os.unlink(new)
    fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)  # the new name survives a power loss
    finally:
        os.close(fd)


_INHERITED: builtins.list[sqlite3.Connection] = []
"""Connections a forked child inherited: never used (SQLite forbids carrying a connection across a fork) and never
closed (closing could touch the parent's files), only kept from being garbage collected (which closes them)."""


class _Write(Job):
    """One `write` waiting for its group commit: the State, its entries, the info's text and sort key."""

    __slots__ = ("state_id", "entries", "info", "create", "key")

    def __init__(self, state_id: str, entries: Lines, info: tuple[str, str | None], create: bool, key: str) -> None:
        super().__init__()
        self.state_id = state_id
        self.entries = entries
        self.info = info
        self.create = create
        self.key = key


class _Refused(Exception):
    """A job's rows were refused in a group written without savepoints: the group is written again with them."""


_LOCK_FILES: dict[str, int] = {}  # lock file path -> the one descriptor this process keeps open on it
_LOCK_FILES_GUARD = threading.Lock()


def _lock_fd(path: str) -> int:
    with _LOCK_FILES_GUARD:
        fd = _LOCK_FILES.get(path)
        if fd is None:
            # Never closed: closing any descriptor of a file drops every POSIX lock the process has on it.
            fd = _LOCK_FILES[path] = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return fd


def _new_guard_in_child() -> None:
    global _LOCK_FILES_GUARD
    _LOCK_FILES_GUARD = threading.Lock()  # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_new_guard_in_child)


def _texts(conn: sqlite3.Connection, query: str, column: str, args: tuple[object, ...]) -> builtins.list[Any]:
    """The rows of `query` with `column` (put in place of `{}`) read as text; when a stored text is not UTF-8, that
    column is read as bytes instead (`CAST ... AS BLOB`), so that parsing it reports damaged data, not an error of
    the database. (Reading bytes always would cost a slower parse on every load.)"""
    import sqlite3  # loaded already: only a store that opened its file runs this

    try:
        return conn.execute(query.format(column), args).fetchall()
    except sqlite3.OperationalError as error:
        if "decode" not in str(error):
            raise
        return conn.execute(query.format(f"CAST({column} AS BLOB)"), args).fetchall()


def _offset(state_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(state_id.encode(), digest_size=7).digest(), "big")


def _sort_key(info: Mapping[str, Any]) -> str | None:
    """The listing's key (`updated_key`) as the text the `updated` column holds: UTC, to the microsecond."""
    at = updated_key(info)
    if at is None:
        return None
    if at.tzinfo is not None:
        at = at.astimezone(UTC).replace(tzinfo=None)
    return at.isoformat(timespec="microseconds")


class SQLiteStore(AtPath, GroupCommitting, Store):
    """A store that keeps many States in one SQLite file: each entry a row, each save point one transaction.

    `SQLiteStore(path)` takes the database file (created with its parent folders by the first save of a new
    State; construction does no I/O). `":memory:"` keeps the States in this object only. `list()` is one query,
    newest first. The stored JSON of each entry and of the info is the same as a `FileStore`'s, and it follows the
    same `Store` contract (`StateInfo`, `create`, `LookupError` for a deleted State, entries sent again skipped).
    Two `SQLiteStore`s for the same file are equal. Safe to use from many threads (one connection, used by one
    thread at a time); one process at a time writes a given State (see `alpineagents.store`).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._given = check_path(
            path,
            "SQLiteStore takes the path of a database file",
            "pass the file as a str or pathlib.Path",
            'store = SQLiteStore("runs.db")',
        )
        self._memory = self._given == ":memory:"
        self._conn: sqlite3.Connection | None = None
        self._tables_made = False  # whether the connection's database has this store's tables
        self._searching: sqlite3.Connection | None = None  # the connection the run search was set up on
        self._mutex = threading.RLock()
        self._refreshing = threading.Lock()  # one thread brings the run table up to date; the others wait for it
        self._group = GroupCommit(self._flush, "alpineagents-sqlite-commit")
        at_fork_in_child(self, SQLiteStore._forget_connection)

    def close(self) -> None:
        """Close the database connection (the next call opens it again)."""
        with self._mutex:
            if self._conn is not None and not self._memory:
                self._conn.close()
                self._conn = None

    # -- connection and errors ----------------------------------------------------------------------------------

    def _forget_connection(self) -> None:
        """In a forked child: the connection (of a file) and the mutex are the parent's; the next call opens its own
        connection. (A `:memory:` database lives in this process's memory: it stays.)"""
        self._mutex = threading.RLock()  # another thread of the parent may have held it at the fork
        self._refreshing = threading.Lock()
        self._group.forget_after_fork()
        if self._conn is not None and not self._memory:
            _INHERITED.append(self._conn)
            self._conn = None

    def _connect(self, *, create: bool) -> sqlite3.Connection | None:
        """The store's connection, opened on first use. Reading (`create=False`) never creates or changes a file: a
        missing file is `None`, and a file without this store's tables is refused as not a store (or as damaged,
        when this store wrote it). Only a write makes the file and the tables, and switches the file to WAL."""
        conn = self._conn
        if conn is None:
            if not self._memory and not self._check_file(create):
                return None
            conn = self._open()
        if not (create or self._memory or self._tables_made):
            conn.close()
            raise self._not_a_store(
                "it is a SQLite database without this store's tables (alpine_states, alpine_entries)"
            )
        if not self._tables_made:
            try:
                if not self._memory:
                    conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(_SCHEMA)
            except BaseException:
                if conn is not self._conn:
                    conn.close()
                raise
            self._tables_made = True
        self._conn = conn
        return conn

    def _check_file(self, create: bool) -> bool:
        """Whether the database file is there to open (a write creates it, with its parent folders).

        Raises:
            ValueError: The file is not a SQLite database; it is empty and was written by this store (damaged).
        """
        path = self._real()
        try:
            with open(path, "rb") as file:
                header = file.read(len(_HEADER))
        except FileNotFoundError:
            if not create:
                return False
            _create_database(path)
            return True
        except IsADirectoryError:
            raise self._not_a_store("it is a folder") from None
        if header == _HEADER:
            return True
        if header:
            raise self._not_a_store("the file is not a SQLite database")
        if os.path.exists(path + "-lock"):  # the lock file is made by this store's first write
            raise self._damaged("the file is empty (0 bytes), though this store wrote States in it")
        if not create:
            raise self._not_a_store("the file is empty")
        return True

    def _open(self) -> sqlite3.Connection:
        """A new connection, checked to hold this store's tables (or none of them, which only a write accepts)."""
        import sqlite3  # here, not at the top: importing alpineagents does not load sqlite3

        conn = sqlite3.connect(self._given, timeout=30.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA synchronous=FULL")
            self._tables_made = self._check_tables(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_tables(self, conn: sqlite3.Connection) -> bool:
        """Whether the database holds this store's tables. Tables of these names must be this store's (another
        program's table is damage, not I/O), and one without the other is damage too.

        Raises:
            ValueError: A table has other columns, or one of the two is missing.
        """
        found_tables: builtins.list[str] = []
        for table, columns in _TABLES.items():
            found = tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
            if found and found != columns:
                raise self._damaged(
                    f"its table {table} has the columns ({', '.join(found)}), not ({', '.join(columns)})"
                )
            if found:
                found_tables.append(table)
        if len(found_tables) == 1:
            (missing,) = set(_TABLES) - set(found_tables)
            raise self._damaged(f"it has the table {found_tables[0]} but not {missing}")
        return bool(found_tables)

    def _not_a_store(self, why: str) -> ValueError:
        return not_a_store_error(
            self._given,
            why,
            "point the store at the database file a SQLiteStore wrote, or at a new file for a new store",
            'store = SQLiteStore("runs.db")',
        )

    def _damaged(self, what: str) -> ValueError:
        return damaged_store_error(
            self,
            what,
            "restore the file from a backup, or point the store at a new file",
            'store = SQLiteStore("runs.db")',
        )

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's errors as this library's: a database that cannot be reached is an `OSError` (a full disk
        `ENOSPC`, no permission `EACCES`, else `EIO`); a damaged one the damaged `ValueError`."""
        import sqlite3  # loaded already: only a store that opened its file runs this

        try:
            yield
        except sqlite3.OperationalError as error:
            text = str(error)
            if "full" in text:
                raise disk_full_error(self, self._given, None, errno.ENOSPC) from error
            if "readonly" in text or "unable to open" in text:
                code = errno.EACCES
            else:
                code = errno.EIO
            raise OSError(code, f"{self!r} could not reach its database: {text}", self._given) from error
        except sqlite3.DatabaseError as error:
            raise self._damaged(str(error)) from error

    def _key(self, state_id: str) -> str:
        """The State's name among the writer locks of this process."""
        return f"sqlite:{self._real() if not self._memory else id(self)}:{state_id}"

    def _acquire(self, state_id: str) -> Release:
        """Take the State's byte-range lock in `{path}-lock`; what it returns releases it."""
        if self._memory:
            return lambda: None
        fd = _lock_fd(self._real() + "-lock")
        offset = _offset(state_id)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
        except OSError as error:
            if error.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise locked_error(state_id, self) from None
            raise
        return lambda: fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)

    @contextlib.contextmanager
    def _transaction(self, conn: sqlite3.Connection, begin: str) -> Iterator[None]:
        conn.execute(begin)
        try:
            yield
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- the role -----------------------------------------------------------------------------------------------

    def _job(self, state_id: str, entries: Entries, info: Info, create: bool) -> _Write:
        where = "SQLiteStore.write()"
        check_id(state_id, where)
        lines, checked = check_write(where, entries, info)
        return _Write(state_id, lines, (json_line(checked).decode(), _sort_key(checked)), create, self._key(state_id))

    def _flush(self, group: Sequence[Job]) -> None:
        """Write every job of a group commit in one transaction: one flush of the journal for all of them.

        A job that fails its own checks (all made before it writes a row) gets its error; the others are kept. A
        job whose rows the database then refuses (rare: a damaged database) would leave part of its write in the
        transaction, so the whole group is rolled back and written again with a savepoint per job, which lets only
        that job fail. (Savepoints for every group would cost two more statements per save point.) A lone job
        needs no savepoint: its transaction is rolled back.
        """
        jobs = [job for job in group if isinstance(job, _Write)]
        held: builtins.list[_Write] = []
        with self._mutex:
            try:
                with self._errors():
                    conn = self._connect(create=True)
                    assert conn is not None
                    try:
                        self._write_group(conn, jobs, held, savepoints=False)
                    except _Refused:
                        for job in jobs:
                            job.error = None
                        held.clear()
                        self._write_group(conn, jobs, held, savepoints=True)
            except Exception as error:
                if len(jobs) > 1:
                    raise
                jobs[0].error = error
            finally:
                for job in held:  # each lock is tied to the State its job was saving
                    settle_lock(job.key, job.saving)

    def _write_group(
        self, conn: sqlite3.Connection, jobs: builtins.list[_Write], held: builtins.list[_Write], *, savepoints: bool
    ) -> None:
        lone = len(jobs) == 1
        with self._transaction(conn, "BEGIN IMMEDIATE"):
            for job in jobs:
                if savepoints:
                    conn.execute("SAVEPOINT alpine_write")
                try:
                    self._write_one(conn, job, held)
                except Exception as error:
                    if savepoints:  # this job's own failure: the group goes on without it
                        conn.execute("ROLLBACK TO alpine_write")
                        job.error = error
                    elif lone:
                        raise
                    else:
                        raise _Refused from error
                if savepoints:
                    conn.execute("RELEASE alpine_write")

    def _write_one(self, conn: sqlite3.Connection, job: _Write, held: builtins.list[_Write]) -> None:
        """One job inside the group's transaction: its checks (a failure there is its own error, with nothing
        written), then its rows (a failure there is raised)."""
        try:
            with self._errors():
                hold_lock(job.key, lambda: self._acquire(job.state_id))
                held.append(job)
                have, new = self._lacking(conn, job)
        except Exception as error:
            job.error = error
            return
        with self._errors():
            if new:
                conn.executemany(
                    "INSERT INTO alpine_entries (state_id, seq, line) VALUES (?, ?, ?)",
                    [(job.state_id, seq, line.decode()) for seq, line in enumerate(new, have)],
                )
            conn.execute(
                "INSERT INTO alpine_states (id, count, info, updated) VALUES (?, ?, ?, ?)"
                if job.create
                else "UPDATE alpine_states SET count = ?, info = ?, updated = ? WHERE id = ?",
                (job.state_id, have + len(new), *job.info)
                if job.create
                else (have + len(new), *job.info, job.state_id),
            )

    def _lacking(self, conn: sqlite3.Connection, job: _Write) -> tuple[int, tuple[bytes, ...]]:
        """Inside the write's transaction, reading only: how many entries the database has for the State, and the
        lines of the job that it lacks.

        Raises:
            ValueError: A new State's id is saved already; the entries leave a gap or differ from saved ones.
            LookupError: The State is no longer saved.
        """
        state_id = job.state_id
        row = conn.execute("SELECT count FROM alpine_states WHERE id = ?", (state_id,)).fetchone()
        if job.create and row is not None:
            raise already_saved_error(state_id, self)
        if not job.create and row is None:
            raise not_saved_error(state_id, self)
        have = 0 if row is None else row[0]

        def saved_lines(start: int, end: int) -> dict[int, str | bytes]:
            query = "SELECT seq, {} FROM alpine_entries WHERE state_id = ? AND seq >= ? AND seq < ?"
            return dict(_texts(conn, query, "line", (state_id, start, end)))

        return have, entries_to_add(state_id, self, job.entries, have, saved_lines)

    def read(self, state_id: str) -> Record | None:
        """The saved entries and info of `state_id` (one consistent read), or `None`.

        Raises:
            ValueError: A stored entry or the info is not valid JSON, rows of the State are missing, or the
                database is damaged.
        """
        check_id(state_id, "SQLiteStore.read()")
        with self._mutex, self._errors():
            conn = self._connect(create=False)
            if conn is None:
                return None
            with self._transaction(conn, "BEGIN"):
                rows = _texts(conn, "SELECT count, {} FROM alpine_states WHERE id = ?", "info", (state_id,))
                row = rows[0] if rows else None
                lines: builtins.list[tuple[int, str | bytes]] = (
                    []
                    if row is None
                    else _texts(
                        conn, "SELECT seq, {} FROM alpine_entries WHERE state_id = ? ORDER BY seq", "line", (state_id,)
                    )
                )
        if row is None:
            return None
        check_count(state_id, self, len(lines), row[0])  # rows lost (deleted, or the table dropped and made again)
        return Record(self._parse_entries(state_id, lines), self._parse_info(state_id, row[1]))

    _fresh_read = read

    def _parse_info(self, state_id: str, text: str | bytes) -> Any:
        return parse_each(
            [(0, text)],
            lambda _, error: not_json_error(state_id, f"its info in {self!r}", error),
        )[0]

    def _parse_entries(self, state_id: str, rows: builtins.list[tuple[int, str | bytes]]) -> builtins.list[Any]:
        lines = [line for _, line in rows if type(line) is str]
        if len(lines) == len(rows):  # texts (not the bytes of a text that is not UTF-8)
            if lines:  # brackets on the first and last line: one join, no copy of the whole text
                lines[0] = "[" + lines[0]
                lines[-1] = lines[-1] + "]"
            values = parse_all(",".join(lines) if lines else "[]", len(rows))
            if values is not None:
                return values
        return parse_each(
            rows,
            lambda seq, error: not_json_error(state_id, f"entry {seq} in {self!r}", error),
        )

    def list(self) -> builtins.list[StateInfo]:
        """One `StateInfo` per saved State (one query): newest `updated_at` first, States with no history last,
        ties by id.

        Raises:
            ValueError: An info is not valid JSON, is from another format version, or misses a key.
        """
        return raise_damage(self.survey())

    def survey(self) -> builtins.list[StateInfo | Unlisted]:
        """`list()`, with each State whose info cannot be read reported as an `Unlisted` (after the others, by id)
        instead of raising, so one damaged State does not hide the rest."""
        with self._mutex, self._errors():
            conn = self._connect(create=False)
            if conn is None:
                return []
            rows = _texts(
                conn, "SELECT id, {} FROM alpine_states ORDER BY updated IS NULL, updated DESC, id", "info", ()
            )
        return listing(rows, lambda state_id, text: StateInfo.from_info(state_id, self._parse_info(state_id, text)))

    def find_runs(self, query: RunQuery) -> RunPage:
        """One page of the runs that `query` finds (the optional search capability `runrows.FindsRuns`): the rows
        of the run list are kept in the table `alpine_runs`, brought up to date first (see `_stores/runsql.py`).

        Raises:
            ValueError: The database is damaged.
            OSError: The database cannot be reached (`PermissionError` when it cannot be written: the run table
                cannot be made or updated).
        """
        with self._refreshing:  # two searches at once (the viewer's warm-up and a first page) compute rows once
            return self._find_runs(query)

    def _find_runs(self, query: RunQuery) -> RunPage:
        with self._mutex, self._errors():
            conn = self._search_connection()
            if conn is None:
                return RunPage([], 0, 0)
            query_text = stale_query(_RUNS).replace("SELECT s.id, s.count, s.info", "SELECT s.id, s.count, {}")
            stale = _texts(conn, query_text, "s.info", ())
            gone = conn.execute(gone_query(_RUNS, delete=False)).fetchone()[0]
        rows = stale_rows(self, stale, self._parse_info, self._entries_of)
        with self._mutex, self._errors():
            conn = self._search_connection()
            if conn is None:  # the file was removed meanwhile
                return RunPage([], 0, 0)
            if rows or gone:  # the write lock only when something changed
                with self._transaction(conn, "BEGIN IMMEDIATE"):
                    conn.executemany(upsert_query(_RUNS), rows)
                    conn.execute(gone_query(_RUNS))
            with self._transaction(conn, "BEGIN"):
                return search(_RUNS, lambda sql, args: conn.execute(sql, args).fetchall(), query)

    def _entries_of(self, ids: Sequence[str]) -> builtins.list[tuple[str, int, str | bytes]]:
        """The entry rows (state id, seq, line) of these States, ordered by State and seq (one query)."""
        if not ids:
            return []
        with self._mutex, self._errors():
            conn = self._connect(create=False)
            if conn is None:
                return []
            marks = ", ".join("?" * len(ids))
            query = f"SELECT state_id, seq, {{}} FROM alpine_entries WHERE state_id IN ({marks}) ORDER BY state_id, seq"
            return _texts(conn, query, "line", tuple(ids))

    def _search_connection(self) -> sqlite3.Connection | None:
        """The connection, with the run table, the search's temporary table and its text match set up on it (once
        per connection); `None` when there is no database file."""
        conn = self._connect(create=False)
        if conn is not None and self._searching is not conn:
            conn.execute(table_query(_RUNS, "REAL") + " WITHOUT ROWID")
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS alpine_hits (id TEXT PRIMARY KEY) WITHOUT ROWID")
            conn.create_function("alpine_holds", 3, line_holds, deterministic=True)
            self._searching = conn
        return conn

    def delete(self, state_id: str) -> None:
        """Remove the State's rows in one transaction; nothing happens when it does not exist.

        Raises:
            StateLockedError: Another process is writing this State.
        """
        check_id(state_id, "SQLiteStore.delete()")
        key = self._key(state_id)
        with self._mutex, self._errors():
            conn = self._connect(create=False)
            if conn is None:
                return
            hold_lock(key, lambda: self._acquire(state_id))
            try:
                with self._transaction(conn, "BEGIN IMMEDIATE"):
                    conn.execute("DELETE FROM alpine_entries WHERE state_id = ?", (state_id,))
                    conn.execute("DELETE FROM alpine_states WHERE id = ?", (state_id,))
            finally:
                drop_lock(key)
