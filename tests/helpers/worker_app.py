"""The application the worker tests run in worker processes: `alpineagents worker worker_app:workers`.

Configured by the environment the test gives each process: `WORKER_STORE` (`sqlite:PATH` or a PostgreSQL URL),
`WORKER_DATABASE` (the DBOS system database), `WORKER_JOURNAL` (a file every tool call appends a line to, so a
call that ran twice shows). The model is scripted: it asks for one `note` call per run, then answers. The
"manager" Agent hands each task to a subagent, "helper", which notes it down; the manager answers with what the
helper said.
"""

from __future__ import annotations

import os
import time

from alpineagents.agent import Agent
from alpineagents.models.base import Model
from alpineagents.store import SQLiteStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
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
