"""A run submitted to the workers that stops for approval ends its workflow as "waiting"; deciding and submitting
the State again continues it (real DBOS, a real worker process)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from helpers.approval_worker import approval_worker, wait_status  # noqa: E402


@pytest.fixture(params=["sqlite", "postgres"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    found = {"SENT": str(tmp_path / "sent.txt")}
    if request.param == "sqlite":
        found["WORKER_STORE"] = f"sqlite:{tmp_path / 'runs.db'}"
        found["WORKER_DATABASE"] = f"sqlite:///{tmp_path / 'queue.sqlite'}"
    else:
        url = request.getfixturevalue("postgres_database")
        found["WORKER_STORE"] = found["WORKER_DATABASE"] = url
    old = dict(os.environ)
    os.environ.update(found)
    try:
        yield found
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_a_waiting_run_ends_as_waiting_and_continues_when_submitted_again(env: dict[str, str], tmp_path: Path) -> None:
    with approval_worker(tmp_path / "worker.log") as app:
        run = app.workers.submit("mailer", "Send the report to a and b", state_id="mail1")
        assert wait_status(run, "waiting") == "waiting", (tmp_path / "worker.log").read_text()
        store = app.workers.store
        state = store.load("mail1")
        first, second = state.awaiting_approval
        state.approve(first.call.id, by="ana")
        state.deny(second.call.id, "b is on leave", by="bob")
        again = app.workers.submit("mailer", state)  # saves the decisions and hands the State over
        assert again.id != run.id
        assert again.result(timeout=60) == "sent to a | b is on leave"
        assert again.status() == "done"
    assert Path(env["SENT"]).read_text().splitlines() == ["a"]
