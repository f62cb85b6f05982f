"""PostgresStore against a real PostgreSQL server: what only this store has (the contract every store keeps is
checked for all stores together in test_store.py).

Locks held by other processes, the lock freed when its holder is killed, connections killed and the server
restarted between two save points, migrations, pools, passwords kept out of texts, forks.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from alpineagents.agent import Agent
from alpineagents.postgres import SCHEMA_VERSION, PostgresStore
from alpineagents.state import State
from alpineagents.store import FileStore, StateLockedError
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message
from conftest import task
from helpers import pgserver

ROOT = Path(__file__).resolve().parent.parent


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def agent_for(store: PostgresStore, *script: Any) -> Agent:
    return Agent(FakeModel(list(script)), tools=[add], store=store, reporter=None, human=None)


def lines_in(dsn: str, schema: str, state_id: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(f"SELECT line FROM {schema}.entries WHERE state_id = %s ORDER BY seq", (state_id,))
        return [row[0] for row in rows.fetchall()]


def child(dsn: str, schema: str, body: str) -> subprocess.Popen[str]:
    """A Python process that opens the same store as `store` and runs `body` (prints what the test waits for)."""
    code = textwrap.dedent(
        f"""
        import sys, time
        from alpineagents.postgres import PostgresStore
        from alpineagents.store import StateLockedError
        store = PostgresStore({dsn!r}, schema={schema!r})
        """
    ) + textwrap.dedent(body)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def read_line(process: subprocess.Popen[str], deadline: float = 30.0) -> str:
    """The child's next line of output, within `deadline` seconds."""
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(deadline)
    if not found:
        process.kill()
        raise AssertionError(f"the child printed nothing within {deadline} s: {process.stderr.read()}")  # type: ignore[union-attr]
    if not found[0]:
        process.wait(10)
        raise AssertionError(f"the child ended: {process.stderr.read()}")  # type: ignore[union-attr]
    return found[0].strip()


# -- the saved form ---------------------------------------------------------------------------------------------


def test_a_run_saved_in_postgres_loads_back_equal(postgres: pgserver.Server, postgres_schema: str) -> None:
    store = PostgresStore(postgres.dsn, schema=postgres_schema)
    state = State(id="sum", messages=[Message.user("1+2?")])
    assert agent_for(store, tool_call("add", a=1, b=2), "3").run(state) == "3"
    loaded = PostgresStore(postgres.dsn, schema=postgres_schema).load("sum")
    assert loaded.history == state.history
    assert loaded.snapshot() == state.snapshot()
    assert [info.id for info in store.list()] == ["sum"]


def test_entry_lines_are_byte_identical_to_a_file_stores_log(
    postgres: pgserver.Server, postgres_schema: str, tmp_path: Path
) -> None:
    store = PostgresStore(postgres.dsn, schema=postgres_schema)
    state = State(id="same", messages=[Message.user("Grüße, ✓ 1+2?")])
    agent_for(store, tool_call("add", a=1, b=2), "3").run(state)
    files = FileStore(tmp_path)
    files.save(State(id="same", history=state.history))
    logged = (tmp_path / "same" / "log.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines_in(postgres.dsn, postgres_schema, "same") == logged


def test_list_is_newest_first_and_delete_removes_a_state(postgres: pgserver.Server, postgres_schema: str) -> None:
    store = PostgresStore(postgres.dsn, schema=postgres_schema)
    for name in ("one", "two", "three"):
        agent_for(store, "done").run(State(id=name, messages=[Message.user(name)]))
    assert [info.id for info in store.list()] == ["three", "two", "one"]
    store.delete("two")
    store.delete("never-saved")
    assert [info.id for info in store.list()] == ["three", "one"]
    with pytest.raises(ValueError, match="already saved"):
        store.write("one", [], {}, create=True)
    with pytest.raises(LookupError, match="was it deleted"):
        store.write("two", [], json.loads('{"v": 5}'))


def test_a_batch_sent_again_is_accepted_and_a_different_one_refused(
    postgres: pgserver.Server, postgres_schema: str
) -> None:
    store = PostgresStore(postgres.dsn, schema=postgres_schema)
    state = task("x")
    store.save(state)
    record = store.read(state.id)
    assert record is not None
    store.write(state.id, record.entries, record.info)  # identical entries again: skipped
    changed = [dict(record.entries[0], content={"role": "user", "content": [{"type": "text", "text": "y"}]})]
    with pytest.raises(ValueError, match="differs from the one"):
        store.write(state.id, changed, record.info)
    assert store.load(state.id).history == state.history


@pytest.mark.parametrize(
    "damage, why",
    [
        ("DELETE FROM {s}.entries WHERE seq = 0", "has 0 of its 1 entries"),
        ("UPDATE {s}.entries SET line = 'not json'", "entry 0 in PostgresStore"),
        ("UPDATE {s}.states SET info = '{{'", "not valid JSON"),
        ("UPDATE {s}.entries SET line = '[1]'", "not a JSON object"),
    ],
)
def test_damaged_rows_are_reported_as_damaged(
    postgres: pgserver.Server, postgres_schema: str, damage: str, why: str
) -> None:
    store = PostgresStore(postgres.dsn, schema=postgres_schema)
    state = task()
    store.save(state)
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(damage.format(s=postgres_schema))  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="is damaged") as raised:
        PostgresStore(postgres.dsn, schema=postgres_schema).load(state.id)
    assert why in str(raised.value)


# -- migrations -------------------------------------------------------------------------------------------------


def test_stores_starting_at_once_create_the_schema_once(postgres: pgserver.Server, postgres_schema: str) -> None:
    errors: list[BaseException] = []

    def first_use() -> None:
        try:
            PostgresStore(postgres.dsn, schema=postgres_schema).list()
        except BaseException as error:  # noqa: BLE001 - collected for the assertion
            errors.append(error)

    threads = [threading.Thread(target=first_use) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        versions = conn.execute(f"SELECT version FROM {postgres_schema}.schema_version").fetchall()
    assert versions == [(v,) for v in range(1, SCHEMA_VERSION + 1)]


def test_a_newer_schema_is_refused_and_a_missing_one_without_create(
    postgres: pgserver.Server, postgres_schema: str
) -> None:
    with pytest.raises(ValueError, match="create=True"):
        PostgresStore(postgres.dsn, schema=postgres_schema, create=False).list()
    PostgresStore(postgres.dsn, schema=postgres_schema).list()
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {postgres_schema}.schema_version (version) VALUES (99)")  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="version 99, newer than this alpineagents knows"):
        PostgresStore(postgres.dsn, schema=postgres_schema).list()


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ("a" * 64, "PostgreSQL cuts names to 63 bytes"),
        ("agents_" + "x" * 60, "so two such names would share one schema"),
        ("pg_agents", "reserved by PostgreSQL"),
        ("pg_catalog", "reserved by PostgreSQL"),
        ("pg_toast", "reserved by PostgreSQL"),
        ("information_schema", "a system schema"),
        ("ägents", "lowercase letters, digits and underscores"),
    ],
)
def test_schema_names_postgresql_would_cut_or_owns_are_refused(
    postgres: pgserver.Server, schema: str, says: str
) -> None:
    with pytest.raises(ValueError, match=says) as raised:
        PostgresStore(postgres.dsn, schema=schema)
    assert "Fix:" in str(raised.value)


def test_a_schema_name_of_63_bytes_is_kept_whole(postgres: pgserver.Server) -> None:
    schema = "s" * 63
    store = PostgresStore(postgres.dsn, schema=schema)
    state = task()
    agent_for(store, "done").run(state)
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        found = conn.execute("SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s", (schema,))
        assert found.fetchone() == (1,)
        conn.execute(f"DROP SCHEMA {schema} CASCADE")  # pyright: ignore[reportArgumentType]


# -- connections ------------------------------------------------------------------------------------------------


def test_a_pool_is_borrowed_from_and_never_closed(postgres: pgserver.Server, postgres_schema: str) -> None:
    from psycopg_pool import ConnectionPool

    with ConnectionPool(postgres.dsn, min_size=1, max_size=2, open=True) as pool:
        store = PostgresStore(pool, schema=postgres_schema)
        state = task()
        agent_for(store, tool_call("add", a=2, b=2), "4").run(state)
        store.close()
        assert not pool.closed
        assert PostgresStore(pool, schema=postgres_schema).load(state.id).history == state.history


def test_the_password_never_shows_in_repr_or_errors(postgres_schema: str) -> None:
    store = PostgresStore("postgresql://agent:s3cr3t-pw@127.0.0.1:1/agents?connect_timeout=2", schema=postgres_schema)
    assert "s3cr3t" not in repr(store)
    with pytest.raises(OSError, match="could not reach its database") as raised:
        store.list()
    assert "s3cr3t" not in str(raised.value)


def test_without_psycopg_the_error_names_the_extra_to_install() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "import alpineagents\n"
        "try:\n"
        "    alpineagents.PostgresStore('postgresql://x')\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install -e '.[postgres]'" in done.stdout, done.stderr


def test_importing_the_package_loads_no_psycopg() -> None:
    code = "import sys, alpineagents, alpineagents.store; print('psycopg' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def kill_sessions(dsn: str, schema_hint: str = "") -> int:
    """Terminate every other session of the server (what a failover or an administrator does)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'"
        ).fetchall()
    return len(rows)


def test_killed_connections_between_save_points_lose_nothing(postgres: pgserver.Server, postgres_schema: str) -> None:
    store = PostgresStore(postgres.dsn, schema=postgres_schema)
    state = task()
    agent = agent_for(store, tool_call("add", a=1, b=1), "2", tool_call("add", a=2, b=2), "4")
    agent.run(state)
    assert kill_sessions(postgres.dsn) >= 2  # the store's connection and its lock connection
    state.add_message(Message.user("and 2+2?"))
    assert agent.run(state) == "4"
    loaded = PostgresStore(postgres.dsn, schema=postgres_schema).load(state.id)
    assert loaded.history == state.history


def test_a_server_restart_between_save_points_loses_nothing() -> None:
    if os.environ.get("ALPINEAGENTS_TEST_POSTGRES"):
        pytest.skip("restarts its own server; a server named by ALPINEAGENTS_TEST_POSTGRES is left alone")
    server = pgserver.start()
    try:
        store = PostgresStore(server.dsn)
        state = task()
        agent = agent_for(store, tool_call("add", a=1, b=1), "2", tool_call("add", a=2, b=2), "4")
        agent.run(state)
        server.restart()
        state.add_message(Message.user("and 2+2?"))
        assert agent.run(state) == "4"
        assert PostgresStore(server.dsn).load(state.id).history == state.history
    finally:
        pgserver.stop(server)


# -- one writer per State ---------------------------------------------------------------------------------------


def test_a_server_restart_mid_use_leaves_stderr_clean() -> None:
    """The store reports the outage (or rides it out) itself: psycopg's own complaints about the pipeline that
    died with the connection are not printed on the user's terminal."""
    if os.environ.get("ALPINEAGENTS_TEST_POSTGRES"):
        pytest.skip("restarts its own server; a server named by ALPINEAGENTS_TEST_POSTGRES is left alone")
    server = pgserver.start()
    try:
        process = child(
            server.dsn,
            "alpineagents",
            """
            from alpineagents.state import State
            from alpineagents.types import Message
            state = State(id="restart", messages=[Message.user("hi")])
            store.save(state)
            print("saved", flush=True)
            for round in range(3):
                sys.stdin.readline()
                for attempt in range(3):
                    state.add_message(Message.user(f"round {round}"))
                    try:
                        store.save(state)
                        store.load("restart")
                        store.list()
                    except OSError as error:
                        print("outage:", error, file=sys.stdout, flush=True)
                print("next", flush=True)
            print("done", len(store.load("restart").history), flush=True)
            """,
        )
        assert read_line(process) == "saved"
        for _ in range(3):
            server.restart()
            process.stdin.write("go\n")  # type: ignore[union-attr]
            process.stdin.flush()  # type: ignore[union-attr]
            while (line := read_line(process, 60)) != "next":
                assert line.startswith("outage:") and "could not reach its database" in line, line
        assert read_line(process, 60).startswith("done")
        process.stdin.close()  # type: ignore[union-attr]
        assert process.wait(30) == 0
        stderr = process.stderr.read()  # type: ignore[union-attr]
        assert stderr == "", stderr
    finally:
        pgserver.stop(server)


def test_a_second_process_gets_state_locked_and_the_lock_frees_when_the_holder_is_killed(
    postgres: pgserver.Server, postgres_schema: str
) -> None:
    store = PostgresStore(postgres.dsn, schema=postgres_schema)
    store.save(State(id="shared", messages=[Message.user("go")]))
    gc.collect()  # that State is gone: this process holds no lock on it
    holder = child(
        postgres.dsn,
        postgres_schema,
        """
        state = store.load("shared")
        state.add_message(__import__("alpineagents.types", fromlist=["Message"]).Message.user("mine"))
        store.save(state)
        print("holding", flush=True)
        time.sleep(120)
        """,
    )
    try:
        assert read_line(holder) == "holding"
        mine = store.load("shared")
        mine.add_message(Message.user("me too"))
        with pytest.raises(StateLockedError, match="being written by another process"):
            store.save(mine)
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        killed_at = time.monotonic()
        retaken = store.load("shared")
        retaken.add_message(Message.user("now me"))
        while True:  # the lock is free once the server notices the dead session: at once, within 1 s
            try:
                store.save(retaken)
                break
            except StateLockedError:
                assert time.monotonic() - killed_at < 1.0, "the lock was not freed within 1 s of the kill"
                time.sleep(0.02)
        assert [m.text for m in PostgresStore(postgres.dsn, schema=postgres_schema).load("shared").messages] == [
            "go",
            "mine",
            "now me",
        ]
    finally:
        holder.kill()
        holder.wait(10)


def test_two_processes_continuing_one_state_exactly_one_wins(postgres: pgserver.Server, postgres_schema: str) -> None:
    store = PostgresStore(postgres.dsn, schema=postgres_schema)
    store.save(State(id="race", messages=[Message.user("go")]))
    gc.collect()
    body = """
        from alpineagents.types import Message
        state = store.load("race")
        print("ready", flush=True)
        sys.stdin.readline()
        state.add_message(Message.user("me"))
        try:
            store.save(state)
            print("won", flush=True)
            time.sleep(5)
        except StateLockedError:
            print("locked", flush=True)
        except ValueError as error:
            print("conflict", error, flush=True)
        """
    racers = [child(postgres.dsn, postgres_schema, body) for _ in range(2)]
    try:
        for racer in racers:
            assert read_line(racer) == "ready"
        for racer in racers:  # both go at once
            racer.stdin.write("go\n")  # type: ignore[union-attr]
            racer.stdin.flush()  # type: ignore[union-attr]
        outcomes = sorted(read_line(racer) for racer in racers)
        assert outcomes == ["locked", "won"]
    finally:
        for racer in racers:
            racer.kill()
            racer.wait(10)
    assert [m.text for m in store.load("race").messages] == ["go", "me"]


def test_a_forked_child_cannot_write_its_parents_state(postgres: pgserver.Server, postgres_schema: str) -> None:
    store = PostgresStore(postgres.dsn, schema=postgres_schema)
    state = task()
    agent_for(store, "first").run(state)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what a save of the parent's State does, then leave at once
        os.close(read)
        try:
            state.add_message(Message.user("from the child"))
            store.save(state)
            outcome = b"saved"
        except StateLockedError:
            outcome = b"locked"
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            outcome = repr(error).encode()[:200]
        os.write(write, outcome)
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 30
    with os.fdopen(read, "rb") as pipe:
        outcome = pipe.read()
    assert time.monotonic() < deadline
    os.waitpid(pid, 0)
    assert outcome == b"locked"
    state.add_message(Message.user("the parent goes on"))
    agent_for(store, "second").run(state)
    assert PostgresStore(postgres.dsn, schema=postgres_schema).load(state.id).history == state.history
