"""The application of tests/test_workers_approvals.py: `alpineagents worker approval_worker_app:workers`.

Configured by the environment: `WORKER_STORE` (`sqlite:PATH` or a PostgreSQL URL), `WORKER_DATABASE` (the DBOS
system database), `SENT` (a file each `send` that runs appends a line to). The "mailer" Agent asks for
`send(to="a")` and `send(to="b")`, held for approval by `DeferByName(["send"])`, then answers with what it read.
The "capped" Agent asks for the same calls under a budget of one tool call, so they wait for a raise.
"""

from __future__ import annotations

import os

from alpineagents.agent import Agent
from alpineagents.permissions import AllowByDefault, DeferByName
from alpineagents.store import SQLiteStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Budget, Reply, Request, ToolResultBlock, result_text
from alpineagents.workers import Workers


@tool
def send(to: str) -> str:
    """Send the report.

    Args:
        to: Who gets it.
    """
    with open(os.environ["SENT"], "a", encoding="utf-8") as file:
        file.write(to + "\n")
        file.flush()
        os.fsync(file.fileno())
    return f"sent to {to}"


def mail(request: Request) -> Reply | object:
    results = [block for block in request.messages[-1].content if isinstance(block, ToolResultBlock)]
    if results:
        return " | ".join(result_text(block.content) for block in results)
    return [tool_call("send", to="a"), tool_call("send", to="b")]


def store_from_env() -> Store:
    where = os.environ["WORKER_STORE"]
    if where.startswith("sqlite:"):
        return SQLiteStore(where.removeprefix("sqlite:"))
    from alpineagents.postgres import PostgresStore

    return PostgresStore(where)


workers = Workers(
    agents={
        "mailer": Agent(
            FakeModel([mail] * 1000),
            tools=[send],
            reporter=None,
            human=None,
            permissions=[DeferByName(["send"]), AllowByDefault()],
        ),
        "capped": Agent(FakeModel([mail] * 1000), tools=[send], reporter=None, human=None, budget=Budget(tool_calls=1)),
    },
    store=store_from_env(),
    database=os.environ["WORKER_DATABASE"],
)
