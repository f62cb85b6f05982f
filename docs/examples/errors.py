"""What the errors look like, and how a program catches them."""

import warnings

from alpineagents import Agent, Message, Reply, State, Usage
from alpineagents.errors import AlpineAgentsError, CutOffError, NoHumanError, OutputError, ResumeWarning
from alpineagents.testing import FakeModel

# A wrong use of the library: a plain TypeError or ValueError that says what is wrong, how to fix it, an example.
try:
    Agent("anthropic/claude-sonnet-5", tools=["search"])
except TypeError as error:
    print(error)
print()

state = State(messages=[Message.user("Summarize the report")])

# Nobody to ask: the Agent has human=None.
try:
    Agent(FakeModel([]), reporter=None, human=None).ask_human(state, "Which report?")
except NoHumanError as error:
    print("NoHumanError:", str(error).splitlines()[0])

# The model never gave an answer of the asked type (after retries=2 more tries).
try:
    Agent(FakeModel(["no", "still no", "never"]), reporter=None).ask(state, "How many pages?", returns=int)
except OutputError as error:
    print("OutputError:", str(error).splitlines()[0])

# The output limit cut a reply off before it held any text or tool call.
cut = Reply(
    message=Message(role="assistant", content=()),
    stop_reason="max_tokens",
    usage=Usage(input_tokens=10, output_tokens=4096),
    model="fake",
)
try:
    Agent(FakeModel([cut]), reporter=None).run(State(messages=[Message.user("Write a novel")]))
except CutOffError as error:
    print("CutOffError:", str(error).splitlines()[0])
    print("the reply is on the error:", error.reply.stop_reason)

# Everything about the world outside your code derives from AlpineAgentsError.
print(issubclass(CutOffError, AlpineAgentsError), issubclass(ResumeWarning, UserWarning))
warnings.simplefilter("ignore", ResumeWarning)  # a warning, not an error: silence it like any other
