"""`alpineagents eval`: the table, --json, --compare and --model, --html, and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from alpineagents.store import SQLiteStore
from helpers.cli_agents import cli
from servers.provider import ProviderServer, openai_stream

MODULE = """
from alpineagents import Agent, Price
from alpineagents.evals import Case, Contains, Dataset
from alpineagents.testing import FakeModel

def answer(request):
    prompt = request.messages[0].text
    return {"Capital of France?": "Paris.", "What is 2+3?": "5"}.get(prompt, "?")

def wrong(request):
    return "I do not know."

dataset = Dataset([
    Case("Capital of France?", checks=[Contains("Paris")], name="capital"),
    Case("What is 2+3?", expected="5", name="sum"),
], name="basics")
cases = list(dataset)
good = Agent(FakeModel([answer] * 50, price=Price(input=1, output=1)), name="good", reporter=None)
half = Agent(FakeModel([lambda request: "Paris." if "France" in request.messages[0].text else "6"] * 50), name="half")
bad = Agent(FakeModel([wrong] * 50), name="bad")
"""


def setup(tmp_path: Path) -> str:
    (tmp_path / "evalset.py").write_text(MODULE)
    (tmp_path / "cases.yaml").write_text(
        "- {name: capital, input: 'Capital of France?', checks: [{contains: Paris}]}\n"
    )
    return str(tmp_path / "runs.db")


def test_eval_prints_a_table_keeps_every_run_and_exits_0_at_the_threshold(tmp_path: Path) -> None:
    store = setup(tmp_path)
    done = cli("eval", "evalset:dataset", "--agent", "evalset:good", "--repeat", "2", "--store", store, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines[0].startswith("case ") and lines[1].startswith("capital   2/2") and lines[2].startswith("sum       2/2")
    )
    assert lines[-1].startswith("good on basics: 100% of 4 runs passed (0 flaky cases)")
    assert len(SQLiteStore(store).list()) == 4
    from_file = cli("eval", "cases.yaml", "--agent", "evalset:good", "--json", "--store", store, cwd=tmp_path)
    report = json.loads(from_file.stdout)
    assert report["ok"] is True and report["reports"][0]["dataset"] == "cases" and report["reports"][0]["runs"] == 1


def test_eval_exits_1_under_the_threshold_and_compares_two_agents(tmp_path: Path) -> None:
    store = setup(tmp_path)
    under = cli("eval", "evalset:dataset", "--agent", "evalset:half", "--store", store, cwd=tmp_path)
    assert under.returncode == 1
    note, error = under.stderr.strip().splitlines()
    assert note.startswith("half: runs saved as eval-") and "/evals/eval-" in note
    assert error == "Error: pass rate under the threshold 100%: half 50%"
    assert (
        cli(
            "eval", "evalset:cases", "--agent", "evalset:half", "--threshold", "0.5", "--store", store, cwd=tmp_path
        ).returncode
        == 0
    )
    compared = cli(
        "eval",
        "evalset:dataset",
        "--agent",
        "evalset:good",
        "--compare",
        "evalset:bad",
        "--json",
        "--store",
        store,
        cwd=tmp_path,
    )
    assert compared.returncode == 1
    reports = json.loads(compared.stdout)["reports"]
    assert [report["agent"] for report in reports] == ["good", "bad"]
    assert [report["pass_rate"] for report in reports] == [1.0, 0.0]
    text = cli(
        "eval",
        "evalset:dataset",
        "--agent",
        "evalset:good",
        "--compare",
        "evalset:half",
        "--threshold",
        "0.5",
        "--store",
        store,
        cwd=tmp_path,
    )
    assert text.returncode == 0
    assert text.stdout.splitlines()[-1].split() == ["all", "100%", "50%"]
    assert "<- differs" in text.stdout.splitlines()[-2]


def test_eval_misuse_exits_2(tmp_path: Path) -> None:
    store = setup(tmp_path)
    both = cli(
        "eval",
        "evalset:dataset",
        "--agent",
        "evalset:good",
        "--compare",
        "evalset:bad",
        "--model",
        "openai/x",
        "--store",
        store,
        cwd=tmp_path,
    )
    assert both.returncode == 2 and "not both" in both.stderr
    assert cli("eval", "evalset:nothing", "--agent", "evalset:good", "--store", store, cwd=tmp_path).returncode == 2
    not_a_dataset = cli("eval", "evalset:good", "--agent", "evalset:good", "--store", store, cwd=tmp_path)
    assert not_a_dataset.returncode == 2 and "not a Dataset" in not_a_dataset.stderr
    assert cli("eval", "evalset:dataset", "--store", store, cwd=tmp_path).returncode == 2  # no --agent


def test_eval_writes_an_html_report_linking_each_run(tmp_path: Path) -> None:
    store = setup(tmp_path)
    done = cli(
        "eval",
        "evalset:dataset",
        "--agent",
        "evalset:half",
        "--repeat",
        "3",
        "--threshold",
        "0",
        "--html",
        "report.html",
        "--store",
        store,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "report.html").read_text()
    assert "half on basics" in page and "50% of 6 runs passed" in page
    assert 'data-case="sum"' in page and "equals: expected &#39;5&#39;, got &#39;6&#39;" in page
    ids = [info.id for info in SQLiteStore(store).list()]
    assert all(f'href="http://127.0.0.1:8321/runs/{state_id}"' in page for state_id in ids)
    assert "<script" not in page


def test_eval_with_another_model_runs_the_same_agent_on_it(server: ProviderServer, tmp_path: Path) -> None:
    store = setup(tmp_path)
    server.script(openai_stream(("Paris, of course.",)), openai_stream(("5",)))
    env = {"OPENAI_BASE_URL": server.openai_url, "OPENAI_API_KEY": "sk-test-key-0123456789"}
    done = cli(
        "eval", "evalset:dataset", "--agent", "evalset:good", "--model", "openai/gpt-test", "--concurrency", "1",
        "--json", "--store", store, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    reports = json.loads(done.stdout)["reports"]
    assert [report["agent"] for report in reports] == ["good", "good with openai/gpt-test"]
    assert [report["pass_rate"] for report in reports] == [1.0, 1.0]
    assert [request.body["model"] for request in server.requests] == ["gpt-test", "gpt-test"]
