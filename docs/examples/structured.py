"""A structured answer: agent.ask(state, prompt, returns=Type) gives a typed value back."""

from dataclasses import dataclass

from pydantic import BaseModel

from alpineagents import Agent, Message, State
from alpineagents.testing import FakeModel


@dataclass
class Plan:
    steps: list[str]
    risky: bool


class Invoice(BaseModel):
    number: str
    total: float


model = FakeModel(
    [
        "Here is my plan: first copy, then switch.",  # not JSON: ask says what was wrong and asks again
        '{"steps": ["Copy the table", "Switch the readers", "Drop the old table"], "risky": true}',
        '```json\n{"number": "A-17", "total": 129.5}\n```',  # JSON in a code fence is fine
    ]
)
agent = Agent(model, reporter=None)
state = State(messages=[Message.user("We need to move the users table to a new database.")])

plan = agent.ask(state, "Make a plan for this task.", returns=Plan)
print(plan)

invoice = agent.ask(state, "Which invoice is this about?", returns=Invoice)
print(invoice)

print("the conversation did not change:", [message.role for message in state.messages])
print("history:", [entry.kind for entry in state.history])
