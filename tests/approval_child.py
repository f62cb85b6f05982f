"""The child program of tests/test_approvals.py: one step of an approval flow, in a process of its own.

`python tests/approval_child.py STEP KIND WHERE [ARGS...]` with KIND `file`/`sqlite` (WHERE a folder) or
`postgres` (WHERE `dsn|schema`). It prints one JSON line.

- `start ID [subagent]`: run a new State `ID` whose model asks for `send(to="a")` and `send(to="b")`, both held by
  `DeferByName(["send"])` (with `subagent`: the top Agent asks a helper Agent, whose calls are held). Prints
  `stopped` and the waiting calls.
- `decide ID`: load the State, approve the first waiting call and deny the second, save. Prints the decisions.
- `resume ID [subagent]`: load the State and run it to the end. Prints the answer and what the model read.

Every `send` that runs appends a line to `sent.txt` in the folder of the test (`SENT` in the environment).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from alpineagents.agent import Agent
from alpineagents.permissions import AllowByDefault, DeferByName
from alpineagents.postgres import PostgresStore
from alpineagents.state import State
from alpineagents.store import FileStore, SQLiteStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message, ToolResultBlock


@tool
def send(to: str) -> str:
    """Send the report to someone.

    Args:
        to: Who gets it.
    """
    with open(os.environ["SENT"], "a", encoding="utf-8") as file:
        file.write(to + "\n")
    return f"sent to {to}"


def store_of(kind: str, where: str) -> Store:
    if kind == "file":
        return FileStore(where)
    if kind == "sqlite":
        return SQLiteStore(os.path.join(where, "states.db"))
    dsn, schema = where.split("|")
    return PostgresStore(dsn, schema=schema)


def agents(store: Store, script: list[Any], helper_script: list[Any]) -> Agent:
    held = [DeferByName(["send"], question="Send the report?"), AllowByDefault()]
    helper = Agent(
        FakeModel(helper_script),
        tools=[send],
        name="helper",
        description="Sends reports.",
        reporter=None,
        permissions=held,
    )
    return Agent(FakeModel(script), tools=[send, helper], reporter=None, store=store, permissions=held)


def read_results(model: Any) -> list[str]:
    found = []
    for request in model.requests:
        for message in request.messages:
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    found.append(str(block.content))
    return found


def main() -> None:
    step, kind, where, state_id, *rest = sys.argv[1:]
    subagent = "subagent" in rest
    store = store_of(kind, where)
    calls = [tool_call("send", to="a"), tool_call("send", to="b")]
    if step == "start":
        script = [tool_call("helper", prompt="send both")] if subagent else [calls]
        agent = agents(store, script, [calls])
        state = State(id=state_id, messages=[Message.user("Send the report to a and b")])
        agent.run(state)
        waiting = [{"id": w.call.id, "path": list(w.path), "question": w.question} for w in state.awaiting_approval]
        print(json.dumps({"stopped": str(state.stopped), "waiting": waiting}))
    elif step == "decide":
        state = store.load(state_id)
        first, second = state.awaiting_approval
        approved = state.approve(first.call.id, by="ana", note="fine")
        denied = state.deny(second.call.id, "Not b, they left.", by="bob")
        store.save(state)
        print(
            json.dumps({"approved": approved.call_id, "denied": denied.call_id, "left": len(state.awaiting_approval)})
        )
    else:
        state = store.load(state_id)
        top_script: list[Any] = ["All sent."]
        helper_script: list[Any] = ["Sent to a only."]
        if not subagent:
            helper_script = []
        agent = agents(store, top_script, helper_script)
        answer = agent.run(state)
        model: Any = agent.model
        helper_model: Any = agent.tool_map["helper"].agent.model if subagent else None  # type: ignore[attr-defined]
        read = read_results(model) + (read_results(helper_model) if helper_model is not None else [])
        print(json.dumps({"answer": state.answer, "returned": answer, "read": read}))


if __name__ == "__main__":
    main()
