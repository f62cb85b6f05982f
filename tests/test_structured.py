"""Side questions: `ask` / `aask` with `returns=`, `ask_human`, and `_structured.parse_reply`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

import pytest
from pydantic import BaseModel

from alpineagents._structured import check_returns, parse_reply, question_text
from alpineagents.agent import Agent
from alpineagents.errors import NoHumanError, OutputError
from alpineagents.testing import FakeHuman, FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import TextBlock, ToolResultBlock
from conftest import task


@dataclass
class Plan:
    steps: list[str]


class Review(BaseModel):
    approved: bool
    comments: str


@tool
def helper() -> str:
    """Helps."""
    return "ok"


def test_ask_returns_text_and_changes_no_context() -> None:
    fake = FakeModel(["The summary"])
    agent = Agent(fake, tools=[helper], reporter=None)
    state = task()
    before = state.snapshot()
    assert agent.ask(state, "Summarize") == "The summary"
    assert state.messages == before.messages and state.answer == before.answer
    entries = [e for e in state.history if e.kind == "ask"]
    assert len(entries) == 1 and entries[0].usage.requests == 1
    assert entries[0].content.question == "Summarize" and entries[0].content.answer == "The summary"
    request = fake.requests[0]
    assert request.tool_choice == "none" and [s.name for s in request.tools] == ["helper"]
    assert request.messages[-1].text == "Summarize"


def test_ask_retries_after_a_reply_that_does_not_fit() -> None:
    fake = FakeModel(["This is not JSON", '{"steps": ["First step"]}'])
    agent = Agent(fake, reporter=None)
    state = task()
    assert agent.ask(state, "Make a plan", returns=Plan) == Plan(["First step"])
    entries = [e for e in state.history if e.kind == "ask"]
    assert len(entries) == 1 and entries[0].usage.requests == 2
    assert entries[0].content.answer == {"steps": ["First step"]}
    second = fake.requests[1].messages
    assert second[-2].role == "assistant" and second[-2].text == "This is not JSON"
    assert second[-1].text.startswith("The reply does not match the format: no JSON found in the reply")
    assert fake.requests[0].messages[-1].text.startswith("Make a plan\n\nReply with a single JSON value")


def test_ask_fails_after_all_attempts_and_checks_its_arguments() -> None:
    agent = Agent(FakeModel(["bad", "worse"]), reporter=None)
    state = task()
    with pytest.raises(OutputError, match=r"All 2 answers from ask\(\) failed to match returns=Plan: ") as info:
        agent.ask(state, "Plan", returns=Plan, retries=1)
    assert isinstance(info.value.__cause__, ValueError)
    assert state.history[-1].kind == "ask" and state.history[-1].content.answer is None
    once = FakeModel(["nope", "unused"])
    with pytest.raises(OutputError):
        Agent(once, reporter=None).ask(task(), "Plan", returns=Plan, retries=0)
    assert len(once.requests) == 1
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match=f"retries={bad!r} is not allowed"):
            agent.ask(task(), "x", retries=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"ask\(returns=None\) is not a supported type"):
        agent.ask(task(), "x", returns=None)
    with pytest.raises(TypeError, match=r"ask\(returns='str'\) is not a supported type"):
        agent.ask(task(), "x", returns="str")
    with pytest.raises(TypeError, match=r"The prompt of ask\(\) takes a string \(got: 3\)"):
        agent.ask(task(), 3)  # type: ignore[arg-type]


def test_ask_shows_pending_calls_as_not_run_yet() -> None:
    fake = FakeModel([[tool_call("helper"), tool_call("helper")], "answer"])
    agent = Agent(fake, tools=[helper], reporter=None)
    state = task()
    agent.think(state)
    agent.ask(state, "What next?")
    messages = fake.requests[1].messages
    results = messages[-2]
    assert results.role == "user" and len(results.content) == 2
    assert all(isinstance(b, ToolResultBlock) and b.content == "(not run yet)" for b in results.content)
    assert messages[-1].text == "What next?"


def test_ask_parses_fenced_and_embedded_json_first_time() -> None:
    cases = [
        '{"approved": true, "comments": "use ```code``` here"}',
        '```json\n{"approved": true, "comments": "ok"}\n```',
        'Answer: {"approved": true, "comments": "ok"} end',
    ]
    fake = FakeModel(cases)
    agent = Agent(fake, reporter=None)
    state = task()
    results = [agent.ask(state, "Review", returns=Review) for _ in cases]
    assert results[0].comments == "use ```code``` here"
    assert all(r.approved for r in results) and len(fake.requests) == 3


def test_parse_reply_rules() -> None:
    assert parse_reply("  hi  ", str) == "hi"
    with pytest.raises(ValueError, match="the reply is empty"):
        parse_reply("  ", str)
    with pytest.raises(ValueError, match="the reply is empty. Reply with a single JSON value"):
        parse_reply(" ", int)
    assert parse_reply("42", int) == 42
    with pytest.raises(ValueError, match="no JSON found in the reply. Reply with a single JSON value only"):
        parse_reply("x", int)
    with pytest.raises(ValueError, match="steps: Input should be a valid array"):
        parse_reply('{"steps": 3}', Plan)
    assert parse_reply('text [1, "a]"] more', list[str | int]) == [1, "a]"]
    assert parse_reply('```\nnot json\n``` then {"steps": []}', Plan) == Plan([])
    assert parse_reply('{"a": {"b": "}"}}', dict) == {"a": {"b": "}"}}
    assert parse_reply('"yes"', Literal["yes", "no"]) == "yes"
    check_returns(str)
    with pytest.raises(TypeError):
        check_returns(5)
    with pytest.raises(TypeError):
        check_returns(object())
    assert question_text("q", str) == "q"
    assert '"steps"' in question_text("q", Plan)


def test_ask_records_nothing_when_the_first_attempt_fails_and_partial_on_later() -> None:
    state = task()
    with pytest.raises(RuntimeError):
        Agent(FakeModel([RuntimeError("down")]), reporter=None).ask(state, "q")
    assert [e.kind for e in state.history] == ["context_change"]
    with pytest.raises(RuntimeError):
        Agent(FakeModel(["not json", RuntimeError("down")]), reporter=None).ask(state, "q", returns=Plan)
    last = state.history[-1]
    assert last.kind == "ask" and last.content.answer is None and last.usage.requests == 1


def test_aask_twin() -> None:
    fake = FakeModel(['{"steps": ["a"]}'])
    state = task()
    result = asyncio.run(Agent(fake, reporter=None).aask(state, "Plan", returns=Plan))
    assert result == Plan(["a"])
    with pytest.raises(TypeError, match=r"The prompt of aask\(\)"):
        asyncio.run(Agent(fake, reporter=None).aask(state, None))  # type: ignore[arg-type]


def test_ask_human_converts_and_records_the_answer() -> None:
    human = FakeHuman(["yes"])
    agent = Agent(FakeModel([]), reporter=None, human=human)
    state = task()
    before = state.messages
    assert agent.ask_human(state, "Continue?", returns=bool) is True
    entries = [e for e in state.history if e.kind == "human"]
    assert len(entries) == 1 and entries[0].usage is None
    assert state.messages == before
    with pytest.raises(NoHumanError, match="was called on an Agent with human=None"):
        Agent(FakeModel([]), reporter=None, human=None).ask_human(state, "Continue?")
    with pytest.raises(TypeError):
        Agent(FakeModel([]), reporter=None, human=FakeHuman(["1"])).ask_human(state, "n?", returns=int)
    assert asyncio.run(Agent(FakeModel([]), human=FakeHuman(["ok"])).aask_human(state, "q")) == "ok"
    with pytest.raises(TypeError, match=r"agent\.ask_human\(\) must be a State"):
        agent.ask_human("x", "q")  # type: ignore[arg-type]


def test_ask_sees_results_of_the_open_turn() -> None:
    fake = FakeModel([[tool_call("helper")], "fine"])
    agent = Agent(fake, tools=[helper], reporter=None)
    state = task()
    agent.think(state)
    agent.use_tools(state)
    agent.ask(state, "ok?")
    assert isinstance(fake.requests[1].messages[-2].content[0], ToolResultBlock)
    assert fake.requests[1].messages[-1].content == (TextBlock("ok?"),)
