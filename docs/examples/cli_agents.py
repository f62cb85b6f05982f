"""An Agent for the command line to run: `alpineagents run cli_agents.py:agent "..."`. Scripted, so it runs offline."""

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


agent = Agent(FakeModel([tool_call("add", a=2, b=3), "2 + 3 = 5."]), tools=[add])
