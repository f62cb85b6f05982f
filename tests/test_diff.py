"""`alpineagents.diff` and `alpineagents diff`: two runs aligned, the first divergence marked, the totals of each
side; and `fork --model` then `resume`, the same conversation continued by another model."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest

import alpineagents
from alpineagents import Agent, FileStore, Price, State, tool
from alpineagents._frozen import freeze
from alpineagents.compare import Side
from alpineagents.store import SQLiteStore
from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import Message
from helpers.cli_agents import cli
from servers.provider import ProviderServer, openai_stream


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def run(replies: list[Any], text: str = "What is 1+2?", name: str = "fake", **ids: Any) -> State:
    state = State(messages=[Message.user(text)], **ids)
    model = FakeModel(replies, name=name, price=Price(input=1, output=2))
    Agent(model=model, tools=[add], reporter=None).run(state)
    return state


def test_identical_runs_are_the_same_at_every_step() -> None:
    a = run([tool_call("add", a=1, b=2), "It is 3."])
    b = run([tool_call("add", a=1, b=2), "It is 3."])
    compared = alpineagents.diff(a, b)
    assert compared.same and compared.first_divergence is None and compared.differences == ()
    assert [row.a.kind for row in compared.rows if row.a] == ["user", "reply", "result", "reply", "stop"]
    assert compared.a.turns == compared.b.turns == 2
    assert compared.a.input_tokens == a.usage.input_tokens and compared.a.cost == a.usage.cost
    assert compared.a.tool_calls == 1 and compared.a.models == ("fake",)
    assert str(compared).splitlines()[2] == "the runs are the same (5 steps)"
    assert json.loads(json.dumps(compared.to_json()))["first_divergence"] is None


def test_diverging_runs_mark_the_first_divergence_and_the_calls_that_differ() -> None:
    a = run([tool_call("add", a=1, b=2), "It is 3."])
    b = run([tool_call("add", a=1, b=3), "It is 4."])
    compared = alpineagents.diff(a, b)
    assert compared.first_divergence == 1
    first = compared.rows[1]
    assert first.a is not None and first.b is not None
    assert first.a.text == "reply: calls add(a=1, b=2)" and first.b.text == "reply: calls add(a=1, b=3)"
    assert [row.a.kind for row in compared.differences if row.a] == ["reply", "result", "reply"]
    assert compared.rows[-1].same and compared.rows[-1].a.kind == "stop"  # type: ignore[union-attr]
    text = str(compared)
    assert "first divergence at step 2 of 5" in text
    assert ">>   2 A reply: calls add(a=1, b=2)" in text and "     2 B reply: calls add(a=1, b=3)" in text
    with pytest.raises(TypeError, match="compares two States"):
        alpineagents.diff(a, "b")  # type: ignore[arg-type]


def test_a_run_with_one_step_more_still_lines_up_after_it() -> None:
    a = run([tool_call("add", a=1, b=2), "It is 3."])
    b = run([tool_call("add", a=1, b=2), tool_call("add", a=1, b=2), "It is 3."])
    compared = alpineagents.diff(a, b)
    missing = [row for row in compared.rows if row.a is None]
    assert [row.b.kind for row in missing] == ["reply", "result"]  # type: ignore[union-attr]
    assert compared.rows[-2].same and compared.rows[-2].a.text == "reply: It is 3."  # type: ignore[union-attr]


def test_a_fork_onto_another_fake_model_diffs_from_where_the_models_part() -> None:
    original = run([tool_call("add", a=1, b=2), "It is 3."])
    kept = next(i for i, entry in enumerate(original.history) if entry.kind == "tool_result") + 1
    fork = State(history=original.history[:kept])
    other = FakeModel(["The answer is 3."], name="other")
    Agent(model=other, tools=[add], reporter=None).run(fork)
    compared = alpineagents.diff(original, fork)
    assert compared.first_divergence == 3
    assert [row.same for row in compared.rows] == [True, True, True, False, True]
    assert compared.rows[3].a.text == "reply: It is 3."  # type: ignore[union-attr]
    assert compared.rows[3].b.text == "reply: The answer is 3."  # type: ignore[union-attr]
    assert compared.a.models == ("fake",) and compared.b.models == ("fake", "other")
    assert compared.b.turns == 2


def test_the_diff_command_prints_text_and_json_and_exit_codes(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "runs")
    for state in (
        run([tool_call("add", a=1, b=2), "It is 3."], id="a1"),
        run([tool_call("add", a=1, b=2), "It is 3."], id="a2"),
        run([tool_call("add", a=2, b=2), "It is 4."], id="b1"),
    ):
        store.save(state)
    where = str(tmp_path / "runs")
    same = cli("diff", "a1", "a2", "--store", where, "--exit-code", cwd=tmp_path)
    assert same.returncode == 0 and "the runs are the same (5 steps)" in same.stdout
    differ = cli("diff", "a1", "b1", "--store", where, cwd=tmp_path)
    assert differ.returncode == 0
    assert differ.stdout.startswith("A: a1: 2 turns, ")
    assert ">>   2 A reply: calls add(a=1, b=2)" in differ.stdout
    assert cli("diff", "a1", "b1", "--store", where, "--exit-code", cwd=tmp_path).returncode == 1
    as_json = json.loads(cli("diff", "a1", "b1", "--json", "--store", where, cwd=tmp_path).stdout)
    assert as_json["first_divergence"] == 1 and as_json["same"] is False
    assert as_json["a"]["id"] == "a1" and as_json["b"]["tool_calls"] == 1
    assert as_json["rows"][1]["b"]["text"] == "reply: calls add(a=2, b=2)"
    unknown = cli("diff", "a1", "nope", "--store", where, cwd=tmp_path)
    assert unknown.returncode == 1 and "nope" in unknown.stderr and unknown.stdout == ""


def test_fork_with_a_model_then_resume_continues_with_that_model(server: ProviderServer, tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    assert (
        cli("run", "cli_agents:calc", "please add 2 and 3", "--id", "r1", "--store", store, cwd=tmp_path).returncode
        == 0
    )
    history = SQLiteStore(store).load("r1").history
    kept = next(i for i, entry in enumerate(history) if entry.kind == "tool_result") + 1
    forked = cli(
        "fork",
        "r1",
        "--at",
        str(kept),
        "--model",
        "openai/gpt-test",
        "--id",
        "f1",
        "--json",
        "--store",
        store,
        cwd=tmp_path,
    )
    assert forked.returncode == 0, forked.stderr
    assert json.loads(forked.stdout) == {"id": "f1", "from": "r1", "entries": kept}
    event = SQLiteStore(store).load("f1").history[-1]
    assert event.kind == "model_event" and event.content.data["model"] == "openai/gpt-test"  # type: ignore[union-attr]

    server.script(openai_stream(("The total is 5.",)))
    env = {"OPENAI_BASE_URL": server.openai_url, "OPENAI_API_KEY": "sk-test-key-0123456789"}
    resumed = cli("resume", "f1", "cli_agents:calc", "--json", "--store", store, cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["answer"] == "The total is 5."
    assert server.requests and server.requests[-1].body["model"] == "gpt-test"

    compared = json.loads(cli("diff", "r1", "f1", "--json", "--store", store, cwd=tmp_path).stdout)
    assert compared["first_divergence"] == 3
    assert compared["rows"][3]["a"]["text"] == "reply: The sum is 5."
    assert compared["rows"][3]["b"]["text"] == "reply: The total is 5."
    assert compared["a"]["models"] == ["fake"] and compared["b"]["models"][-1].startswith("gpt-test")


def test_the_time_of_a_side_counts_its_runs_not_the_time_between_them() -> None:
    start = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    clock = iter(start + timedelta(seconds=2 * tick) for tick in range(1000))
    with patch("alpineagents.types._now", lambda: next(clock)):
        state = run([tool_call("add", a=1, b=2), "It is 3.", "Still 3."])
        first_run = (state.history[-1].at - state.history[0].at).total_seconds()
        for _ in range(100):  # the clock moves on while nobody runs it
            next(clock)
        state.add_message(Message.user("And now?"))
        Agent(model=FakeModel(["Still 3."]), tools=[add], reporter=None).run(state)
    starts = [entry.at for entry in state.history if entry.kind == "run_start"]
    stops = [entry.at for entry in state.history if entry.kind == "stop"]
    runs = [(stop - start).total_seconds() for start, stop in zip(starts, stops, strict=True)]
    assert runs[0] == first_run - 2  # the first entry is the import, one tick before run_start
    assert alpineagents.diff(state, state).a.seconds == sum(runs) < (state.history[-1].at - start).total_seconds()


def test_a_sides_json_is_each_field_as_a_plain_value_in_field_order() -> None:
    side = Side(
        id="a",
        turns=2,
        input_tokens=30,
        output_tokens=4,
        cost=None,
        seconds=1.5,
        tool_calls=1,
        models=("fake", "gpt-test"),
        answer=freeze({"found": ["calc.py", 3]}),
        stopped="stopped by finish",
    )
    shown = side.to_json()
    assert shown == {
        "id": "a",
        "turns": 2,
        "input_tokens": 30,
        "output_tokens": 4,
        "cost": None,
        "seconds": 1.5,
        "tool_calls": 1,
        "models": ["fake", "gpt-test"],
        "answer": {"found": ["calc.py", 3]},
        "stopped": "stopped by finish",
    }
    assert type(shown["answer"]) is dict and type(shown["answer"]["found"]) is list
    assert json.loads(json.dumps(shown)) == shown
