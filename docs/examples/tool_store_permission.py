"""An agent with tools, a store and permissions: the model may read freely, but writing needs a person's yes."""

import tempfile
from pathlib import Path

from alpineagents import Agent, Message, SQLiteStore, State, tool
from alpineagents.permissions import AllowByReadOnly, DecideByHuman, DenyByName
from alpineagents.testing import FakeHuman, FakeModel, tool_call

folder = Path(tempfile.mkdtemp())
(folder / "notes.txt").write_text("buy milk\n")


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a text file.

    Args:
        path: The file's name.
    """
    return (folder / path).read_text()


@tool
def write_file(path: str, content: str) -> str:
    """Write a text file.

    Args:
        path: The file's name.
        content: The new text of the file.
    """
    (folder / path).write_text(content)
    return f"wrote {len(content)} characters"


@tool
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file's name.
    """
    (folder / path).unlink()
    return "deleted"


model = FakeModel(
    [
        tool_call("read_file", path="notes.txt"),
        tool_call("write_file", path="notes.txt", content="buy milk\nbuy bread\n"),
        "Done: bread is on the list.",
    ]
)
store = SQLiteStore(folder / "runs.db")
agent = Agent(
    model,
    tools=[read_file, write_file, delete_file],
    store=store,
    permissions=[DenyByName(["delete_*"]), AllowByReadOnly(), DecideByHuman()],
    human=FakeHuman(["yes"]),  # answers "yes" to the one question; leave it out to be asked in the terminal
)
state = State(id="shopping-1", messages=[Message.user("Add bread to my shopping list")])
agent.run(state)

print("file:", (folder / "notes.txt").read_text().splitlines())
print("saved:", [info.id for info in store.list()])
print("reloaded turns:", store.load("shopping-1").turn)
