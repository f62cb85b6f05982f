"""Helpers shared by the test files: a one-message task, views of a State's history, a PostgreSQL server."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterator

import pytest

from alpineagents.state import State
from alpineagents.types import Message, ToolResultEntry
from helpers import pgserver
from servers.fixtures import no_credentials, server  # noqa: F401 - the provider server's fixtures, for every module


def task(text: str = "Task") -> State:
    """A fresh State whose only message is the user's `text`."""
    return State(messages=[Message.user(text)])


def results(state: State) -> list[ToolResultEntry]:
    """Every tool result of the State's history, in order."""
    return [entry for entry in state.history if isinstance(entry, ToolResultEntry)]


def kinds(state: State) -> list[str]:
    """The kinds of the State's history entries, in order."""
    return [entry.kind for entry in state.history]


def timed(fn: Callable[[], object]) -> float:
    """How long one call of `fn` took, in seconds."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def slowness() -> float:
    """How much slower than "a current machine" this one is right now (a shared VM, a busy CI runner), measured
    with a fixed piece of pure-Python work that takes about 6 ms on a current desktop (best of 3). A wall-clock bound
    of a test is multiplied by it, so a busy machine does not fail a test that only guards against a slow algorithm."""
    took = min(timed(lambda: sum(i * i for i in range(200_000))) for _ in range(3))
    return max(1.0, took / 0.006)


@pytest.fixture(scope="session")
def postgres() -> Iterator[pgserver.Server]:
    """A real PostgreSQL server shared by the tests of a session (see `tests/helpers/pgserver.py`)."""
    started = pgserver.start()
    yield started
    pgserver.stop(started)


@pytest.fixture
def postgres_schema(postgres: pgserver.Server) -> str:
    """A fresh schema name for one test, so that tests sharing the server never see each other's States."""
    return f"t{os.getpid()}_{next(_SCHEMAS)}"


_SCHEMAS = itertools.count()


@pytest.fixture
def postgres_database(postgres: pgserver.Server) -> str:
    """The URL of a fresh database on the test server, for one test (its schema, queues and tables its own)."""
    import psycopg

    name = f"db_{os.getpid()}_{next(_SCHEMAS)}"
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # pyright: ignore[reportArgumentType]
    params = psycopg.conninfo.conninfo_to_dict(postgres.dsn)
    return f"postgresql://{params.get('user') or 'postgres'}@/{name}?host={params['host']}"


@pytest.fixture
def record_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs record each request's input and each error's stack (ALPINEAGENTS_RECORD=all), for this test."""
    monkeypatch.setenv("ALPINEAGENTS_RECORD", "all")
