"""Keeping the context small: count its tokens, clear old tool results, compact it into a summary."""

from alpineagents import Agent, Message, State, loop, tool, waiting_for_user
from alpineagents.blocks import CompactIfFull
from alpineagents.testing import FakeModel, tool_call


@tool(read_only=True)
def read_page(number: int) -> str:
    """Read one page of the manual.

    Args:
        number: The page number.
    """
    return f"Page {number}: " + "lorem ipsum " * 200


script = [tool_call("read_page", number=n) for n in range(1, 5)] + ["The manual says: be careful."]
agent = Agent(
    FakeModel(script + ["The person asked about the manual; it says: be careful."]), tools=[read_page], reporter=None
)
state = State(messages=[Message.user("What does the manual say?")])
agent.run(state)

print("tokens:", agent.context_tokens(state), f"({agent.context_used(state):.1%} of the window)")

state.clear_tool_results(keep_last=1)  # blank all but the last tool result; the history keeps them all
print("after clearing:", agent.context_tokens(state))

agent.compact(state)  # the model writes a summary, which replaces the messages
print("after compacting:", agent.context_tokens(state), [m.text for m in state.messages])


# In a loop of your own, compact when the context is fuller than a share of the model's window:
@loop(until=waiting_for_user, limit=50)
def thrifty(agent, state):
    CompactIfFull(at=0.5)(agent, state)  # the default loop runs compact_if_full, which compacts at 0.6
    agent.think(state)
    if state.pending_calls:
        agent.use_tools(state)


agent = agent.copy(loop=thrifty)
