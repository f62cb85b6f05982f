"""The application the worker tests run in worker processes: `alpineagents worker worker_app:workers`.

Configured by the environment the test gives each process: `WORKER_STORE` (`sqlite:PATH` or a PostgreSQL URL),
`WORKER_DATABASE` (the DBOS system database), `WORKER_JOURNAL` (a file every tool call appends a line to, so a
call that ran twice shows). The model is scripted: it asks for one `note` call per run, then answers. The
"manager" Agent hands each task to a subagent, "helper", which notes it down; the manager answers with what the
helper said.
"""

from __future__ import annotations

import os
import signal
import time

from alpineagents.agent import Agent
from alpineagents.models.base import Model
from alpineagents.store import SQLiteStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import CurrentCall, Happened, NotHappened, current_call, tool
from alpineagents.types import Reply, Request, ToolResultBlock, result_text
from alpineagents.workers import Workers

MODEL_DELAY = float(os.environ.get("WORKER_MODEL_DELAY", "0.05"))


@tool
def note(text: str) -> str:
    """Write a note down.

    Args:
        text: The note.
    """
    with open(os.environ["WORKER_JOURNAL"], "a", encoding="utf-8") as journal:
        journal.write(text + "\n")
        journal.flush()
        os.fsync(journal.fileno())
    return "noted"


def answer(request: Request) -> Reply | object:
    time.sleep(MODEL_DELAY)
    last = request.messages[-1]
    if any(isinstance(block, ToolResultBlock) for block in last.content):
        return "done: " + request.messages[0].text
    return tool_call("note", text=last.text)


def manage(request: Request) -> Reply | object:
    time.sleep(MODEL_DELAY)
    last = request.messages[-1]
    results = [block for block in last.content if isinstance(block, ToolResultBlock)]
    if results:
        return "managed: " + result_text(results[0].content)
    return tool_call("helper", prompt=last.text)


def help_out(request: Request) -> Reply | object:
    time.sleep(MODEL_DELAY)
    last = request.messages[-1]
    if any(isinstance(block, ToolResultBlock) for block in last.content):
        return "helped with " + request.messages[0].text
    return tool_call("note", text="helper: " + last.text)


def _ledger_lines() -> list[str]:
    ledger = os.environ["WORKER_JOURNAL"] + ".ledger"
    return open(ledger, encoding="utf-8").read().splitlines() if os.path.exists(ledger) else []


def paid(call: CurrentCall) -> Happened | NotHappened:
    """The ledger (the "external system") is asked by the call's idempotency key."""
    with open(os.environ["WORKER_JOURNAL"], "a", encoding="utf-8") as journal:
        journal.write(f"reconcile {call.idempotency_key}\n")
    found = [line for line in _ledger_lines() if line.split(" ", 1)[0] == call.idempotency_key]
    return Happened(f"paid {found[0].split(' ', 1)[1]} (found in the ledger)") if found else NotHappened()


@tool(reconcile=paid)
def pay(amount: int) -> str:
    """Pay an amount into the ledger; when the file WORKER_JOURNAL.kill exists, the worker dies (SIGKILL) right
    after the payment, before its result is saved (the file is removed first, so this happens once).

    Args:
        amount: How much.
    """
    key = current_call().idempotency_key
    with open(os.environ["WORKER_JOURNAL"], "a", encoding="utf-8") as journal:
        journal.write(f"pay {key}\n")
    with open(os.environ["WORKER_JOURNAL"] + ".ledger", "a", encoding="utf-8") as ledger:
        ledger.write(f"{key} {amount}\n")
        ledger.flush()
        os.fsync(ledger.fileno())
    marker = os.environ["WORKER_JOURNAL"] + ".kill"
    if os.path.exists(marker):
        os.remove(marker)
        os.kill(os.getpid(), signal.SIGKILL)
    return f"paid {amount}"


def pay_once(request: Request) -> Reply | object:
    last = request.messages[-1]
    results = [block for block in last.content if isinstance(block, ToolResultBlock)]
    if results:
        return "model read: " + result_text(results[0].content)
    return tool_call("pay", amount=30)


def store_from_env() -> Store:
    where = os.environ["WORKER_STORE"]
    if where.startswith("sqlite:"):
        return SQLiteStore(where.removeprefix("sqlite:"))
    from alpineagents.postgres import PostgresStore

    return PostgresStore(where)


model: Model = FakeModel([answer] * 100_000)
workers = Workers(
    agents={
        "noter": Agent(model, tools=[note], reporter=None, human=None),
        "payer": Agent(FakeModel([pay_once] * 100), tools=[pay], reporter=None, human=None),
        "manager": Agent(
            FakeModel([manage] * 100_000),
            tools=[
                Agent(FakeModel([help_out] * 100_000), tools=[note], name="helper", description="Notes a task down")
            ],
            reporter=None,
            human=None,
        ),
    },
    store=store_from_env(),
    database=os.environ["WORKER_DATABASE"],
    concurrency=int(os.environ.get("WORKER_CONCURRENCY", "8")),
    grace=float(os.environ.get("WORKER_GRACE", "30")),
)
