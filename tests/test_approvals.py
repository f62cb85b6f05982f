"""Approvals that wait: the Deferred verdict, state.awaiting_approval / approve / deny, resuming, expiry, the saved
form (format 5 unchanged), subagents, and the flow across processes with every store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from alpineagents import types as types_module
from alpineagents._serial import VERSION
from alpineagents.agent import Agent
from alpineagents.permissions import AllowByDefault, DecidePermission, DeferByName, Deferred, DenyByName
from alpineagents.state import State
from alpineagents.store import FileStore, SQLiteStore
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import (
    ExchangeEntry,
    Message,
    StoppedByPermission,
    StoppedForApproval,
    ToolOutcomeKind,
    ToolResultBlock,
    ToolResultEntry,
)

HERE = Path(__file__).parent
CHILD = HERE / "approval_child.py"

SENT: list[str] = []


@tool
def send(to: str) -> str:
    """Send the report.

    Args:
        to: Who gets it.
    """
    SENT.append(to)
    return f"sent to {to}"


@tool
def look(name: str) -> str:
    """Look something up.

    Args:
        name: What.
    """
    return f"{name} is fine"


def held_agent(script: list[Any], **settings: Any) -> Agent:
    permissions = settings.pop("permissions", [DeferByName(["send"]), AllowByDefault()])
    return Agent(FakeModel(script), tools=[send, look], reporter=None, permissions=permissions, **settings)


def waiting_state(store: Any = None) -> State:
    SENT.clear()
    state = State(messages=[Message.user("Send it to a and b, and look up c")])
    calls = [tool_call("send", to="a"), tool_call("look", name="c"), tool_call("send", to="b")]
    held_agent([calls], store=store).run(state)
    return state


def results_read(model: FakeModel) -> list[str]:
    return [
        str(block.content)
        for request in model.requests
        for message in request.messages
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]


def test_a_deferred_call_stops_the_run_before_any_tool_of_the_turn_runs() -> None:
    state = waiting_state()
    assert SENT == []
    assert isinstance(state.stopped, StoppedForApproval)
    assert not state.finished
    assert [call.name for call in state.pending_calls] == ["send", "look", "send"]  # look did not run either
    waiting = state.awaiting_approval
    assert [(w.tool, w.call.args["to"]) for w in waiting] == [("send", "a"), ("send", "b")]
    assert waiting[0].permission == "DeferByName(['send'])"
    assert waiting[0].question == 'Run send(to="a")?'
    assert waiting[0].path == (state.id,) and waiting[0].expires_at is None
    assert [c.id for c in state.stopped.calls] == [w.call.id for w in waiting]


def test_approve_and_deny_are_recorded_and_the_next_run_carries_them_out() -> None:
    state = waiting_state()
    first, second = state.awaiting_approval
    approved = state.approve(first.call.id, by="ana", note="ok for a")
    denied = state.deny(second.call.id, "b left the company", by="bob")
    assert (approved.approved, approved.by, approved.note) == (True, "ana", "ok for a")
    assert (denied.approved, denied.reason, denied.by) == (False, "b left the company", "bob")
    assert state.awaiting_approval == ()
    decisions = [e for e in state.history if isinstance(e, ExchangeEntry)][-2:]
    assert [e.content.answer["alpineagents_approval"] for e in decisions] == ["approved", "denied"]
    agent = held_agent(["Sent to a."])
    assert agent.run(state) == "Sent to a."
    assert SENT == ["a"]  # the approved call ran once, the denied one never
    results = {
        e.call.args.get("to", e.call.args.get("name")): e for e in state.history if isinstance(e, ToolResultEntry)
    }
    assert results["b"].outcome is ToolOutcomeKind.DENIED and results["b"].content == "b left the company"
    assert results["c"].outcome is ToolOutcomeKind.DONE  # the call no person had to decide ran too
    assert "b left the company" in results_read(agent.model)  # type: ignore[arg-type]
    assert state.stopped is not None and not isinstance(state.stopped, StoppedForApproval)


def test_running_again_before_deciding_keeps_waiting_without_new_records() -> None:
    state = waiting_state()
    count = len(state.history)
    held_agent([]).run(state)  # no model call happens: the loop has nothing to do
    assert isinstance(state.stopped, StoppedForApproval)
    assert len(state.awaiting_approval) == 2
    assert [e.kind for e in state.history[count:]] == ["run_start", "stop"]
    assert SENT == []


def test_misuse_raises_clear_errors() -> None:
    state = waiting_state()
    first, second = state.awaiting_approval
    with pytest.raises(ValueError, match="is not a call waiting for approval") as caught:
        state.approve("nope")
    assert "Fix:" in str(caught.value) and first.call.id in str(caught.value)
    state.approve(first.call.id)
    with pytest.raises(ValueError, match="was already decided"):
        state.deny(first.call.id, "changed my mind")
    with pytest.raises(ValueError, match="empty reason"):
        state.deny(second.call.id, "  ")
    with pytest.raises(TypeError, match="reason takes a string"):
        state.deny(second.call.id, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="by takes a string"):
        state.approve(second.call.id, by=3)  # type: ignore[arg-type]
    plain = State(messages=[Message.user("hi")])
    with pytest.raises(ValueError, match="is not waiting for an approval"):
        plain.approve("call_1")
    with pytest.raises(TypeError, match="question= takes a string"):
        Deferred(question=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be positive"):
        Deferred(expires_in=0)
    with pytest.raises(TypeError, match="expires_in= takes seconds"):
        Deferred(expires_in="1h")  # type: ignore[arg-type]


def test_deciding_while_the_state_is_being_run_is_refused() -> None:
    state = waiting_state()
    call_id = state.awaiting_approval[0].call.id
    seen: list[str] = []

    class Peek(DecidePermission):
        def check(self, state: State, call: Any, tool: Any) -> None:
            try:
                state.approve(call_id)
            except ValueError as error:
                seen.append(str(error))

    held_agent([], permissions=[Peek(), DeferByName(["send"]), AllowByDefault()]).run(state)
    assert seen and "while State" in seen[0]


def test_only_a_decide_permission_may_defer() -> None:
    class Wrong(DenyByName):
        def check(self, state: State, call: Any, tool: Any) -> Any:
            return Deferred()

    state = State(messages=[Message.user("go")])
    with pytest.raises(TypeError, match="a DenyPermission may return only Denied"):
        held_agent([[tool_call("send", to="a")]], permissions=[Wrong(["send"])]).run(state)


def test_an_approval_after_the_expiry_is_a_denial(monkeypatch: pytest.MonkeyPatch) -> None:
    SENT.clear()
    state = State(messages=[Message.user("go")])
    agent = held_agent(
        [[tool_call("send", to="a"), tool_call("send", to="b")]],
        permissions=[DeferByName(["send"], expires_in=timedelta(hours=1)), AllowByDefault()],
    )
    agent.run(state)
    first, second = state.awaiting_approval
    assert first.expires_at is not None and first.expires_at - first.asked_at == timedelta(hours=1)
    later = first.expires_at + timedelta(seconds=1)
    monkeypatch.setattr(types_module, "_now", lambda: later)
    decision = state.approve(first.call.id, by="ana")
    assert (decision.approved, decision.expired, decision.reason) == (False, True, decision.reason)
    assert decision.reason and "expired" in decision.reason
    # the other call is not decided at all: at the resume its wait has expired too
    held_agent(["Nothing sent."]).run(state)
    assert SENT == []
    outcomes = [e.outcome for e in state.history if isinstance(e, ToolResultEntry)]
    assert outcomes == [ToolOutcomeKind.DENIED, ToolOutcomeKind.DENIED]


def test_the_saved_form_stays_format_5_and_old_readers_see_a_permission_stop(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    state = waiting_state(store)
    assert VERSION == 5
    info = json.loads(next(tmp_path.rglob("*.json")).read_text())
    assert info["v"] == 5
    assert info["stopped"]["kind"] == "permission" and len(info["stopped"]["waiting"]) == 2
    # what a reader written before this change does: take the permission stop's two keys
    old = StoppedByPermission(types_module.ToolCall(**info["stopped"]["call"]), info["stopped"]["permission"])
    assert old.call.id == state.awaiting_approval[0].call.id
    loaded = store.load(state.id)
    assert loaded.stopped == state.stopped
    assert [w.call.id for w in loaded.awaiting_approval] == [w.call.id for w in state.awaiting_approval]


def test_states_saved_before_this_change_load_unchanged(tmp_path: Path) -> None:
    # A State saved by the code before approvals existed: a permission stop, a human exchange, pending-free.
    store = FileStore(tmp_path)
    state = State(messages=[Message.user("go")])
    agent = Agent(
        FakeModel([[tool_call("send", to="a")], "ok"]),
        tools=[send],
        reporter=None,
        store=store,
        permissions=[DenyByName(["send"]), AllowByDefault()],
    )
    agent.run(state)
    state2 = State(messages=[Message.user("stop")])
    stopper = Agent(
        FakeModel([[tool_call("send", to="a"), tool_call("look", name="x")]]),
        tools=[send, look],
        reporter=None,
        store=store,
        permissions=[DenyByName(["send"]), AllowByDefault()],
    )
    from alpineagents.permissions import Denied, DenyPermission

    class Stop(DenyPermission):
        def check(self, state: State, call: Any, tool: Any) -> Any:
            return Denied("no", stop=True)

    stopper = stopper.copy(permissions=[Stop()])
    stopper.run(state2)
    for saved in (state, state2):
        loaded = store.load(saved.id)
        assert loaded.history == saved.history
        assert loaded.stopped == saved.stopped
        assert loaded.awaiting_approval == ()
    assert type(store.load(state2.id).stopped) is StoppedByPermission


def _child(step: str, kind: str, where: str, state_id: str, sent: Path, *extra: str) -> dict[str, Any]:
    env = {**os.environ, "SENT": str(sent)}
    done = subprocess.run(
        [sys.executable, str(CHILD), step, kind, where, state_id, *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _three_processes(kind: str, where: str, sent: Path, *extra: str) -> None:
    started = _child("start", kind, where, "job1", sent, *extra)
    assert started["stopped"].startswith("waiting for approval")
    assert len(started["waiting"]) == 2
    if extra:  # a subagent's calls: listed with their place under the top State
        assert all(len(w["path"]) == 2 and w["path"][0] == "job1" for w in started["waiting"])
    assert not sent.exists()
    decided = _child("decide", kind, where, "job1", sent, *extra)
    assert decided["left"] == 0
    resumed = _child("resume", kind, where, "job1", sent, *extra)
    assert sent.read_text().splitlines() == ["a"]  # the approved call ran exactly once
    assert "Not b, they left." in resumed["read"]  # the model read the denial
    assert resumed["answer"] == "All sent."


@pytest.mark.parametrize("kind", ["file", "sqlite"])
@pytest.mark.parametrize("subagent", [False, True], ids=["top", "subagent"])
def test_stop_decide_and_resume_in_three_processes(tmp_path: Path, kind: str, subagent: bool) -> None:
    _three_processes(kind, str(tmp_path), tmp_path / "sent.txt", *(["subagent"] if subagent else []))


@pytest.mark.parametrize("subagent", [False, True], ids=["top", "subagent"])
def test_stop_decide_and_resume_in_three_processes_with_postgres(
    tmp_path: Path, postgres: Any, postgres_schema: str, subagent: bool
) -> None:
    where = f"{postgres.dsn}|{postgres_schema}"
    _three_processes("postgres", where, tmp_path / "sent.txt", *(["subagent"] if subagent else []))


def test_a_subagent_call_waits_up_to_the_top_state_and_resumes_where_it_was() -> None:
    SENT.clear()
    held = [DeferByName(["send"]), AllowByDefault()]
    helper = Agent(
        FakeModel([[tool_call("send", to="a")], "Sent."]),
        tools=[send],
        name="helper",
        description="Sends.",
        reporter=None,
        permissions=held,
    )
    top = Agent(FakeModel([tool_call("helper", prompt="send to a"), "Done."]), tools=[helper], reporter=None)
    state = State(messages=[Message.user("go")])
    top.run(state)
    assert isinstance(state.stopped, StoppedForApproval)
    (waiting,) = state.awaiting_approval
    child_id = waiting.path[1]
    assert waiting.path == (state.id, child_id) and waiting.state_id == child_id
    state.approve(waiting.call.id, by="ana")
    assert top.run(state) == "Done."
    assert SENT == ["a"]
    (result,) = [e for e in state.history if isinstance(e, ToolResultEntry)]
    assert result.content == "Sent." and result.child_ids == (child_id,)


def test_arun_holds_and_resumes_the_same_way() -> None:
    import asyncio

    SENT.clear()
    state = State(messages=[Message.user("go")])
    asyncio.run(held_agent([[tool_call("send", to="a")]]).arun(state))
    assert isinstance(state.stopped, StoppedForApproval) and SENT == []
    state.approve(state.awaiting_approval[0].call.id)
    assert asyncio.run(held_agent(["ok"]).arun(state)) == "ok"
    assert SENT == ["a"]


def test_sqlite_store_keeps_the_wait_and_the_decisions(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    state = waiting_state(store)
    loaded = store.load(state.id)
    loaded.deny(loaded.awaiting_approval[0].call.id, "no")
    store.save(loaded)
    again = store.load(state.id)
    assert len(again.awaiting_approval) == 1


def test_the_viewer_marks_waiting_calls_and_decisions(tmp_path: Path) -> None:
    from alpineagents.viewer.runs import summarize
    from alpineagents.viewer.timeline import build

    store = FileStore(tmp_path)
    state = waiting_state(store)
    (info,) = store.list()
    assert summarize(store, info).status == "waiting for approval of 2 calls"  # the list marks the waiting run
    first, second = state.awaiting_approval
    state.approve(first.call.id, by="ana")
    state.deny(second.call.id, "no", by="bob")
    items = build(state.history, [])
    marked = [(item.badge, item.tone) for item in items if item.badge in ("waiting", "approved", "denied")]
    assert marked == [("waiting", "warn"), ("waiting", "warn"), ("approved", "ok"), ("denied", "bad")]
    assert any("approved by ana" in item.label for item in items)


def test_a_state_saved_by_the_code_before_approvals_loads_unchanged(tmp_path: Path) -> None:
    # tests/saved_before_approvals/old1 was written by the library before approvals existed: a DecideByHuman
    # question answered "yes", then a permission stop (stop=True) with a call cancelled.
    import shutil

    from alpineagents.events import ApprovalNeeded, Exchanged, events_of_state

    shutil.copytree(HERE / "saved_before_approvals" / "old1", tmp_path / "old1")
    lines = (tmp_path / "old1" / "log.jsonl").read_text().splitlines()
    loaded = FileStore(tmp_path).load("old1")
    assert len(loaded.history) == len(lines) == 11
    assert type(loaded.stopped) is StoppedByPermission
    assert loaded.stopped.permission == "Stop()" and loaded.stopped.call.args == {"to": "b"}
    assert loaded.awaiting_approval == () and loaded.pending_calls == ()
    assert [e.kind for e in loaded.history].count("human") == 1
    events = list(events_of_state(loaded))
    assert [e.answer for e in events if isinstance(e, Exchanged)] == ["yes"]
    assert not any(isinstance(e, ApprovalNeeded) for e in events)
    with pytest.raises(ValueError, match="is not waiting for an approval"):
        loaded.approve(loaded.stopped.call.id)
