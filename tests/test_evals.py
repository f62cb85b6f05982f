"""`alpineagents.evals`: datasets from YAML and JSON lines, every kind of check, `run_evals` with concurrency and
repeats, and the report."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from alpineagents import Agent, FileStore, Price, Request, tool
from alpineagents.evals import (
    EVAL_KEY,
    CalledTool,
    Case,
    CaseSummary,
    Contains,
    Dataset,
    Judge,
    run_evals,
    stored_evals,
    stored_report,
)
from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import ToolResultBlock

DATASET = """
checks: []
cases:
  - {name: sum, input: "What is 2+3?", expected: "5"}
  - {name: product, input: "What is 2*3?", expected: "6"}
  - {name: wrong-sum, input: "What is 3+4?", expected: "8"}
  - {name: structured-equal, input: "Give the point as JSON", checks: [{equals: {x: 1, y: 2}}]}
  - {name: capital, input: "Capital of France?", checks: [{contains: Paris}]}
  - {name: capital-missing, input: "Capital of Spain?", checks: [{contains: Madrid}]}
  - {name: greeting, input: "Say hello", checks: [{contains: world}, {regex: "^Hello, \\\\w+!$"}]}
  - {name: digits, input: "Pick a number", checks: [{regex: "\\\\d{3}"}]}
  - {name: digits-missing, input: "Pick a word", checks: [{regex: "\\\\d"}]}
  - name: schema
    input: "Give the point as JSON"
    checks: [{json_schema: {type: object, required: [x, y], properties: {x: {type: integer}, y: {type: integer}}}}]
  - name: schema-broken
    input: "Give the person as JSON"
    checks: [{json_schema: {type: object, required: [name, age], properties: {age: {type: integer}}}}]
  - {name: tool-used, input: "Please add 2 and 3", checks: [{called: {tool: add, args: {a: 2, b: 3}}}]}
  - {name: tool-other-args, input: "Please add 2 and 3", checks: [{called: {tool: add, args: {a: 9}}}]}
  - {name: tool-unused, input: "Capital of France?", checks: [{called: add}]}
  - {name: few-turns, input: "Please add 2 and 3", checks: [{max_turns: 2}]}
  - {name: too-many-turns, input: "Please add 2 and 3", checks: [{max_turns: 1}]}
  - {name: cheap, input: "Say hello", checks: [{max_cost: 1.0}]}
  - {name: too-dear, input: "Please add 2 and 3", checks: [{max_cost: 0.000001}]}
  - {name: judged, input: "Capital of France?", checks: [{judge: "The answer names the capital of France."}]}
  - {name: flaky, input: "Sometimes right", checks: [{contains: right}]}
"""

EXPECTED_PASSES = {
    "sum": 3,
    "product": 3,
    "wrong-sum": 0,
    "structured-equal": 3,
    "capital": 3,
    "capital-missing": 0,
    "greeting": 3,
    "digits": 3,
    "digits-missing": 0,
    "schema": 3,
    "schema-broken": 0,
    "tool-used": 3,
    "tool-other-args": 0,
    "tool-unused": 0,
    "few-turns": 3,
    "too-many-turns": 0,
    "cheap": 3,
    "too-dear": 0,
    "judged": 3,
    "flaky": 2,
}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


ANSWERS = {
    "What is 2+3?": "5",
    "What is 2*3?": " 6\n",
    "What is 3+4?": "7",
    "Give the point as JSON": '{"x": 1, "y": 2}',
    "Give the person as JSON": '{"name": "Ada", "age": "old"}',
    "Capital of France?": "The capital of France is Paris.",
    "Capital of Spain?": "I do not know.",
    "Say hello": "Hello, world!",
    "Pick a number": "I pick 427.",
    "Pick a word": "banana",
}


class Scripted:
    """Answers by the case's prompt, whatever order the concurrent runs come in; "Sometimes right" is wrong on
    its second request only."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: Counter[str] = Counter()
        self.threads: set[str] = set()

    def __call__(self, request: Request) -> Any:
        prompt = request.messages[0].text
        with self.lock:
            self.seen[prompt] += 1
            count = self.seen[prompt]
            self.threads.add(threading.current_thread().name)
        if prompt == "Please add 2 and 3":
            if any(isinstance(block, ToolResultBlock) for block in request.messages[-1].content):
                return "It is 5."
            return tool_call("add", a=2, b=3)
        if prompt == "Sometimes right":
            return "wrong" if count == 2 else "right"
        return ANSWERS[prompt]


def judge_reply(request: Request) -> str:
    answer = request.messages[0].text.split("The agent's answer:\n", 1)[1]
    verdict = "Paris" in answer
    return json.dumps({"pass": verdict, "reason": "names Paris" if verdict else "Paris is missing"})


def test_twenty_cases_with_every_check_concurrency_8_repeat_3_give_the_right_report(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(DATASET)
    dataset = Dataset.load(path)
    assert len(dataset) == 20 and dataset.name == "cases"
    script = Scripted()
    agent = Agent(model=FakeModel([script] * 200, price=Price(input=1, output=2)), tools=[add], name="calc")
    judge = FakeModel([judge_reply] * 3, name="judge", price=Price(input=1, output=1))
    store = FileStore(tmp_path / "runs")

    report = run_evals(agent, dataset, concurrency=8, repeat=3, store=store, judge=judge)

    assert {case.name: case.passed for case in report.cases} == EXPECTED_PASSES
    assert all(case.runs == 3 for case in report.cases)
    assert report.flaky == ("flaky",)
    passed = sum(EXPECTED_PASSES.values())
    assert report.pass_rate == pytest.approx(passed / 60)
    assert len(report.results) == 60 and len(script.threads) > 1  # the runs ran on several threads
    assert judge.remaining == 0
    by_case = {(result.case, result.repeat): result for result in report.results}
    judged = by_case[("judged", 1)].checks[0]
    assert judged.passed and judged.detail == {"verdict": "pass", "reason": "names Paris"}
    assert by_case[("wrong-sum", 2)].checks[0].reason == "expected '8', got '7'"
    assert by_case[("capital-missing", 1)].checks[0].reason == "'Madrid' is not in 'I do not know.'"
    assert by_case[("schema-broken", 1)].checks[0].reason == "age: 'old' is not of type 'integer'"
    assert by_case[("tool-other-args", 1)].checks[0].reason.startswith("add was called, but never with")
    assert by_case[("too-many-turns", 1)].checks[0].reason == "2 turns, more than 1"
    assert by_case[("too-dear", 1)].checks[0].reason.startswith("cost $")
    assert by_case[("greeting", 1)].passed and len(by_case[("greeting", 1)].checks) == 2

    # every run is its own State in the store, graded in its extra data
    infos = store.list()
    assert len(infos) == 60
    loaded = store.load(by_case[("judged", 2)].state_id)
    assert loaded.extra_data[EVAL_KEY]["checks"][0]["detail"]["verdict"] == "pass"
    assert loaded.extra_data[EVAL_KEY]["passed"] is True and loaded.answer == "The capital of France is Paris."

    # totals: tokens and cost are those of the stored runs; the judge's cost is apart
    states = [store.load(info.id) for info in infos]
    assert report.usage.input_tokens == sum(state.usage.input_tokens for state in states)
    assert report.usage.cost == pytest.approx(sum(state.usage.cost or 0 for state in states))
    assert report.judge_usage.requests == 3
    latency = report.latency
    assert 0 < latency["median"] <= latency["p90"] <= latency["max"]

    table = report.table()
    assert "flaky  " in table.splitlines()[-2] and table.splitlines()[-2].rstrip().endswith("flaky")
    assert f"calc on cases: {passed / 60:.0%} of 60 runs passed (1 flaky cases)" in table
    data = json.loads(json.dumps(report.to_json()))
    assert data["runs"] == 60 and data["passed"] == passed and data["flaky"] == ["flaky"]

    # the report reads back from the runs the store keeps (what the viewer's /evals pages show)
    assert stored_report(store, report.eval_id).to_json() == report.to_json()
    assert stored_evals(store) == [
        {
            "eval": report.eval_id,
            "agent": "calc",
            "dataset": "cases",
            "runs": 60,
            "passed": passed,
            "updated_at": max(info.updated_at for info in infos),  # type: ignore[type-var]
        }
    ]
    with pytest.raises(LookupError, match="no eval 'eval-nope'"):
        stored_report(store, "eval-nope")


def test_jsonl_datasets_python_checks_and_failing_runs() -> None:
    dataset = Dataset.from_jsonl(
        '{"input": "What is 2+3?", "expected": "5"}\n\n{"input": "Capital of France?", "checks": [{"contains": "Paris"}]}\n'
    )
    assert [case.name for case in dataset] == ["case-1", "case-2"]
    broken = Case("Break", checks=[lambda run: run.error is None])
    custom = Case("What is 2+3?", checks=[CalledTool("add"), lambda run: run.state.turn == 1], name="custom")
    model = FakeModel([Scripted()] * 10 + [RuntimeError("provider down")])
    report = run_evals(Agent(model=model, tools=[add]), [*dataset, custom], concurrency=2)
    assert [result.passed for result in report.results] == [True, True, False]
    assert [check.passed for check in report.results[2].checks] == [False, True]
    failing = run_evals(Agent(model=FakeModel([RuntimeError("provider down")])), [broken])
    assert failing.results[0].error == "RuntimeError: provider down" and not failing.results[0].passed


def test_bad_datasets_and_checks_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="unknown kind 'contain'"):
        Dataset.from_yaml("- {input: x, checks: [{contain: y}]}")
    with pytest.raises(ValueError, match="a case is a mapping with at least input"):
        Dataset.from_yaml("- {prompt: x}")
    with pytest.raises(ValueError, match="line 2 of the dataset is not valid JSON"):
        Dataset.from_jsonl('{"input": "x"}\n{oops\n')
    with pytest.raises(ValueError, match="two cases of the dataset are named 'a'"):
        Dataset([Case("x", name="a"), Case("y", name="a")])
    with pytest.raises(ValueError, match="concurrency= and repeat= of at least 1"):
        run_evals(Agent(model=FakeModel([])), [Case("x")], concurrency=0)
    no_judge = run_evals(Agent(model=FakeModel(["hi"])), [Case("x", checks=[Judge("Be nice.")])])
    assert "a Judge check has no model" in no_judge.results[0].checks[0].reason
    unreadable = run_evals(
        Agent(model=FakeModel(["hi"])), [Case("x", checks=[Judge("Be nice.", FakeModel(["maybe"]))])]
    )
    assert unreadable.results[0].checks[0].reason == "the judge's reply is not a verdict: 'maybe'"
    assert Contains("PARIS", ignore_case=True)


def test_a_case_summary_json_is_its_fields_then_its_rate_and_flakiness() -> None:
    shown = CaseSummary("adds", 4, 1).to_json()
    assert shown == {"name": "adds", "runs": 4, "passed": 1, "pass_rate": 0.25, "flaky": True}
    assert list(shown) == ["name", "runs", "passed", "pass_rate", "flaky"]
