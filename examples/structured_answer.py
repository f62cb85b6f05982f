"""A structured answer: ask the model a side question and get a dataclass back.

`agent.ask(state, prompt, returns=Plan)` asks again (up to `retries`) when a reply does not fit the format, and
records one `ask` entry; the conversation itself does not change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alpineagents import Agent, Message, State


@dataclass
class Plan:
    steps: list[str]
    risky: bool


def main(model: Any = "claude-sonnet-5", **settings: Any) -> Plan:
    agent = Agent(model, **settings)
    state = State(messages=[Message.user("We need to move the users table to a new database.")])
    plan = agent.ask(state, "Make a plan for this task.", returns=Plan)
    for number, step in enumerate(plan.steps, 1):
        print(f"{number}. {step}")
    print("risky" if plan.risky else "safe")
    return plan


if __name__ == "__main__":
    main()
