"""The Agents of tests/test_budgets.py (a parent and two subagents that share one budget), and its child program:
one step of a budget flow, in a process of its own.

`python tests/helpers/budget_child.py STEP KIND DIR [ARGS...]` with KIND `file` or `sqlite` (the store in DIR). It
prints one JSON line.

- `start USD`: run a new State `job` with a budget of USD dollars until it stops. Prints the stop, the waits and
  what is spent.
- `raise USD`: load the State, raise its budget by USD dollars, save. Prints the raise.
- `resume`: load the State and run it (the Agent's budget as at the start). Prints the answer, the stop and what is
  spent.

The models answer by what they read (a function of the request), so a process that resumes a run needs no script
of what the others did.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from alpineagents.agent import Agent
from alpineagents.state import State
from alpineagents.store import FileStore, SQLiteStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Budget, Message, Price, Request, ToolResultBlock

PRICE = Price(input=2.0, output=8.0)
MAX_TOKENS = 40


@tool
def note(text: str) -> str:
    """Write a note down.

    Args:
        text: What to write.
    """
    return f"noted: {text}"


def _results(request: Request) -> int:
    return sum(isinstance(b, ToolResultBlock) for m in request.messages for b in m.content)


def _helper_reply(name: str) -> Any:
    def reply(request: Request) -> Any:
        done = _results(request)
        if done < 2:
            return tool_call("note", text=f"{name} step {done + 1}")
        return f"{name} finished."

    return reply


def _top_reply(request: Request) -> Any:
    if _results(request) == 0:
        return [tool_call("alpha", prompt="Look at part A"), tool_call("beta", prompt="Look at part B")]
    return "Both parts done."


def model(reply: Any, price: Price | None) -> FakeModel:
    found = FakeModel([reply] * 20, price=price)
    found.max_tokens = MAX_TOKENS  # the largest output a request may produce (these replies are shorter)
    return found


def agents(store: Store | None, budget: Budget | None, price: Price | None = PRICE) -> Agent:
    """The parent (with `budget`) and its two subagents, each on its own FakeModel."""
    helpers = [
        Agent(model(_helper_reply(name), price), tools=[note], name=name, description=f"Looks at part {name}.")
        for name in ("alpha", "beta")
    ]
    return Agent(model(_top_reply, price), tools=helpers, reporter=None, store=store, budget=budget)


def requests_sent(agent: Agent) -> int:
    """The requests the parent's and the subagents' models answered."""
    helpers = [tool.agent for tool in agent.tool_map.values() if hasattr(tool, "agent")]  # type: ignore[attr-defined]
    return sum(len(a.model.requests) for a in [agent, *helpers])  # type: ignore[attr-defined]


def store_of(kind: str, where: str) -> Store:
    return FileStore(where) if kind == "file" else SQLiteStore(os.path.join(where, "states.db"))


def main() -> None:
    step, kind, where, *rest = sys.argv[1:]
    store = store_of(kind, where)
    budget = Budget(usd=float(os.environ["BUDGET_USD"]))
    if step == "start":
        agent = agents(store, budget)
        state = State(id="job", messages=[Message.user("Look at both parts")])
        agent.run(state)
        waits = [{"path": list(w.path), "limit": w.limit, "short_by": w.short_by} for w in state.awaiting_budget]
        spent = state.budget.spent.usd if state.budget else None
        sent = requests_sent(agent)
        print(json.dumps({"stopped": str(state.stopped), "waits": waits, "spent": spent, "sent": sent}))
    elif step == "raise":
        state = store.load("job")
        spent = state.budget.spent.usd if state.budget else None  # the waiting subagent's spend is read too
        raised = state.raise_budget(usd=float(rest[0]), by="ana")
        store.save(state)
        print(json.dumps({"amounts": raised.amounts, "budget_of": raised.budget_of, "spent": spent}))
    else:
        state = store.load("job")
        agent = agents(store, budget)
        answer = agent.run(state)
        status = state.budget
        print(
            json.dumps(
                {
                    "answer": answer,
                    "stopped": str(state.stopped),
                    "cost": state.usage.cost,
                    "requests": state.usage.requests,
                    "limit": status.budget.usd if status else None,
                    "sent": requests_sent(agent),
                }
            )
        )


if __name__ == "__main__":
    main()
