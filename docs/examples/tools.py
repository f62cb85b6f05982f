"""Tools: typed functions, methods of an object, a Tool class, and how failures reach the model."""

import json

from alpineagents import Agent, Message, State, Tool, ToolError, tool
from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import ToolResultEntry


@tool(read_only=True)
def find_user(email: str, active_only: bool = True) -> dict:
    """Find a user by email address.

    Args:
        email: The address to look for.
        active_only: Skip users who closed their account.
    """
    if "@" not in email:
        raise ToolError(f"{email!r} is not an email address; ask the person for theirs")
    return {"name": "Ada", "email": email}


class Counter:
    """An object whose decorated methods become tools; they share the object's data."""

    def __init__(self) -> None:
        self.count = 0

    @tool
    def increment(self, by: int = 1) -> int:
        """Add to the counter and return its new value.

        Args:
            by: How much to add.
        """
        self.count += by
        return self.count


class Clock(Tool):
    """A tool written as a class: a name, a description, a JSON schema, and run()."""

    def __init__(self) -> None:
        super().__init__(name="clock", description="The current time.", read_only=True)

    def run(self, args, state):
        return "09:30"


# What the model reads about a function tool: its name, the docstring's first line, a schema from the signature.
print(json.dumps(find_user.input_schema, indent=2))

calls = [  # one reply, four calls: they run in parallel, and each result is recorded as it finishes
    tool_call("find_user", email="ada@example.com"),
    tool_call("find_user", email="nobody"),
    tool_call("increment", by="many"),
    tool_call("clock"),
]
model = FakeModel([calls, "Found Ada."])
agent = Agent(model, tools=[find_user, Counter(), Clock()], reporter=None)
state = State(messages=[Message.user("Who is ada@example.com?")])
agent.run(state)
results = {entry.call.id: entry for entry in state.history if isinstance(entry, ToolResultEntry)}
for call in calls:  # the history has them in the order they finished; print them in the order they were asked
    entry = results[call.id]
    print(f"{call.name}: {entry.outcome.value}: {entry.content}")
