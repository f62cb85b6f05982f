"""Calls that wait for a person, decided over HTTP: the run stops with the call waiting, `approve` runs it once and
the run goes on, `deny` gives the model the reason, and deciding a call that does not wait is a 409."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from alpineagents import SQLiteStore, serve
from helpers.serve_agents import WAIT, approving, serving
from test_serve import native, text_of


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "runs.db")


@pytest.fixture
def http(store: SQLiteStore) -> Any:
    with serving(serve.app(approving(), store=store)) as url, httpx.Client(base_url=url, timeout=WAIT) as client:
        yield client


def waiting_run(http: httpx.Client) -> tuple[str, str, list[dict[str, Any]]]:
    started = http.post("/api/runs", json={"prompt": "please add"}).json()
    items = native(http.get(f"/api/runs/{started['id']}/events", params={"after": started["after"]}).text)
    needed = [item for item in items if item["type"] == "ApprovalNeeded"]
    assert len(needed) == 1 and needed[0]["waiting"]["call"]["name"] == "add"
    assert items[-1]["type"] == "RunEnded" and items[-1]["stopped"]["type"] == "StoppedForApproval"
    assert [w["call"]["id"] for w in items[-1]["waiting"]] == [needed[0]["waiting"]["call"]["id"]]
    return started["id"], needed[0]["waiting"]["call"]["id"], items


def test_an_approved_call_runs_once_and_the_run_goes_on(http: httpx.Client, store: SQLiteStore) -> None:
    run_id, call_id, _ = waiting_run(http)
    read = http.get(f"/api/runs/{run_id}").json()
    assert [w["call"]["id"] for w in read["waiting"]] == [call_id]
    assert read["waiting"][0]["question"] == "Add these numbers?"
    approved = http.post(f"/api/runs/{run_id}/calls/{call_id}/approve", json={"by": "ann", "note": "fine"})
    assert approved.status_code == 200 and approved.json()["continued"] is True
    after = approved.json()["after"]
    items = native(http.get(f"/api/runs/{run_id}/events", params={"after": after}).text)
    ended = [item for item in items if item["type"] == "ToolCallEnded"]
    assert [(e["call"]["id"], e["outcome"], e["result"]) for e in ended] == [(call_id, "done", "5")]
    assert text_of(items) == "The sum is 5."
    again = http.post(f"/api/runs/{run_id}/calls/{call_id}/approve")
    assert again.status_code == 409 and again.json()["error"]["code"] == "not_waiting"
    results = [e for e in store.load(run_id).history if e.kind == "tool_result"]
    assert len(results) == 1  # ran exactly once


def test_a_denied_call_gives_the_model_the_reason(http: httpx.Client) -> None:
    run_id, call_id, _ = waiting_run(http)
    wrong = http.post(f"/api/runs/{run_id}/calls/call_nope/deny", json={"reason": "no"})
    assert wrong.status_code == 409 and call_id in wrong.json()["error"]["message"]
    denied = http.post(
        f"/api/runs/{run_id}/calls/{call_id}/deny",
        json={"reason": "not today"},
        headers={"Accept": "text/event-stream"},
    )
    ended = [item for item in native(denied.text) if item["type"] == "ToolCallEnded"]
    assert [(e["outcome"], "not today" in str(e["result"])) for e in ended] == [("denied", True)]


def test_bad_decisions_are_refused(http: httpx.Client) -> None:
    finished = http.post("/api/runs", json={"prompt": "hello"}).json()["id"]
    http.get(f"/api/runs/{finished}/events")
    refused = http.post(f"/api/runs/{finished}/calls/call_x/approve")
    assert refused.status_code == 409 and "waiting: none" in refused.json()["error"]["message"]
    assert http.post("/api/runs/nope/calls/call_x/approve").status_code == 404
    assert http.post(f"/api/runs/{finished}/calls/call_x/deny", json={"reason": 3}).status_code == 422
