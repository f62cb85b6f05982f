"""The program runs a tool itself: the model reads the call and its result as if it had made the call."""

from alpineagents import Agent, Message, State, tool
from alpineagents.permissions import AllowByDefault, DenyByName
from alpineagents.testing import FakeModel


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: The file to read.
    """
    return "[tool.pytest]\naddopts = -q"


@tool
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file to delete.
    """
    return f"deleted {path}"


model = FakeModel(["The tests run quietly (-q)."])
agent = Agent(
    model,
    tools=[read_file, delete_file],
    permissions=[DenyByName(["delete_*"], reason="Deleting is not allowed."), AllowByDefault()],
    reporter=None,
)
state = State(messages=[Message.user("How do the tests run?")])

# Give the model the file up front instead of waiting for it to ask.
print(agent.run_tool(state, "read_file", path="pyproject.toml"))
# The Agent's permissions apply to the program's calls too: the result is the refusal.
print(agent.run_tool(state, delete_file, path="pyproject.toml"))

print(agent.run(state))
print([message.role for message in model.requests[0].messages])
# Each call the program made is a turn whose request and reply name the model "program".
print(state)
