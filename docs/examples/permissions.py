"""Permissions: every call is checked before any tool of the turn runs; a person approves the rest."""

from alpineagents import Agent, Message, State, tool
from alpineagents.permissions import (
    AllowByReadOnly,
    Allowed,
    DecideByHuman,
    DecidePermission,
    Denied,
    DenyByName,
)
from alpineagents.testing import FakeHuman, FakeModel, tool_call
from alpineagents.types import ToolResultEntry


@tool(read_only=True)
def list_orders() -> list[str]:
    """List the open orders."""
    return ["A-1", "A-2"]


@tool
def refund(order: str, amount: float) -> str:
    """Refund an order.

    Args:
        order: The order number.
        amount: How much to give back, in euros.
    """
    return f"refunded {amount} on {order}"


@tool
def shell(command: str) -> str:
    """Run a shell command.

    Args:
        command: The command line.
    """
    raise AssertionError("never runs: denied by name")


class SmallRefunds(DecidePermission):
    """Allow small refunds, refuse huge ones, and leave the rest (and other tools) to the next permission."""

    def __init__(self, limit: float) -> None:
        object.__setattr__(self, "limit", limit)  # permissions are frozen dataclasses

    def check(self, state, call, tool):
        if call.name != "refund":
            return None  # no opinion: the next permission decides
        if call.args["amount"] <= self.limit:
            return Allowed()
        if call.args["amount"] > 10 * self.limit:
            return Denied(f"refunds above {10 * self.limit} euros need a manager")
        return None

    def __repr__(self) -> str:
        return f"SmallRefunds({self.limit})"


human = FakeHuman(["yes"])  # in a terminal, the Terminal asks the person instead
calls = [
    tool_call("list_orders"),
    tool_call("shell", command="rm -rf /"),
    tool_call("refund", order="A-1", amount=20),
    tool_call("refund", order="A-2", amount=500),
    tool_call("refund", order="A-3", amount=5000),
]
model = FakeModel([calls, "Two refunds are done; the third needs a manager."])
agent = Agent(
    model,
    tools=[list_orders, refund, shell],
    permissions=[DenyByName(["shell", "*_admin"]), AllowByReadOnly(), SmallRefunds(100), DecideByHuman()],
    human=human,
    reporter=None,
)
state = State(messages=[Message.user("Refund the open orders")])
agent.run(state)
results = {entry.call.id: entry for entry in state.history if isinstance(entry, ToolResultEntry)}
for call in calls:  # the history has them in the order they finished; print them in the order they were asked
    entry = results[call.id]
    print(f"{call.name}: {entry.outcome.value}: {entry.content}")
print("questions asked:", human.questions)
