"""The first agent against a real provider. Needs the network and ANTHROPIC_API_KEY (or OPENAI_API_KEY with
"openai/gpt-5")."""

from alpineagents import Agent, tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


agent = Agent("anthropic/claude-sonnet-5", system="You are a careful calculator.", tools=[add])
print(agent.run("What is 1234 + 4321?"))
