"""`alpineagents approvals`, `approve ID CALL` and `deny ID CALL --reason ...`, on a run stopped in another
process and resumed in a third."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CHILD = Path(__file__).parent / "approval_child.py"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alpineagents", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def child(step: str, kind: str, where: Path, sent: Path, *extra: str) -> dict[str, Any]:
    env = {**os.environ, "SENT": str(sent)}
    done = subprocess.run(
        [sys.executable, str(CHILD), step, kind, str(where), "job1", *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("subagent", [False, True], ids=["top", "subagent"])
def test_list_approve_and_deny_from_the_command_line(tmp_path: Path, subagent: bool) -> None:
    extra = ["subagent"] if subagent else []
    sent = tmp_path / "sent.txt"
    store = str(tmp_path / "states.db")
    missing_store = cli("approvals", "--store", store, cwd=tmp_path)
    assert missing_store.returncode == 1 and "give an existing folder or database" in missing_store.stderr
    child("start", "sqlite", tmp_path, sent, *extra)
    listed = cli("approvals", "--store", store, "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [row["run"] for row in rows] == ["job1", "job1"]
    assert [row["shown"] for row in rows] == ['send(to="a")', 'send(to="b")']
    assert all(row["question"] == "Send the report?" for row in rows)
    assert all(len(row["path"]) == (2 if subagent else 1) for row in rows)
    text = cli("approvals", "--store", store, cwd=tmp_path)
    assert rows[0]["call"] in text.stdout and "Send the report?" in text.stdout
    first, second = rows[0]["call"], rows[1]["call"]
    approved = cli("approve", "job1", first, "--by", "ana", "--store", store, cwd=tmp_path)
    assert approved.returncode == 0, approved.stderr
    assert "approved" in approved.stderr
    missing = cli("deny", "job1", second, "--store", store, cwd=tmp_path)
    assert missing.returncode == 2  # --reason is required
    again = cli("approve", "job1", first, "--store", store, cwd=tmp_path)
    assert again.returncode == 1 and "already decided" in again.stderr
    unknown = cli("approve", "nope", first, "--store", store, cwd=tmp_path)
    assert unknown.returncode == 1
    denied = cli("deny", "job1", second, "--reason", "Not b, they left.", "--store", store, cwd=tmp_path)
    assert denied.returncode == 0, denied.stderr
    assert json.loads(cli("approvals", "--store", store, "--json", cwd=tmp_path).stdout) == []
    assert "no run is waiting" in cli("approvals", "--store", store, cwd=tmp_path).stderr
    resumed = child("resume", "sqlite", tmp_path, sent, *extra)
    assert sent.read_text().splitlines() == ["a"]
    assert "Not b, they left." in resumed["read"]
