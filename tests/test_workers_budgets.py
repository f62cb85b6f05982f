"""A run submitted to the workers whose next step would pass its budget ends its workflow as "waiting"; raising the
budget and submitting the State again continues it (real DBOS, a real worker process)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from helpers.approval_worker import approval_worker, wait_status  # noqa: E402


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
    with approval_worker(tmp_path / "worker.log") as app:
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
    assert sorted(Path(env["SENT"]).read_text().splitlines()) == ["a", "b"]
