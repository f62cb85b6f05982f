"""Helpers shared by the test files: a one-message task, and views of a State's history."""

from __future__ import annotations

from alpineagents.state import State
from alpineagents.types import Message, ToolResultEntry


def task(text: str = "Task") -> State:
    """A fresh State whose only message is the user's `text`."""
    return State(messages=[Message.user(text)])


def results(state: State) -> list[ToolResultEntry]:
    """Every tool result of the State's history, in order."""
    return [entry for entry in state.history if isinstance(entry, ToolResultEntry)]


def kinds(state: State) -> list[str]:
    """The kinds of the State's history entries, in order."""
    return [entry.kind for entry in state.history]
