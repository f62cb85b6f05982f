"""Subagents: an Agent with a name and a description, listed in another Agent's tools, runs as a tool call."""

import tempfile

from alpineagents import Agent, SQLiteStore, tool
from alpineagents.testing import FakeModel, tool_call


@tool(read_only=True)
def search(query: str) -> str:
    """Search the web.

    Args:
        query: What to look for.
    """
    return "Bern is the federal city of Switzerland."


researcher = Agent(
    FakeModel([tool_call("search", query="capital of Switzerland"), "Bern (the 'federal city')."]),
    tools=[search],
    name="researcher",  # the tool name the main agent sees
    description="Looks things up on the web and answers with sources.",
)
store = SQLiteStore(tempfile.mkdtemp() + "/runs.db")
main = Agent(
    FakeModel([tool_call("researcher", prompt="What is the capital of Switzerland?"), "It is Bern."]),
    tools=[researcher],
    store=store,  # the subagent's run is saved too, as a child of the call that started it
)
answer = main.run("Find out the capital of Switzerland")

for info in store.list():
    print("saved:", "child of the main run" if info.parent_id else "the main run", "-", info.first_message)
