"""A loop of your own: a plain function that calls think and use_tools, with stop rules from @loop."""

from alpineagents import Agent, Message, State, loop, tool
from alpineagents.testing import FakeModel, tool_call


@tool
def roll() -> int:
    """Roll a die."""
    return 6


def answered(state):
    """Stop when the last message is the model's (it replied without asking for a tool)."""
    return state.messages[-1].role == "assistant"


@loop(until=answered, limit=5)  # checked before each turn; limit counts the turns of this call
def careful(agent, state):
    agent.think(state)  # one model request
    if state.pending_calls:
        agent.use_tools(state)  # run the calls the model asked for


model = FakeModel([tool_call("roll"), tool_call("roll"), "Two sixes!"])
agent = Agent(model, tools=[roll], loop=careful, reporter=None)
answer = agent.run("Roll twice")
print("answer:", answer)

# When the limit comes first, the run stops there and says so:
agent = agent.copy(model=FakeModel([tool_call("roll")] * 10))
state = State(messages=[Message.user("Roll until you get a one")])
agent.run(state)
print("turns:", state.turn, "-", state.stopped)
