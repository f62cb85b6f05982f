"""A run submitted to the workers that stops for approval ends its workflow as "waiting"; deciding and submitting
the State again continues it (real DBOS, a real worker process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos")

TESTS = Path(__file__).parent
ROOT = TESTS.parent


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


def wait_status(run, wanted: str, timeout: float = 60) -> str:  # noqa: ANN001 - a Run handle
    deadline = time.monotonic() + timeout
    while (status := run.status()) != wanted and time.monotonic() < deadline:
        time.sleep(0.1)
    return status


def test_a_waiting_run_ends_as_waiting_and_continues_when_submitted_again(env: dict[str, str], tmp_path: Path) -> None:
    sys.path.insert(0, str(TESTS))
    sys.modules.pop("approval_worker_app", None)
    import approval_worker_app as app

    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115 - the child's
    worker = subprocess.Popen(
        [sys.executable, "-m", "alpineagents", "worker", "approval_worker_app:workers", "--id", "w1"],
        env={**os.environ, "PYTHONPATH": f"{TESTS}{os.pathsep}{ROOT / 'src'}"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
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
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(10)
        sys.path.remove(str(TESTS))
    assert Path(env["SENT"]).read_text().splitlines() == ["a"]
