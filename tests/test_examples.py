"""Each program in `examples/` runs with a `FakeModel` (no network)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import ModelReplyEntry, Request, StoppedByUntil, ToolResultBlock
from helpers.scriptload import load_script

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str) -> ModuleType:
    return load_script("examples", name)


def test_tool_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES)
    module = load("tool_agent")
    fake = FakeModel(
        [
            tool_call("list_files", folder="."),
            tool_call("read_file", path="async_many.py"),
            "async_many.py is the shortest: it runs several States at once.",
        ]
    )
    answer = module.main(fake, reporter=None)
    assert answer.startswith("async_many.py is the shortest")
    listing = fake.requests[1].messages[-1].content[0]
    assert isinstance(listing, ToolResultBlock) and "tool_agent.py" in listing.content
    assert "asyncio.gather" in fake.requests[2].messages[-1].content[0].content


def test_custom_loop() -> None:
    module = load("custom_loop")
    fake = FakeModel([tool_call("run_tests"), "I fixed test_total.", tool_call("run_tests"), "Green now."])
    state = module.main(fake, reporter=None)
    assert state.stopped == StoppedByUntil("tests_pass")
    assert state.extra_data["runs"] == 2 and fake.remaining == 1


def test_structured_answer(capsys: pytest.CaptureFixture[str]) -> None:
    module = load("structured_answer")
    fake = FakeModel(['Here: {"steps": ["Copy the table", "Switch reads"], "risky": true}'])
    plan = module.main(fake, reporter=None)
    assert plan == module.Plan(["Copy the table", "Switch reads"], True)
    assert "1. Copy the table" in capsys.readouterr().out


def test_async_many() -> None:
    module = load("async_many")

    def reply(request: Request) -> Any:
        last = request.messages[-1]
        if any(isinstance(block, ToolResultBlock) for block in last.content):
            return f"It is {last.content[0].content}"
        city = last.text.rsplit(" ", 1)[-1].rstrip("?")
        return tool_call("lookup", city=city)

    fake = FakeModel([reply] * 6)
    answers = asyncio.run(module.main(fake, reporter=None))
    assert answers == [
        "It is Oslo: sunny, 21 °C",
        "It is Lima: sunny, 21 °C",
        "It is Cairo: sunny, 21 °C",
    ]


def test_skills_agent() -> None:
    module = load("skills_agent")

    def first(request: Request) -> Any:
        assert request.system is not None and "- code-review: Review a Python file for bugs" in request.system
        assert "- commit-message: Write a git commit message" in request.system
        return tool_call("load_skill", name="code-review")

    fake = FakeModel(
        [
            first,
            [
                tool_call("read_skill_resource", name="code-review", path="references/checklist.md"),
                tool_call("read_file", path=str(EXAMPLES / "run_tool.py")),
            ],
            "No problems found.",
        ]
    )
    assert module.main(str(EXAMPLES / "run_tool.py"), fake, reporter=None) == "No problems found."
    loaded = fake.requests[1].messages[-1].content[0]
    assert isinstance(loaded, ToolResultBlock) and "Check it against the list" in loaded.content
    checklist = fake.requests[2].messages[-1].content[0]
    assert isinstance(checklist, ToolResultBlock) and "Mutable default arguments" in checklist.content


def test_run_tool() -> None:
    module = load("run_tool")

    def explain(request: Request) -> Any:
        results = [block for m in request.messages for block in m.content if isinstance(block, ToolResultBlock)]
        assert "KeyError: 'b'" in str(results[0].content)
        assert "agent.run_tool(state" in str(results[1].content)
        return "The dict has no key 'b'. Use .get('b')."

    state = module.main(FakeModel([explain]), reporter=None)
    assert state.answer == "The dict has no key 'b'. Use .get('b')."
    assert [entry.content.model for entry in state.history if isinstance(entry, ModelReplyEntry)] == [
        "program",
        "program",
        "fake",
    ]
