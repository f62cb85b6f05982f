"""Human role and answer-format helpers, and asking a Human through an Agent."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Any, Literal

import pytest

from alpineagents import human as human_module
from alpineagents.agent import Agent
from alpineagents.errors import NoHumanError
from alpineagents.human import Human, Question, check_returns, describe_choices, parse_answer
from alpineagents.state import State
from alpineagents.testing import FakeHuman, FakeModel
from alpineagents.types import Exchange, ExchangeEntry
from conftest import task


def test_exports():
    assert human_module.__all__ == ["Human", "check_returns", "parse_answer", "describe_choices"]


class SyncHuman(Human):
    def __init__(self, answer: Any = "yes") -> None:
        self.answer = answer
        self.threads: list[int] = []

    def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
        self.threads.append(threading.get_ident())
        return parse_answer(self.answer, returns)


class AsyncHuman(Human):
    async def aask(self, state: Any, prompt: str, returns: Any = str) -> Any:
        return parse_answer("yes", returns)


def test_a_human_must_implement_ask_or_aask():
    with pytest.raises(TypeError, match="Human implements neither ask nor aask") as info:
        Human()
    assert "Fix:" in str(info.value)

    class Middle(Human):
        pass

    with pytest.raises(TypeError, match="Middle implements neither ask nor aask"):
        Middle()

    class Leaf(Middle):
        def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            return "x"

    assert Leaf().ask(None, "q") == "x"  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"answers only asynchronously \(it implements aask, not ask\)") as info:
        AsyncHuman().ask(None, "Continue?", bool)  # type: ignore[arg-type]
    assert "await agent.aask_human(" in str(info.value)
    assert asyncio.run(AsyncHuman().aask(None, "Continue?", bool)) is True  # type: ignore[arg-type]


def test_aask_default_runs_ask_on_worker_thread():
    h = SyncHuman("yes")

    async def main() -> tuple[Any, int]:
        return await h.aask(None, "Go?", bool), threading.get_ident()  # type: ignore[arg-type]

    answer, loop_thread = asyncio.run(main())
    assert answer is True
    assert h.threads and h.threads[0] != loop_thread


def test_parse_answer_converts_or_explains():
    assert parse_answer(" Yes ", bool) is True
    assert parse_answer("0", bool) is False
    for word in ("y", "YES", "true", "1"):
        assert parse_answer(word, bool) is True
    for word in ("n", "No", "FALSE", "0"):
        assert parse_answer(word, bool) is False
    assert parse_answer(True, bool) is True
    assert parse_answer(False, bool) is False
    with pytest.raises(ValueError) as info:
        parse_answer("maybe", bool)
    assert str(info.value) == "Answer 'yes' or 'no'"
    assert parse_answer("1", Literal[1, 2]) == 1
    assert parse_answer(2, Literal[1, 2]) == 2
    assert parse_answer(1, Literal["1", "2"]) == "1"
    assert parse_answer(" b ", Literal["a", "b"]) == "b"
    with pytest.raises(ValueError) as info:
        parse_answer("c", Literal["a", "b"])
    assert str(info.value) == "Answer with one of: a, b"
    with pytest.raises(ValueError) as info:
        parse_answer("  ", str)
    assert str(info.value).startswith("Empty answers are not accepted")
    assert str(info.value) == "Empty answers are not accepted. Please type something"
    assert parse_answer(" hi ", str) == "hi"
    assert parse_answer(42, str) == "42"
    with pytest.raises(TypeError, match="ask_human does not support returns="):
        parse_answer("1", int)


def test_check_returns_and_describe_choices():
    @dataclasses.dataclass
    class Point:
        x: int

    for bad in (int, Point, Literal, list, None, "str"):
        with pytest.raises(TypeError, match="ask_human does not support returns=") as info:
            check_returns(bad)
        assert "str, bool or Literal[...]" in str(info.value)
    for good in (str, bool, Literal["a"], Literal[1, "b"]):
        check_returns(good)
    assert describe_choices(bool) == "yes/no"
    assert describe_choices(Literal["a", "b", "c"]) == "a/b/c"
    assert describe_choices(Literal["a", 1]) == "a/1"
    assert describe_choices(str) is None
    assert describe_choices(int) is None


# --- asking through an Agent -------------------------------------------------------------------------


def human_entries(state: State) -> list[ExchangeEntry]:
    return [entry for entry in state.history if isinstance(entry, ExchangeEntry) and entry.kind == "human"]


def test_agent_ask_human_records_the_exchange_and_needs_a_human():
    state = task()
    before = state.messages
    agent = Agent(FakeModel([]), reporter=None, human=FakeHuman(["y"]))
    assert agent.ask_human(state, "Continue?", returns=bool) is True
    assert state.messages == before
    entries = human_entries(state)
    assert len(entries) == 1
    assert entries[0].content == Exchange("Continue?", True)
    assert entries[0].usage is None
    nobody = Agent(FakeModel([]), reporter=None, human=None)
    with pytest.raises(NoHumanError) as info:
        nobody.ask_human(state, "Continue?", returns=bool)
    assert "ask_human() was called on an Agent with human=None (question: 'Continue?')" in str(info.value)
    with pytest.raises(NoHumanError, match=r"aask_human\(\) was called on an Agent with human=None"):
        asyncio.run(nobody.aask_human(state, "Continue?", returns=bool))
    assert len(human_entries(state)) == 1


def test_question_rules():
    state = task()
    with pytest.raises(TypeError, match=r"The first argument of agent.ask_human\(\) must be a State \(got: 'x'\)"):
        Question("x", SyncHuman(), "Q?").ask()  # type: ignore[arg-type]
    # NoHumanError takes precedence over a bad returns=
    with pytest.raises(NoHumanError, match="called by a subagent with no human to ask") as info:
        Question(state, None, "Q?", int, inherited=True).ask()
    assert "the run that started it has human=None" in str(info.value)
    with pytest.raises(TypeError, match="ask_human does not support returns="):
        Question(state, SyncHuman(), "Q?", int).ask()

    class DuckAsync:
        async def aask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            return "ok"

        def __repr__(self) -> str:
            return "DuckAsync()"

    with pytest.raises(TypeError, match=r"human=DuckAsync\(\) answers only asynchronously \(it has aask, not ask\)"):
        Question(state, DuckAsync(), "Q?").ask()
    with pytest.raises(TypeError, match="AsyncHuman answers only asynchronously"):
        Question(state, AsyncHuman(), "Q?").ask()
    assert human_entries(state) == []

    class Failing(Human):
        def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            raise EOFError

    with pytest.raises(EOFError):
        Question(state, Failing(), "Q?").ask()
    assert human_entries(state) == []

    class Structured(Human):
        def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            return {"a": [1, 2]}

    assert Question(state, Structured(), "Q?").ask() == {"a": [1, 2]}
    assert human_entries(state)[-1].content == Exchange("Q?", {"a": [1, 2]})

    class Duck:
        def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            return "duck"

    assert asyncio.run(Question(state, DuckAsync(), "Q1?").aask()) == "ok"
    assert asyncio.run(Question(state, Duck(), "Q2?").aask()) == "duck"
    assert [entry.content.question for entry in human_entries(state)][-2:] == ["Q1?", "Q2?"]


def test_a_human_whose_ask_is_an_async_def_is_refused_when_created():
    class Slack(Human):
        async def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:  # meant: aask
            return "yes"

    with pytest.raises(TypeError) as info:
        Slack()
    assert str(info.value).startswith("Slack.ask is an async def, and ask must be a plain def")
    assert "Name the async method aask" in str(info.value)


@pytest.mark.parametrize("how", ["sync", "async"])
def test_an_object_whose_ask_is_an_async_def_records_nothing(how: str) -> None:
    class Pager:  # not a Human subclass: accepted for its ask method
        async def ask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            return "yes"

    agent = Agent(FakeModel([]), reporter=None, human=Pager())
    state = task()
    with pytest.raises(TypeError, match="Pager.ask is an async def"):
        if how == "sync":
            agent.ask_human(state, "Go?", returns=bool)
        else:
            asyncio.run(agent.aask_human(state, "Go?", returns=bool))
    assert not any(isinstance(entry, ExchangeEntry) for entry in state.history)
