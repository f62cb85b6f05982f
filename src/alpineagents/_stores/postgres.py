"""`PostgresStore`: States kept in PostgreSQL (its public home, with the user's documentation: `alpineagents.postgres`).

The tables, the save point's two round trips, the advisory locks, PgBouncer and forks are described there."""

from __future__ import annotations

import builtins
import collections
import contextlib
import contextvars
import errno
import hashlib
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, LiteralString, TypeVar

from alpineagents._install import install_hint
from alpineagents._stores import batch, damage, lines, locks
from alpineagents._stores.listing import Unlisted, listing, updated_key
from alpineagents._stores.runrows import RunPage, RunQuery
from alpineagents._stores.runsql import Dialect, gone_query, search, stale_query, stale_rows, table_query, upsert_query
from alpineagents.errors import fix_message
from alpineagents.state import check_id
from alpineagents.store import Record, StateInfo, Store

if TYPE_CHECKING:
    import psycopg
    from psycopg.sql import Composed
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresStore", "SCHEMA_VERSION"]

_T = TypeVar("_T")

SCHEMA_VERSION = 1
"""The newest schema this code knows; a database with a newer one is refused."""

_MIGRATIONS: dict[int, LiteralString] = {
    1: """
CREATE TABLE {schema}.states (
    id TEXT PRIMARY KEY, count INTEGER NOT NULL, info TEXT NOT NULL, updated TIMESTAMPTZ
);
CREATE INDEX states_updated ON {schema}.states (updated DESC NULLS LAST, id);
CREATE TABLE {schema}.entries (
    state_id TEXT NOT NULL, seq INTEGER NOT NULL, line TEXT NOT NULL, PRIMARY KEY (state_id, seq)
);
""",
}

_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 6}
_IDLE_KEPT = 8
"""At most this many idle connections kept open per store (a connection string; a pool keeps its own)."""


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(
            fix_message(
                "PostgresStore needs psycopg 3, which is not installed",
                "install the extra: " + install_hint("postgres"),
                'store = PostgresStore("postgresql://app@localhost/agents")',
            )
        ) from None
    return psycopg


_SYSTEM_SCHEMAS = frozenset({"information_schema"})
"""The system schema PostgreSQL makes itself besides the `pg_*` ones (`pg_catalog`, `pg_toast`, ...), whose prefix it
reserves: never a store's own."""
_MAX_NAME_BYTES = 63
"""PostgreSQL cuts longer names to this many bytes (NAMEDATALEN - 1), so two longer names would share one schema."""


def _check_schema(schema: object) -> None:
    """A schema name this store may create and own: a plain lowercase identifier of at most 63 bytes, neither
    reserved by PostgreSQL (`pg_*`) nor one of its system schemas.

    Raises:
        ValueError: The name is not one of those (with what was wrong).
    """
    example = 'store = PostgresStore(dsn, schema="agents")'
    if not isinstance(schema, str) or not schema.isidentifier() or schema != schema.lower() or not schema.isascii():
        problem = f"PostgresStore takes a schema name of lowercase letters, digits and underscores (got: {schema!r})"
        raise ValueError(fix_message(problem, "pass a plain identifier", example))
    size = len(schema.encode())
    if size > _MAX_NAME_BYTES:
        raise ValueError(
            fix_message(
                f"PostgresStore got a schema name of {size} bytes ({schema[:20]!r}...), and PostgreSQL cuts names "
                f"to {_MAX_NAME_BYTES} bytes, so two such names would share one schema",
                f"pass a name of at most {_MAX_NAME_BYTES} characters",
                example,
            )
        )
    if schema.startswith("pg_") or schema in _SYSTEM_SCHEMAS:
        kind = "reserved by PostgreSQL for its own schemas" if schema.startswith("pg_") else "a system schema"
        raise ValueError(
            fix_message(
                f"PostgresStore cannot keep its tables in the schema {schema!r}: it is {kind}",
                "pass a schema of the store's own (the default is alpineagents)",
                example,
            )
        )


def _lock_key(schema: str, state_id: str) -> int:
    """The advisory lock key of a State: a signed 64-bit hash of its schema and id."""
    digest = hashlib.blake2b(f"{schema}\0{state_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _display(conninfo: str) -> str:
    """The connection string as repr and error texts show it: never a password."""
    try:
        params = _psycopg().conninfo.conninfo_to_dict(conninfo)
    except Exception:
        return "<unparsable conninfo>"
    params.pop("password", None)
    shown = " ".join(f"{key}={value}" for key, value in sorted(params.items()) if value is not None)
    return shown or "(libpq defaults)"


def _neuter(conn: psycopg.Connection[Any]) -> None:
    """Make an inherited connection harmless in a forked child: its socket now points at /dev/null, so closing or
    collecting it never sends anything on the parent's session."""
    with contextlib.suppress(Exception):
        fd = conn.pgconn.socket
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, fd)
        os.close(devnull)


class _Locks:
    """The store's lock connection and the advisory locks this process holds on it.

    `take` runs on the calling thread. `give_back` never waits: a State's lock may be given back by the garbage
    collector on any thread, in the middle of anything (even while another lock is being taken), so it only notes
    the key, and a keeper thread sends the unlock.
    """

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._mutex = threading.Lock()
        self._pending: collections.deque[int] = collections.deque()
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.conn: psycopg.Connection[Any] | None = None
        self.pid: int | None = None
        """The server process id of the lock connection (None until it is open)."""

    def take(self, key: int) -> bool:
        """Take the lock `key` on the lock connection: True when this process has it now."""
        with self._mutex:
            self._flush()
            try:
                return self._ask("pg_try_advisory_lock", key)
            except Exception:
                # The connection died (a restarted server, a killed session): its locks went with it, so taking
                # this one again on a new connection is right.
                self._drop()
                return self._ask("pg_try_advisory_lock", key)

    def give_back(self, key: int) -> None:
        self._pending.append(key)
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._keep, name="alpineagents-pg-locks", daemon=True)
            self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        """Send the unlocks still due, close the lock connection (its locks go with it), end the keeper thread."""
        self._stopped = True
        self._wake.set()
        if self._thread is None:
            with self._mutex:
                self._drop()

    def _keep(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            with self._mutex:
                self._flush()
                if self._stopped:
                    self._drop()
                    return

    def _flush(self) -> None:
        while self._pending:
            key = self._pending.popleft()
            if self.conn is None or self.conn.closed:
                continue  # a lock on a connection that is gone is free already
            try:
                self._ask("pg_advisory_unlock", key)
            except Exception:
                self._drop()

    def _ask(self, function: str, key: int) -> bool:
        if self.conn is None or self.conn.closed:
            self.conn = _open(self._conninfo)
            self.pid = self.conn.info.backend_pid
        query = (
            "SELECT pg_try_advisory_lock(%s)" if function == "pg_try_advisory_lock" else "SELECT pg_advisory_unlock(%s)"
        )
        row = self.conn.execute(query, (key,)).fetchone()
        return bool(row and row[0])

    def _drop(self) -> None:
        conn, self.conn, self.pid = self.conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's lock connection, locks and keeper are not ours."""
        if self.conn is not None:
            _neuter(self.conn)
        self.conn, self.pid, self._thread = None, None, None
        self._mutex = threading.Lock()
        self._pending.clear()
        self._wake = threading.Event()


_IN_PIPELINE: contextvars.ContextVar[bool] = contextvars.ContextVar("alpineagents_pg_pipeline", default=False)


class _QuietLostPipeline(logging.Filter):
    """Drops psycopg's "error ignored terminating <Pipeline [BAD]>" warning for this store's own pipelines: when the
    connection dies inside one (a restarted server), the error raised in the block is what the store reports (or
    recovers from by sending the write again), and the second error psycopg meets while closing the dead pipeline
    says nothing more. Other pipelines of the process, and every other message, are left alone."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_IN_PIPELINE.get() and record.msg == "error ignored terminating %r: %s")


_QUIET = _QuietLostPipeline()


@contextlib.contextmanager
def _pipeline(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """`conn.pipeline()`, without psycopg's warning when the connection is lost inside it (see _QuietLostPipeline)."""
    logger = logging.getLogger("psycopg")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)
    token = _IN_PIPELINE.set(True)
    try:
        with conn.pipeline():
            yield
    finally:
        _IN_PIPELINE.reset(token)


def _open(conninfo: str) -> psycopg.Connection[Any]:
    """A new connection: autocommit (transactions are opened by the statements sent), no server-side prepared
    statements (PgBouncer in transaction mode), TCP keepalives unless the conninfo sets its own."""
    psycopg = _psycopg()
    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    extra = {key: value for key, value in _KEEPALIVES.items() if key not in params}
    return psycopg.connect(conninfo, prepare_threshold=None, autocommit=True, **extra)


def _release(locks: _Locks, idle: builtins.list[psycopg.Connection[Any]]) -> None:
    locks.stop()
    for conn in idle[:]:
        with contextlib.suppress(Exception):
            conn.close()
    idle.clear()


class PostgresStore(Store):
    """A store that keeps States in PostgreSQL: each entry a row, each save point one transaction.

    `PostgresStore(conninfo_or_pool, *, schema="alpineagents", create=True, lock_conninfo=None)` takes a libpq
    connection string (or URL), or a `psycopg_pool.ConnectionPool` to borrow connections from (never closed by
    the store). `schema` names the PostgreSQL schema that holds the tables; `create=True` creates it and applies
    the migrations it lacks on first use (under an advisory lock, so processes starting at once do not race);
    with `create=False` a missing or older schema is an error. Construction does no I/O.

    It follows the `Store` contract exactly like `SQLiteStore`: the same stored JSON, `StateInfo`, `create`,
    `LookupError` for a deleted State, entries sent again skipped, damaged data refused. Two stores for the same
    database address and schema are equal. Safe to use from many threads and many processes; one process at a
    time writes a given State (`StateLockedError` for the others).
    """

    def __init__(
        self,
        conninfo_or_pool: str | ConnectionPool[Any],
        *,
        schema: str = "alpineagents",
        create: bool = True,
        lock_conninfo: str | None = None,
    ) -> None:
        _psycopg()
        _check_schema(schema)
        if isinstance(conninfo_or_pool, str):
            self._pool: ConnectionPool[Any] | None = None
            self._conninfo = conninfo_or_pool
        elif hasattr(conninfo_or_pool, "connection") and hasattr(conninfo_or_pool, "conninfo"):
            self._pool = conninfo_or_pool
            self._conninfo = str(conninfo_or_pool.conninfo)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        else:
            raise TypeError(
                fix_message(
                    "PostgresStore takes a connection string or a psycopg_pool.ConnectionPool "
                    f"(got: {type(conninfo_or_pool).__name__})",
                    "pass the database address",
                    'store = PostgresStore("postgresql://app@localhost/agents")',
                )
            )
        self._lock_conninfo = lock_conninfo or self._conninfo
        self._schema = schema
        self._create = create
        self._queries: dict[str, Composed] = {}
        self._shown = _display(self._conninfo)
        self._idle: builtins.list[psycopg.Connection[Any]] = []
        self._idle_guard = threading.Lock()
        self._ready = False
        self._ready_guard = threading.Lock()
        self._locks = _Locks(self._lock_conninfo)
        self._runs = Dialect(
            mark="%s",
            runs=f'"{schema}".runs',
            states=f'"{schema}".states',
            entries=f'"{schema}".entries',
            hits="alpine_hits",
            holds="(strpos(lower(line), %s) > 0 OR strpos(lower(line), %s) > 0)",
            find="strpos",
            collate='COLLATE "C"',
            no_limit=None,
            exact=False,
        )
        self._runs_made = False
        self._refreshing = threading.Lock()  # one thread brings the run table up to date; the others wait for it
        locks.at_fork_in_child(self, PostgresStore._forget_after_fork)
        # A store nobody holds any more closes its connections (their locks go with them) and ends its thread.
        weakref.finalize(self, _release, self._locks, self._idle)

    def __repr__(self) -> str:
        return f"PostgresStore({self._shown!r}, schema={self._schema!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PostgresStore):
            return NotImplemented
        return (self._shown, self._schema) == (other._shown, other._schema)

    def __hash__(self) -> int:
        return hash((self._shown, self._schema))

    def _q(self, template: LiteralString) -> Composed:
        """The query `template` with `{schema}` naming this store's schema (quoted as an identifier), made once."""
        query = self._queries.get(template)
        if query is None:
            sql = _psycopg().sql
            query = self._queries[template] = sql.SQL(template).format(schema=sql.Identifier(self._schema))
        return query

    def close(self) -> None:
        """Close the idle connections this store opened (a pool passed in stays open); the next call opens new
        ones. The lock connection stays: the States this process writes keep their locks."""
        with self._idle_guard:
            idle = self._idle[:]
            self._idle.clear()
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()

    # -- connections --------------------------------------------------------------------------------------------

    def _forget_after_fork(self) -> None:
        for conn in self._idle:
            _neuter(conn)
        self._idle.clear()
        self._idle_guard = threading.Lock()
        self._ready_guard = threading.Lock()
        self._refreshing = threading.Lock()
        self._locks.forget_after_fork()

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for one transaction: borrowed from the pool, or from this store's idle ones."""
        with self._errors():
            if self._pool is not None:
                with self._pool.connection() as conn:
                    autocommit, conn.autocommit = conn.autocommit, True  # given back to the pool as it came
                    conn.prepare_threshold = None
                    try:
                        self._prepare(conn)
                        yield conn
                    finally:
                        if not conn.closed and conn.info.transaction_status == 0:
                            conn.autocommit = autocommit
                return
            with self._idle_guard:
                conn = self._idle.pop() if self._idle else None
            if conn is None or conn.closed:
                conn = _open(self._conninfo)
            try:
                self._prepare(conn)
                yield conn
            except BaseException:
                with contextlib.suppress(Exception):
                    conn.close()
                raise
            if conn.broken or conn.closed or conn.info.transaction_status != 0:  # 0: idle, no transaction open
                with contextlib.suppress(Exception):
                    conn.close()
                return
            with self._idle_guard:
                if len(self._idle) < _IDLE_KEPT:
                    self._idle.append(conn)
                    return
            conn.close()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        psycopg = _psycopg()
        try:
            yield
        except psycopg.OperationalError as error:
            raise OSError(errno.EIO, f"{self!r} could not reach its database: {_first_line(error)}") from error
        except psycopg.errors.DataError as error:
            raise damage.damaged_store_error(
                self,
                _first_line(error),
                "restore the database from a backup, or use another schema",
                'store = PostgresStore(dsn, schema="agents_new")',
            ) from error

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        """Create the schema or check its version, once per store object."""
        if self._ready:
            return
        with self._ready_guard:
            if self._ready:
                return
            self._migrate(conn)
            self._ready = True

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        schema = self._schema
        with conn.transaction():
            if self._create:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(schema, "\0migrations"),))
                conn.execute(self._q("CREATE SCHEMA IF NOT EXISTS {schema}"))
                conn.execute(
                    self._q(
                        "CREATE TABLE IF NOT EXISTS {schema}.schema_version "
                        "(version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                    )
                )
            exists = conn.execute("SELECT to_regclass(%s)", (f"{schema}.schema_version",)).fetchone()
            have = 0
            if exists and exists[0] is not None:
                row = conn.execute(self._q("SELECT coalesce(max(version), 0) FROM {schema}.schema_version")).fetchone()
                have = int(row[0]) if row else 0
            if have > SCHEMA_VERSION:
                raise ValueError(
                    fix_message(
                        f"the schema {schema!r} of {self!r} is at version {have}, newer than this alpineagents "
                        f"knows (version {SCHEMA_VERSION})",
                        "upgrade alpineagents in this process",
                        install_hint("postgres"),
                    )
                )
            if have < SCHEMA_VERSION and not self._create:
                raise ValueError(
                    fix_message(
                        f"the schema {schema!r} of {self!r} is at version {have}, and this alpineagents needs "
                        f"version {SCHEMA_VERSION}",
                        "let the store create or upgrade it with create=True (the default)",
                        f'store = PostgresStore(dsn, schema="{schema}", create=True)',
                    )
                )
            for version in range(have + 1, SCHEMA_VERSION + 1):
                conn.execute(self._q(_MIGRATIONS[version]))
                conn.execute(self._q("INSERT INTO {schema}.schema_version (version) VALUES (%s)"), (version,))

    # -- locks --------------------------------------------------------------------------------------------------

    def _lock_name(self, state_id: str) -> str:
        return f"postgres:{self._shown}:{self._schema}:{state_id}"

    def _hold(self, name: str, state_id: str) -> None:
        """Make sure this process holds the State's lock (asking the database the first time)."""
        key = _lock_key(self._schema, state_id)

        def ask() -> Callable[[], None]:
            with self._errors():
                taken = self._locks.take(key)
            if not taken:
                raise locks.locked_error(state_id, self)
            return lambda: self._locks.give_back(key)

        locks.hold_after_asking(name, ask)

    def _lock_held(self, conn: psycopg.Connection[Any], state_id: str) -> Any:
        """A query (sent with the write, no extra round trip) telling whether the lock connection still holds the
        State's lock: after a lost lock connection, the write takes the lock again before it writes."""
        key = _lock_key(self._schema, state_id) & 0xFFFFFFFFFFFFFFFF
        return conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = %s "
            "AND classid = %s AND objid = %s AND objsubid = 1 AND granted)",
            (self._locks.pid, key >> 32, key & 0xFFFFFFFF),
        )

    # -- the role -----------------------------------------------------------------------------------------------

    def write(
        self,
        state_id: str,
        entries: Sequence[dict[str, Any]],
        info: Mapping[str, Any],
        *,
        create: bool = False,
    ) -> None:
        """Add the entries the database lacks and replace the info, in one transaction.

        Raises:
            ValueError: `create=True` and the id exists; the entries leave a gap or differ from saved ones.
            LookupError: `create=False` and the id does not exist.
            StateLockedError: Another process is writing this State.
            OSError: The database could not be reached; nothing of this write is kept (send it again).
        """
        check_id(state_id, "PostgresStore.write()")
        encoded, checked = batch.check_write("PostgresStore.write()", entries, info)
        name = self._lock_name(state_id)
        self._hold(name, state_id)
        try:
            for attempt in (1, 2):
                if self._again_if_lost(lambda again: self._write(state_id, encoded, checked, create, again)):
                    return
                if attempt == 2:
                    raise locks.locked_error(state_id, self)
                # The lock connection lost the lock (it was closed, or the server restarted): take it again.
                locks.drop_lock(name)
                self._hold(name, state_id)
        finally:
            locks.settle_lock(name, locks.SAVING.get())

    def _again_if_lost(self, action: Callable[[bool], _T]) -> _T:
        """`action(False)`; when its connection was lost (a killed session, a restarted server), `action(True)` on
        a new connection. Sending a write again is safe: entries the database has are skipped when identical."""
        try:
            return action(False)
        except OSError as error:
            if not isinstance(error.__cause__, _psycopg().OperationalError):
                raise
            self.close()  # the idle connections are most likely gone too
            return action(True)

    def _write(self, state_id: str, entries: batch.Lines, info: dict[str, Any], create: bool, again: bool) -> bool:
        """One transaction; False (nothing written) when this process no longer holds the State's lock. `again`:
        this is the same write sent again after a lost connection, so a create may find its own first attempt."""
        info_text = lines.json_line(info).decode()
        updated = updated_key(info)
        with self._connection() as conn:
            with _pipeline(conn):  # round trip 1: open the transaction, check the lock, read (or create) the row
                conn.execute("BEGIN")
                held = self._lock_held(conn, state_id)
                if create and not again:
                    row_query = conn.execute(
                        self._q(
                            "INSERT INTO {schema}.states (id, count, info, updated) VALUES (%s, 0, %s, %s) "
                            "ON CONFLICT (id) DO NOTHING RETURNING count"
                        ),
                        (state_id, info_text, updated),
                    )
                else:  # on a create sent again, a row that is there must hold these very entries (checked below)
                    row_query = conn.execute(
                        self._q("SELECT count FROM {schema}.states WHERE id = %s FOR UPDATE"), (state_id,)
                    )
            try:
                if not held.fetchone()[0]:  # pyright: ignore[reportOptionalSubscript]
                    conn.execute("ROLLBACK")
                    return False
                have = self._have(state_id, row_query.fetchone(), create and not again)
                new = self._new_entries(conn, state_id, entries, have)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            with _pipeline(conn):  # round trip 2: the new entries, the row, the commit
                if new:
                    conn.cursor().executemany(
                        self._q("INSERT INTO {schema}.entries (state_id, seq, line) VALUES (%s, %s, %s)"),
                        [(state_id, seq, line.decode()) for seq, line in enumerate(new, have)],
                    )
                conn.execute(
                    self._q("UPDATE {schema}.states SET count = %s, info = %s, updated = %s WHERE id = %s"),
                    (have + len(new), info_text, updated, state_id),
                )
                conn.execute("COMMIT")
        return True

    def _new_entries(
        self, conn: psycopg.Connection[Any], state_id: str, entries: batch.Lines, have: int
    ) -> tuple[bytes, ...]:
        """The entries the database lacks; those it has must be the very same (a batch sent again)."""

        def saved_lines(start: int, end: int) -> dict[int, str]:
            query = self._q("SELECT seq, line FROM {schema}.entries WHERE state_id = %s AND seq >= %s AND seq < %s")
            return dict(conn.execute(query, (state_id, start, end)).fetchall())

        return batch.entries_to_add(state_id, self, entries, have, saved_lines)

    def _have(self, state_id: str, row: tuple[int, ...] | None, create: bool) -> int:
        """How many entries the database has for the State (0 for a new one), or the create/lookup error."""
        if create and row is None:
            raise batch.already_saved_error(state_id, self)
        if row is None:
            raise batch.not_saved_error(state_id, self)
        return int(row[0])

    def read(self, state_id: str) -> Record | None:
        """The saved entries and info of `state_id` (one query, one consistent snapshot), or `None`.

        Raises:
            ValueError: The saved State is damaged: an entry or the info is not valid JSON, or the entries do not
                add up to the count the State's row records.
        """
        check_id(state_id, "PostgresStore.read()")
        row = self._again_if_lost(lambda again: self._read_row(state_id))
        if row is None:
            return None
        count, info_text, n, lo, hi, body = row
        if count and n == count and (lo != 0 or hi != count - 1):
            n = -1  # as many rows, but not the positions 0 to count - 1: some are lost
        damage.check_count(state_id, self, n, count)  # rows lost (deleted, or the table dropped and made again)
        info = self._info(state_id, info_text)
        entries = lines.parse_all(f"[{body or ''}]", count)
        if entries is None:  # a damaged line: read them one by one to name it
            entries = lines.parse_each(
                self._lines(state_id), lambda seq, error: self._not_json(state_id, f"entry {seq}", error)
            )
            if any(type(entry) is not dict for entry in entries):
                raise damage.damaged_error(state_id, f"an entry in {self!r} is not a JSON object")
        return Record(entries, info)

    def _not_json(self, state_id: str, what: str, error: ValueError) -> ValueError:
        return damage.not_json_error(state_id, f"{what} in {self!r}", error)

    def _lines(self, state_id: str) -> builtins.list[tuple[int, str]]:
        with self._connection() as conn:
            query = self._q("SELECT seq, line FROM {schema}.entries WHERE state_id = %s ORDER BY seq")
            return conn.execute(query, (state_id,)).fetchall()

    def _read_row(self, state_id: str) -> Any:
        with self._connection() as conn:
            row = conn.execute(
                self._q(
                    "SELECT s.count, s.info, e.n, e.lo, e.hi, e.body FROM {schema}.states s LEFT JOIN LATERAL "
                    "(SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi, string_agg(line, ',' ORDER BY seq) AS body "
                    "FROM {schema}.entries WHERE state_id = s.id) e ON true WHERE s.id = %s"
                ),
                (state_id,),
            ).fetchone()
        return row

    def _info(self, state_id: str, text: str) -> Any:
        return lines.parse_each([(0, text)], lambda _, error: self._not_json(state_id, "its info", error))[0]

    def list(self) -> builtins.list[StateInfo]:
        """One `StateInfo` per saved State (one query): newest `updated_at` first, States with no history last,
        ties by id.

        Raises:
            ValueError: An info is not valid JSON, is from another format version, or misses a key.
        """
        rows = self._again_if_lost(lambda again: self._list_rows())
        infos = lines.parse_all(f"[{','.join(text for _, text in rows)}]", len(rows))  # one parse for all rows
        if infos is None:  # an info that is not a JSON object: read them one by one to name it
            infos = [self._info(state_id, text) for state_id, text in rows]
        return [StateInfo.from_info(state_id, info) for (state_id, _), info in zip(rows, infos, strict=True)]

    def survey(self) -> builtins.list[StateInfo | Unlisted]:
        """`list()`, with each State whose info cannot be read reported as an `Unlisted` (after the others, by id)
        instead of raising, so one damaged State does not hide the rest."""
        rows = self._again_if_lost(lambda again: self._list_rows())
        return listing(rows, lambda state_id, text: StateInfo.from_info(state_id, self._info(state_id, text)))

    def _delete(self, state_id: str) -> None:
        with self._connection() as conn, conn.transaction():
            conn.execute(self._q("DELETE FROM {schema}.entries WHERE state_id = %s"), (state_id,))
            conn.execute(self._q("DELETE FROM {schema}.states WHERE id = %s"), (state_id,))

    def _list_rows(self) -> builtins.list[tuple[str, str]]:
        with self._connection() as conn:
            rows = conn.execute(
                self._q("SELECT id, info FROM {schema}.states ORDER BY updated DESC NULLS LAST, id")
            ).fetchall()
        return rows

    def find_runs(self, query: RunQuery) -> RunPage:
        """One page of the runs that `query` finds (the optional search capability `runrows.FindsRuns`): the rows
        of the run list are kept in the table `runs` of the store's schema (made on the first search, outside the
        schema's versions, so older versions still open it), brought up to date first (see `_stores/runsql.py`).

        Raises:
            PermissionError: The run table cannot be made or written with this role.
            OSError: The database cannot be reached.
        """
        try:
            return self._again_if_lost(lambda again: self._find_runs(query))
        except _psycopg().errors.InsufficientPrivilege as error:
            raise PermissionError(errno.EACCES, f"{self!r} may not keep its run table: {_first_line(error)}") from error

    def _find_runs(self, query: RunQuery) -> RunPage:
        sql = _psycopg().sql.SQL
        with self._refreshing:  # two searches at once (the viewer's warm-up and a first page) compute rows once
            self._refresh_runs()
        with self._connection() as conn, conn.transaction():
            conn.execute("CREATE TEMP TABLE alpine_hits (id TEXT PRIMARY KEY) ON COMMIT DROP")

            def execute(text: str, args: Sequence[Any]) -> builtins.list[tuple[Any, ...]]:
                cursor = conn.execute(sql(text), args)
                return cursor.fetchall() if cursor.description is not None else []

            return search(self._runs, execute, query)

    def _refresh_runs(self) -> None:
        """Bring the run table up to date: the rows of States that changed or are new computed, those of deleted
        States removed."""
        sql = _psycopg().sql.SQL
        with self._connection() as conn:
            if not self._runs_made:
                conn.execute(sql(table_query(self._runs, "DOUBLE PRECISION")))
                self._runs_made = True
            stale = conn.execute(sql(stale_query(self._runs))).fetchall()
            gone = conn.execute(sql(gone_query(self._runs, delete=False))).fetchone()
        rows = stale_rows(self, stale, self._info, self._entries_of)
        if rows or (gone and gone[0]):
            with self._connection() as conn, conn.transaction():
                if rows:
                    conn.cursor().executemany(sql(upsert_query(self._runs)), rows)
                conn.execute(sql(gone_query(self._runs)))

    def _entries_of(self, ids: Sequence[str]) -> builtins.list[tuple[str, int, str]]:
        """The entry rows (state id, seq, line) of these States, ordered by State and seq (one query)."""
        if not ids:
            return []
        with self._connection() as conn:
            query = self._q(
                "SELECT state_id, seq, line FROM {schema}.entries WHERE state_id = ANY(%s) ORDER BY state_id, seq"
            )
            return conn.execute(query, (builtins.list(ids),)).fetchall()

    def delete(self, state_id: str) -> None:
        """Remove the State's rows in one transaction; nothing happens when it does not exist.

        Raises:
            StateLockedError: Another process is writing this State.
        """
        check_id(state_id, "PostgresStore.delete()")
        name = self._lock_name(state_id)
        self._hold(name, state_id)
        try:
            self._again_if_lost(lambda again: self._delete(state_id))
        finally:
            locks.drop_lock(name)


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
