"""Mistakes a newcomer makes, each answered with a message that says what is wrong and how to fix it: a tool the
model reads nothing about, a missing API key, a FakeModel out of replies."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from alpineagents import Agent, Message, Request, State, tool
from alpineagents.errors import AuthError
from alpineagents.models import Anthropic, OpenAICompatible
from alpineagents.testing import FakeModel, tool_call

ROOT = Path(__file__).resolve().parent.parent


def made_warnings(make: Any) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()
    return list(caught)


def test_a_tool_without_a_docstring_warns_at_its_own_line_and_says_how_to_fix_it() -> None:
    def lookup(order: str) -> str:
        return order

    caught = made_warnings(lambda: tool(lookup))
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "tool 'lookup' has no description" in text and "docstring" in text and "description=" in text
    assert caught[0].filename == __file__ and caught[0].lineno == lookup.__code__.co_firstlineno
    assert made_warnings(lambda: tool(description="Look up an order.")(lookup)) == []


def test_an_args_entry_that_names_no_parameter_warns() -> None:
    def refund(order_id: str, amount: float) -> str:
        """Refund an order.

        Args:
            order: The order.
            amount: How much.
            reason: Why.
        """
        return order_id

    caught = made_warnings(lambda: tool(refund))
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "describes 'order', 'reason'" in text and "refund has no parameter named" in text


def test_a_tool_with_a_docstring_that_fits_warns_nothing() -> None:
    def add(a: int, b: int, state: State) -> int:
        """Add two numbers.

        Args:
            a: The first number.
            b: The second number.
            state: The run's State (not shown to the model).
        """
        return a + b

    assert made_warnings(lambda: tool(add)) == []


def request() -> Request:
    return Request(system=None, messages=(Message.user("hi"),))


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        (lambda: Anthropic("claude-test", base_url="http://127.0.0.1:9", retries=0), "ANTHROPIC_API_KEY"),
        (lambda: OpenAICompatible("gpt-test", retries=0), "OPENAI_API_KEY"),
    ],
)
def test_a_missing_key_names_the_environment_variable_the_adapter_reads(
    monkeypatch: pytest.MonkeyPatch, model: Any, variable: str
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(AuthError, match="no credentials") as info:
        model().respond(request())
    assert variable in str(info.value)
    with pytest.raises(AuthError) as again:
        asyncio.run(model().arespond(request()))
    assert variable in str(again.value)


def test_an_agent_without_a_key_fails_at_the_first_request_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    agent = Agent(Anthropic("claude-test", base_url="http://127.0.0.1:9", retries=0), reporter=None, human=None)
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY"):
        agent.run("hello")


def test_a_fake_model_out_of_replies_shows_the_last_thing_the_person_said() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: The first number.
            b: The second number.
        """
        return a + b

    agent = Agent(FakeModel([tool_call("add", a=1, b=2)]), tools=[add], reporter=None, human=None)
    with pytest.raises(RuntimeError) as info:
        agent.run("please add 1 and 2")
    text = str(info.value)
    assert text.startswith("FakeModel: ran out of prepared replies (all 1 used). Last message: 'please add 1 and 2'")
    assert "then a call of add, the results of add" in text and "add a reply" in text
    with pytest.raises(RuntimeError, match=r"ran out of prepared replies \(all 0 used\). Last message: 'hi' from"):
        FakeModel([]).respond(request())


def test_the_demo_explains_its_last_lines_and_how_to_see_the_run_again(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEMO_MODEL")}
    db = tmp_path / "runs.db"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--db", str(db)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index("done: stopped by waiting_for_user (2 turns)") < out.index("What the lines above mean")
    assert "done 3B                  the call ended well" in out
    assert "it is the person's turn" in out
    assert "Usage(" not in out and "2 model requests" in out
    show = next(line for line in out.splitlines() if line.startswith("see it again: "))
    state_id = show.split()[5]
    shown = subprocess.run(
        [sys.executable, "-m", "alpineagents", "show", state_id, "--store", str(db)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shown.returncode == 0 and "How many lines does README.md have" in shown.stdout
