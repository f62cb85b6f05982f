"""Audit of 04 checks: assertions the area tests leave out (see each docstring)."""

from __future__ import annotations

from typing import Any

import pytest

from alpineagents.agent import Agent
from alpineagents.state import State
from alpineagents.testing import FakeModel
from alpineagents.tool import Tool, tool


class Ticket(Tool):
    def __init__(self) -> None:
        super().__init__(name="create_ticket", description="Create a ticket")

    def run(self, args: dict[str, Any], state: State) -> Any:
        return "created"


class Calc:
    @tool
    def add(self, a: int, b: int) -> int:
        return a + b


def test_check_38_subclass_mistakes_in_agent_tools() -> None:
    """Adds: the three Tool-subclass mistakes raise when given in Agent(tools=...), not only collect_tools."""

    class NoInit(Tool):
        def __init__(self) -> None:
            pass

        def run(self, args: dict[str, Any], state: State) -> Any:
            return None

    class NoRun(Tool):
        def __init__(self) -> None:
            super().__init__(name="norun")

    with pytest.raises(TypeError, match=r"did not call Tool\.__init__") as info:
        Agent(model=FakeModel([]), tools=[NoInit()], reporter=None)
    assert "super().__init__" in str(info.value)
    with pytest.raises(TypeError, match="does not implement run"):
        Agent(model=FakeModel([]), tools=[NoRun()], reporter=None)
    with pytest.raises(TypeError, match="got the class Ticket"):
        Agent(model=FakeModel([]), tools=[Ticket], reporter=None)


def test_check_42_collect_mistakes_in_agent_tools() -> None:
    """Adds: the four tools= mistakes of check 42 raise from Agent(tools=...)."""

    def plain_function(x: int) -> None: ...

    @tool(name="x")
    def one(a: int) -> None: ...

    @tool(name="x")
    def two(a: int) -> None: ...

    with pytest.raises(TypeError, match="unbound method tool"):
        Agent(model=FakeModel([]), tools=[Calc.add], reporter=None)
    with pytest.raises(TypeError, match="does not have @tool"):
        Agent(model=FakeModel([]), tools=[plain_function], reporter=None)
    with pytest.raises(TypeError, match="has no methods with @tool"):
        Agent(model=FakeModel([]), tools=[object()], reporter=None)
    with pytest.raises(ValueError, match="Duplicate tool name 'x'"):
        Agent(model=FakeModel([]), tools=[one, two], reporter=None)
