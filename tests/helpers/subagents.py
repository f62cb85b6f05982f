"""Agents that ask agents, for the tests of what a run with subagents records, streams and shows."""

from __future__ import annotations

from alpineagents.agent import Agent
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import Tool


def asking_helper(adder: Tool) -> Agent:
    """A helper Agent (named `helper`) that asks an inner helper (named `inner`), which calls `adder` on 2 and 2."""
    inner = Agent(
        FakeModel([tool_call(adder.name, a=2, b=2), "Inner: 4."]),
        tools=[adder],
        name="inner",
        description="Adds.",
        reporter=None,
    )
    return Agent(
        FakeModel([["Asking.", tool_call("inner", prompt="2 + 2?")], "Helper: 4."]),
        tools=[inner],
        name="helper",
        description="Asks.",
        reporter=None,
    )
