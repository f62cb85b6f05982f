"""What a State holds after a run: the history, and the values computed from it."""

from alpineagents import Agent, Message, State, tool
from alpineagents.testing import FakeModel, tool_call


@tool
def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: The city's name.
    """
    return "sunny, 21 C"


model = FakeModel([tool_call("weather", city="Bern"), "It is sunny in Bern."])
agent = Agent(model, tools=[weather], reporter=None)  # reporter=None: a silent run

state = State(messages=[Message.user("What is the weather in Bern?")])
agent.run(state)

for entry in state.history:  # every fact, in order; nothing is ever edited or removed
    print(entry.kind)
print("turn:", state.turn)
print("answer:", state.answer)
print("stopped:", state.stopped)
print("pending calls:", state.pending_calls)
print("roles of the messages the model reads:", [message.role for message in state.messages])

state.add_message(Message.user("And tomorrow?"))  # the next message; run the agent again to go on
print("after add_message:", state.history[-1].kind, "- finished:", state.finished)
