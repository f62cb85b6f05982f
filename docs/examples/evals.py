"""An eval: a dataset of cases with checks, run three times each, eight at once, every run kept in a store."""

import json
import tempfile
from pathlib import Path

from alpineagents import Agent, FileStore, Price, Request
from alpineagents.evals import EVAL_KEY, Dataset, run_evals
from alpineagents.testing import FakeModel

DATASET = """
cases:
  - name: capital
    input: What is the capital of France?
    checks: [{contains: Paris}, {max_turns: 1}]
  - name: sum
    input: What is 2 + 3?
    expected: "5"
  - name: point
    input: Give the point (1, 2) as JSON with keys x and y.
    checks: [{json_schema: {type: object, required: [x, y]}}]
  - name: polite
    input: Greet the user.
    checks: [{judge: The reply is a polite greeting.}]
"""

ANSWERS = {
    "What is the capital of France?": "Paris.",
    "What is 2 + 3?": "5",
    "Give the point (1, 2) as JSON with keys x and y.": '{"x": 1}',
    "Greet the user.": "Hello, and welcome!",
}


def answer(request: Request) -> str:
    """The model under test (scripted here): it answers each case's question."""
    return ANSWERS[request.messages[0].text]


def grade(request: Request) -> str:
    """The judge (scripted here): a Model that replies with a verdict and a reason."""
    polite = "welcome" in request.messages[0].text
    return json.dumps({"pass": polite, "reason": "It welcomes the user." if polite else "No greeting."})


folder = Path(tempfile.mkdtemp())
(folder / "basics.yaml").write_text(DATASET)
dataset = Dataset.load(folder / "basics.yaml")

agent = Agent(FakeModel([answer] * 12, price=Price(input=3, output=15)), name="helper")
store = FileStore(folder / "runs")
report = run_evals(agent, dataset, concurrency=8, repeat=3, store=store, judge=FakeModel([grade] * 3))

print(f"pass rate: {report.pass_rate:.0%} of {len(report.results)} runs")
for case in report.cases:
    print(f"  {case.name}: {case.passed}/{case.runs}")
failed = next(result for result in report.results if not result.passed)
print("why point failed:", failed.checks[0].reason)
judged = next(result for result in report.results if result.case == "polite")
print("judge:", judged.checks[0].detail["verdict"], "-", judged.checks[0].detail["reason"])
print("runs kept:", len(store.list()), "- each graded in its extra data:", store.load(failed.state_id).extra_data[EVAL_KEY]["passed"])
