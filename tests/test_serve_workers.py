"""`serve.app(..., workers=)`: the runs go to the queue of `alpineagents.workers` (DBOS, a SQLite queue here), a
worker process runs them, and the stream follows each run through the store to its end."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from alpineagents import serve
from helpers.serve_agents import WAIT, serving
from test_serve import native, text_of

pytestmark = pytest.mark.timeout(300)  # a real worker process over a real queue

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def app_module(tmp_path: Path) -> Iterator[Any]:
    env = {
        "WORKER_JOURNAL": str(tmp_path / "journal.txt"),
        "WORKER_MODEL_DELAY": "0.05",
        "WORKER_STORE": f"sqlite:{tmp_path / 'runs.db'}",
        "WORKER_DATABASE": f"sqlite:///{tmp_path / 'queue.sqlite'}",
    }
    os.environ.update(env)
    sys.modules.pop("helpers.worker_app", None)
    worker_app = importlib.import_module("helpers.worker_app")

    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115 - the child's
    worker = subprocess.Popen(
        [sys.executable, "-m", "alpineagents", "worker", "worker_app:workers", "--id", "w1"],
        env={**os.environ, **env, "PYTHONPATH": f"{TESTS / 'helpers'}{os.pathsep}{TESTS.parent / 'src'}"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield worker_app
    finally:
        worker.terminate()
        worker.wait(60)
        log.close()


def test_runs_go_to_the_workers_and_the_stream_follows_the_store(app_module: Any, tmp_path: Path) -> None:
    workers = app_module.workers
    app = serve.app(workers.agents["noter"], workers=workers)
    with serving(app) as url, httpx.Client(base_url=url, timeout=WAIT * 6) as http:
        streamed = http.post("/api/runs", json={"prompt": "buy milk"}, headers={"Accept": "text/event-stream"})
        items = native(streamed.text)
        kinds = [item["type"] for item in items]
        assert kinds[0] == "RunStarted" and kinds[-1] == "RunEnded", kinds
        assert [(e["call"]["name"], e["result"]) for e in items if e["type"] == "ToolCallEnded"] == [("note", "noted")]
        assert text_of(items) == "done: buy milk"
        run_id = items[0]["state_id"]
        again = http.post("/api/runs", json={"prompt": "and eggs", "state_id": run_id}).json()
        rest = native(http.get(f"/api/runs/{run_id}/events", params={"after": again["after"]}).text)
        assert text_of(rest) == "done: buy milk"  # the model answers with the first message (worker_app's rule)
        assert any(e["type"] == "ToolCallEnded" and e["call"]["args"] == {"text": "and eggs"} for e in rest)
    assert (tmp_path / "journal.txt").read_text().splitlines() == ["buy milk", "and eggs"]  # each call ran once
    with pytest.raises(ValueError, match="not one of the Workers' Agents"):
        serve.app(workers.agents["noter"].copy(), workers=workers)
