"""A first agent with one tool, run offline: FakeModel plays the model."""

from alpineagents import Agent, tool
from alpineagents.testing import FakeModel, tool_call


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


# The model asks for the tool once, then answers with the tool's result in view.
model = FakeModel([tool_call("add", a=1234, b=4321), "1234 + 4321 = 5555."])
agent = Agent(model, system="You are a careful calculator.", tools=[add])
answer = agent.run("What is 1234 + 4321?")
print("answer:", answer)
