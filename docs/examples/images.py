"""Images: a tool returns an Image (with text, in a list), and a user message can hold one too."""

from alpineagents import Agent, Image, Message, State, tool
from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import ToolResultEntry

# A 1x1 red PNG. Read a file with Image.from_path("chart.png"), or pass the bytes: Image(data).
RED_DOT = Image.from_base64(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)


@tool(read_only=True)
def screenshot(page: str) -> list:
    """Take a screenshot of a page of the app.

    Args:
        page: The page's name.
    """
    return [f"The {page} page:", RED_DOT]


model = FakeModel([tool_call("screenshot", page="runs"), "The page is one red dot."])
agent = Agent(model, tools=[screenshot])
state = State(messages=[Message.user("Does this look right?", RED_DOT)])
agent.run(state)

[result] = [entry for entry in state.history if isinstance(entry, ToolResultEntry)]
print([type(block).__name__ for block in result.content], result.content[1].media_type)
print(
    "the model got",
    len(model.requests[1].messages),
    "messages; the first holds",
    [type(block).__name__ for block in model.requests[1].messages[0].content],
)
