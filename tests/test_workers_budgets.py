"""A run submitted to the workers whose next step would pass its budget ends its workflow as "waiting"; raising the
budget and submitting the State again continues it (real DBOS, a real worker process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from test_workers_approvals import wait_status  # noqa: E402

TESTS = Path(__file__).parent
ROOT = TESTS.parent


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    found = {
        "SENT": str(tmp_path / "sent.txt"),
        "WORKER_STORE": f"sqlite:{tmp_path / 'runs.db'}",
        "WORKER_DATABASE": f"sqlite:///{tmp_path / 'queue.sqlite'}",
    }
    old = dict(os.environ)
    os.environ.update(found)
    try:
        yield found
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_a_run_waiting_for_a_budget_ends_as_waiting_and_continues_after_a_raise(
    env: dict[str, str], tmp_path: Path
) -> None:
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
        run = app.workers.submit("capped", "Send the report to a and b", state_id="cap1")
        assert wait_status(run, "waiting") == "waiting", (tmp_path / "worker.log").read_text()
        assert not Path(env["SENT"]).exists()  # the turn's two calls would pass one tool call: neither ran
        store = app.workers.store
        state = store.load("cap1")
        (wait,) = state.awaiting_budget
        assert wait.limit == "tool_calls" and wait.short_by == 1
        state.raise_budget(tool_calls=1, by="ana")
        again = app.workers.submit("capped", state)  # saves the raise and hands the State over
        assert again.result(timeout=60) == "sent to a | sent to b"
        assert again.status() == "done"
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(10)
        sys.path.remove(str(TESTS))
    assert sorted(Path(env["SENT"]).read_text().splitlines()) == ["a", "b"]
