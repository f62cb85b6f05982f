"""Tool effects that never happen twice: a run is killed with SIGKILL inside a tool (before or after its effect,
always before its result is saved), then resumed in another process whose tool declares `reconcile`.

The "external system" is a ledger file the tool writes one line to, keyed by the call's idempotency key; every
time the tool's function or its reconcile runs, a line goes to `calls.txt`, so a second run of the tool shows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from alpineagents import Agent, State
from alpineagents.state import UNSAVED_RESULT
from alpineagents.store import SQLiteStore
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import CannotTell, CurrentCall, Happened, NotHappened, Tool, current_call, tool
from alpineagents.types import Message, ToolCall

pytestmark = pytest.mark.timeout(120)

CHILD = Path(__file__).parent / "helpers" / "effects_child.py"
KEY = "payment-1:"  # every idempotency key of the child's State starts so


def child(*args: str) -> int:
    done = subprocess.run([sys.executable, str(CHILD), *args], timeout=60, capture_output=True, text=True)
    assert done.returncode in (0, -9), done.stderr
    return done.returncode


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def final(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "final.json").read_text())


def test_an_effect_that_happened_is_not_run_again_and_its_result_comes_from_reconcile(tmp_path: Path) -> None:
    assert child("run", str(tmp_path), "after_effect") == -9
    assert len(lines(tmp_path / "ledger.txt")) == 1
    child("resume", str(tmp_path), "ledger")
    calls = lines(tmp_path / "calls.txt")
    assert [line.split()[0] for line in calls] == ["pay", "reconcile"], calls  # the tool ran once, before the kill
    assert len(lines(tmp_path / "ledger.txt")) == 1
    done = final(tmp_path)
    assert done["answer"] == "model read: paid 30 (found in the ledger)"
    assert list(done["marks"].values()) == ["happened"]
    assert calls[0].split()[1] == calls[1].split()[1] and calls[0].split()[1].startswith(KEY)  # one stable key


def test_an_effect_that_did_not_happen_runs_once(tmp_path: Path) -> None:
    assert child("run", str(tmp_path), "before_effect") == -9
    assert lines(tmp_path / "ledger.txt") == []
    child("resume", str(tmp_path), "ledger")
    assert [line.split()[0] for line in lines(tmp_path / "calls.txt")] == ["pay", "reconcile", "pay"]
    assert len(lines(tmp_path / "ledger.txt")) == 1
    done = final(tmp_path)
    assert done["answer"] == "model read: paid 30"
    assert list(done["marks"].values()) == ["not_happened"]
    child("resume", str(tmp_path), "ledger")  # resuming again asks nothing and runs nothing
    assert len(lines(tmp_path / "calls.txt")) == 3


def test_an_effect_nobody_can_tell_waits_for_a_person(tmp_path: Path) -> None:
    assert child("run", str(tmp_path), "after_effect") == -9
    child("resume", str(tmp_path), "unsure")
    waiting = final(tmp_path)
    assert waiting["answer"] is None and waiting["stopped"] == "waiting for approval of 1 call"
    assert len(waiting["waiting"]) == 1 and list(waiting["marks"].values()) == ["cannot_tell"]
    child("resume", str(tmp_path), "unsure", "deny")  # a person checked: it was paid
    assert [line.split()[0] for line in lines(tmp_path / "calls.txt")] == ["pay", "reconcile"]
    assert final(tmp_path)["answer"] == "model read: It was paid: receipt 7"
    assert len(lines(tmp_path / "ledger.txt")) == 1


def test_an_approved_call_nobody_could_tell_about_runs_once(tmp_path: Path) -> None:
    assert child("run", str(tmp_path), "before_effect") == -9
    child("resume", str(tmp_path), "unsure")
    child("resume", str(tmp_path), "unsure", "approve")
    assert [line.split()[0] for line in lines(tmp_path / "calls.txt")] == ["pay", "reconcile", "pay"]
    assert final(tmp_path)["answer"] == "model read: paid 30"


def test_a_tool_without_reconcile_keeps_the_unknown_result(tmp_path: Path) -> None:
    """The same crash, resumed by an Agent whose tool has no reconcile: the model reads the unknown result."""
    assert child("run", str(tmp_path), "after_effect") == -9
    store = SQLiteStore(tmp_path / "runs.db")
    state = store.load("payment-1")

    @tool(name="pay", description="Pay.")
    def plain(amount: int) -> str:
        raise AssertionError("never run again")

    seen: list[str] = []

    def read(request: Any) -> str:
        seen.append(request.messages[-1].content[0].content)
        return "ok"

    Agent(FakeModel([read]), tools=[plain], store=store, reporter=None, human=None).run(state)
    assert seen == [UNSAVED_RESULT]


def test_current_call_gives_a_stable_idempotency_key_and_is_refused_outside_a_call() -> None:
    keys: list[str] = []

    @tool
    def charge() -> str:
        """Charge."""
        keys.append(current_call().idempotency_key)
        return "ok"

    state = State(id="s-1", messages=[Message.user("Charge")])
    Agent(
        FakeModel([ToolCall(name="charge", args={}, id="c-9"), "done"]), tools=[charge], reporter=None, human=None
    ).run(state)
    assert keys == ["s-1:c-9"]
    with pytest.raises(LookupError, match="outside a tool call"):
        current_call()


def test_reconcile_is_checked_and_tool_classes_may_declare_it() -> None:
    def send() -> str:
        """Send."""
        return "sent"

    with pytest.raises(TypeError, match="reconcile= takes a function"):
        tool(reconcile=3)(send)  # type: ignore[arg-type]

    class Ticket(Tool):
        def __init__(self) -> None:
            super().__init__(name="ticket")

        def run(self, args: dict[str, Any], state: State) -> str:
            return "t-1"

        def reconcile(self, call: CurrentCall) -> Happened:  # type: ignore[override]
            return Happened("t-1")

    assert Ticket().reconcile is not None
    assert tool(send).reconcile is None
    assert tool(reconcile=lambda call: NotHappened())(send).copy(name="x").reconcile is not None
    assert CannotTell().question is None


def test_show_and_the_viewer_mark_calls_whose_effect_was_unknown_or_reconciled(tmp_path: Path) -> None:
    from alpineagents.viewer.timeline import build
    from helpers.cli_agents import cli

    assert child("run", str(tmp_path), "after_effect") == -9
    store = f"sqlite:{tmp_path / 'runs.db'}"
    shown = cli("show", "payment-1", "--store", store, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "effect unknown (the process stopped before its result was saved)" in shown.stdout
    child("resume", str(tmp_path), "ledger")
    shown = cli("show", "payment-1", "--store", store, cwd=tmp_path)
    assert "reconciled: it had happened" in shown.stdout, shown.stdout
    history = SQLiteStore(tmp_path / "runs.db").load("payment-1").history
    badges = [item.badge for item in build(history, [])]
    assert "reconciled" in badges


def crashed_copy(tmp_path: Path, tools: list[Any]) -> Any:
    """A FileStore copied while a `pay` call runs (as a process that died there would leave it), loaded."""
    import shutil

    from alpineagents import FileStore

    live, copy = tmp_path / "live", tmp_path / "copy"

    @tool(name="pay", description="Pay.")
    def snapshot(amount: int) -> str:
        shutil.copytree(live, copy)
        return "paid"

    agent = Agent(FakeModel([tool_call("pay", amount=5), "ok"]), tools=[snapshot], store=FileStore(live), reporter=None)
    agent.run(State(id="p", messages=[Message.user("Pay 5")]))
    return FileStore(copy), FileStore(copy).load("p")


def test_an_async_reconcile_is_awaited_under_arun_and_current_call_works_inside_it(tmp_path: Path) -> None:
    import asyncio

    keys: list[str] = []

    async def found(call: CurrentCall) -> Happened:
        keys.append(current_call().idempotency_key)
        return Happened({"receipt": call.idempotency_key})

    @tool(reconcile=found, description="Pay.")
    def pay(amount: int) -> str:
        raise AssertionError("never run again")

    store, state = crashed_copy(tmp_path, [pay])
    read: list[str] = []

    def answer(request: Any) -> str:
        read.append(request.messages[-1].content[0].content)
        return "ok"

    asyncio.run(Agent(FakeModel([answer]), tools=[pay], store=store, reporter=None, human=None).arun(state))
    [reply] = [entry for entry in state.history if entry.kind == "model_reply"][:1]
    assert keys == [f"p:{reply.content.message.tool_calls[0].id}"]
    assert read == ['{"receipt": "' + keys[0] + '"}']
    assert store.load("p").answer == "ok"  # the reconciled history is saved and loads


def test_a_reconcile_that_raises_makes_the_call_wait_with_the_error_in_the_question(tmp_path: Path) -> None:
    def broken(call: CurrentCall) -> Happened:
        raise ConnectionError("payment service down")

    @tool(reconcile=broken, description="Pay.")
    def pay(amount: int) -> str:
        return "paid again"

    store, state = crashed_copy(tmp_path, [pay])
    Agent(FakeModel(["ok"]), tools=[pay], store=store, reporter=None, human=None).run(state)
    [waiting] = state.awaiting_approval
    assert waiting.permission == "reconcile"
    assert "ConnectionError: payment service down" in waiting.question
    assert store.load("p").awaiting_approval[0].call.id == waiting.call.id  # it waits in the store too


def test_a_reconcile_answer_of_the_wrong_type_is_a_clear_error(tmp_path: Path) -> None:
    @tool(reconcile=lambda call: "yes", description="Pay.")
    def pay(amount: int) -> str:
        return "paid"

    store, state = crashed_copy(tmp_path, [pay])
    with pytest.raises(TypeError, match=r"reconcile returned 'yes'.*\nFix: return Happened"):
        Agent(FakeModel(["ok"]), tools=[pay], store=store, reporter=None, human=None).run(state)
