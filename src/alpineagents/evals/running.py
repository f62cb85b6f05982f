"""Running an eval: every case of a dataset, `repeat` times, as its own State, and the report of how they did.

`run_evals` runs the runs on up to `concurrency` threads, each with a copy of the Agent that has no reporter (and
the given store, when there is one, so every run is kept and the viewer shows it). A run that raises is a failed
run with the error as its reason; the other runs go on. After a run, its checks grade it, and the outcome is
written into the run's extra data under `EVAL_KEY` (then saved), so the run itself says how it was graded.
"""

from __future__ import annotations

import re
import statistics
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from alpineagents._frozen import thaw
from alpineagents._serial import usage_from_dict, usage_to_dict
from alpineagents._values.construct import fields_json
from alpineagents.errors import fix_message
from alpineagents.evals.checks import CaseRun, CheckResult
from alpineagents.evals.dataset import Case, Dataset
from alpineagents.models.base import Model
from alpineagents.models.resolve import resolve_model
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.types import Message, Usage

if TYPE_CHECKING:
    from alpineagents.agent import Agent

__all__ = ["EVAL_KEY", "RunResult", "CaseSummary", "Report", "run_evals", "stored_report", "stored_evals"]

EVAL_KEY = "eval"
"""The extra-data key under which a run of an eval keeps its case, repeat, verdict and checks."""


@dataclass(frozen=True)
class RunResult:
    """One run of one case: which (case name, repeat number), the State id, whether every check passed, each
    check's result, the error the run ended with (or `None`), its time, usage, and the judges' usage."""

    case: str
    repeat: int
    state_id: str
    passed: bool
    checks: tuple[CheckResult, ...]
    error: str | None
    seconds: float
    usage: Usage
    judge_usage: Usage

    def to_json(self) -> dict[str, Any]:
        """The result as JSON values."""
        return {
            "case": self.case,
            "repeat": self.repeat,
            "state_id": self.state_id,
            "passed": self.passed,
            "checks": [check.to_json() for check in self.checks],
            "error": self.error,
            "seconds": self.seconds,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cost": self.usage.cost,
        }


@dataclass(frozen=True)
class CaseSummary:
    """One case over its repeats: how many runs passed, the pass rate, and whether it is flaky (some runs passed
    and some failed)."""

    name: str
    runs: int
    passed: int

    @property
    def pass_rate(self) -> float:
        """Passed runs over runs."""
        return self.passed / self.runs if self.runs else 0.0

    @property
    def flaky(self) -> bool:
        """True when some runs of the case passed and some did not."""
        return 0 < self.passed < self.runs

    def to_json(self) -> dict[str, Any]:
        """`{"name", "runs", "passed", "pass_rate", "flaky"}`."""
        return {**fields_json(self), "pass_rate": self.pass_rate, "flaky": self.flaky}


@dataclass(frozen=True)
class Report:
    """What an eval found: every run (`results`, in case then repeat order), the per-case summaries, and the
    totals: pass rate, tokens, cost (added as `Usage` adds costs), latency."""

    agent: str
    dataset: str
    results: tuple[RunResult, ...]
    eval_id: str = ""

    @property
    def cases(self) -> tuple[CaseSummary, ...]:
        """One summary per case, in dataset order."""
        order: dict[str, list[RunResult]] = {}
        for result in self.results:
            order.setdefault(result.case, []).append(result)
        return tuple(CaseSummary(name, len(runs), sum(run.passed for run in runs)) for name, runs in order.items())

    @property
    def pass_rate(self) -> float:
        """Passed runs over all runs (0.0 for no runs)."""
        return sum(result.passed for result in self.results) / len(self.results) if self.results else 0.0

    @property
    def flaky(self) -> tuple[str, ...]:
        """The names of the cases whose repeats did not all agree."""
        return tuple(case.name for case in self.cases if case.flaky)

    @property
    def usage(self) -> Usage:
        """The usage of every run together (the judges' not included)."""
        return sum((result.usage for result in self.results), Usage())

    @property
    def judge_usage(self) -> Usage:
        """The usage of the judges' requests."""
        return sum((result.judge_usage for result in self.results), Usage())

    @property
    def latency(self) -> dict[str, float]:
        """Seconds per run: `mean`, `median` (p50), `p90` and `max`."""
        times = sorted(result.seconds for result in self.results)
        if not times:
            return {"mean": 0.0, "median": 0.0, "p90": 0.0, "max": 0.0}
        return {
            "mean": statistics.fmean(times),
            "median": statistics.median(times),
            "p90": times[min(len(times) - 1, int(0.9 * len(times)))],
            "max": times[-1],
        }

    def to_json(self) -> dict[str, Any]:
        """The report as JSON values (what `alpineagents eval --json` prints per agent)."""
        usage = self.usage
        return {
            "eval": self.eval_id,
            "agent": self.agent,
            "dataset": self.dataset,
            "pass_rate": self.pass_rate,
            "runs": len(self.results),
            "passed": sum(result.passed for result in self.results),
            "flaky": list(self.flaky),
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cost": usage.cost,
            "judge_cost": self.judge_usage.cost,
            "latency": self.latency,
            "cases": [case.to_json() for case in self.cases],
            "results": [result.to_json() for result in self.results],
        }

    def table(self) -> str:
        """The report as a text table: one line per case, then the totals."""
        by_case: dict[str, list[RunResult]] = {}
        for result in self.results:
            by_case.setdefault(result.case, []).append(result)
        width = max([len("case"), *(len(name) for name in by_case)])
        lines = [f"{'case':<{width}}  passed  rate   mean s  tokens   cost      first failure"]
        for summary in self.cases:
            runs = by_case[summary.name]
            usage = sum((run.usage for run in runs), Usage())
            failure = next((_failure(run) for run in runs if not run.passed), "")
            mark = " flaky" if summary.flaky else ""
            lines.append(
                f"{summary.name:<{width}}  {summary.passed:>2}/{summary.runs:<3} {summary.pass_rate:>5.0%}  "
                f"{statistics.fmean(run.seconds for run in runs):>6.2f}  {usage.input_tokens + usage.output_tokens:>7}  "
                f"{_money(usage.cost):<8}  {failure[:60]}{mark}"
            )
        usage, latency = self.usage, self.latency
        lines.append(
            f"{self.agent} on {self.dataset}: {self.pass_rate:.0%} of {len(self.results)} runs passed"
            f" ({len(self.flaky)} flaky cases), {usage.input_tokens} input + {usage.output_tokens} output tokens, "
            f"cost {_money(usage.cost)}, {latency['mean']:.2f} s per run (p50 {latency['median']:.2f}, max "
            f"{latency['max']:.2f})"
        )
        return "\n".join(lines)


def _money(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def _failure(run: RunResult) -> str:
    if run.error is not None:
        return f"error: {run.error}"
    failed = next((check for check in run.checks if not check.passed), None)
    return "" if failed is None else f"{failed.name}: {failed.reason}"


@dataclass(frozen=True)
class _Batch:
    """What every run of one `run_evals` shares: the eval's id (the prefix of its State ids), the Agent to run and
    its label, the dataset's name, the store and the judge."""

    eval_id: str
    agent: Agent
    label: str
    dataset: str
    store: Store | None
    judge: Model | None


def _state_id(prefix: str, case: Case, repeat: int) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "-", case.name or "case")[:80]
    return f"{prefix}-{name}-{repeat}"


def _grade(run: CaseRun) -> list[CheckResult]:
    results: list[CheckResult] = []
    for check in run.case.checks:
        try:
            results.append(check(run))
        except Exception as raised:  # a check that breaks fails its run, with the reason
            results.append(CheckResult(check.name, False, f"the check raised {type(raised).__name__}: {raised}"))
    return results


def _one(batch: _Batch, number: int, case: Case, repeat: int) -> RunResult:
    state = State(id=_state_id(batch.eval_id, case, repeat), messages=[Message.user(case.text)])
    started = time.perf_counter()
    error: str | None = None
    try:
        batch.agent.run(state)
    except Exception as raised:  # a failed run is a failed case; the other runs go on
        error = f"{type(raised).__name__}: {raised}".splitlines()[0]
    seconds = time.perf_counter() - started
    results = _grade(CaseRun(case, state, error, seconds, batch.judge))
    passed = error is None and all(result.passed for result in results)
    judged = sum((result.usage for result in results if result.usage is not None), Usage())
    with state.edit_extra_data() as data:
        data[EVAL_KEY] = {
            "eval": batch.eval_id,
            "agent": batch.label,
            "dataset": batch.dataset,
            "case": case.name,
            "number": number,
            "repeat": repeat,
            "passed": passed,
            "error": error,
            "seconds": seconds,
            "checks": [result.to_json() for result in results],
            "judge_usage": usage_to_dict(judged),
        }
    if batch.store is not None:
        batch.store.save(state)
    return RunResult(case.name or "", repeat, state.id, passed, tuple(results), error, seconds, state.usage, judged)


def run_evals(
    agent: Agent,
    dataset: Dataset | Sequence[Case],
    *,
    concurrency: int = 4,
    repeat: int = 1,
    store: Store | None = None,
    judge: Model | str | None = None,
) -> Report:
    """Run every case of `dataset` `repeat` times, each run its own State (saved in `store` when given), at most
    `concurrency` at once, grade each run with its checks, and return the `Report`.

    `judge` is the Model that grades the `Judge` checks that have none of their own. The runs' ids start with the
    report's `eval_id`, and `stored_report(store, eval_id)` reads the report back from the store.
    """
    if not isinstance(concurrency, int) or concurrency < 1 or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(
            fix_message(
                f"run_evals() takes concurrency= and repeat= of at least 1 (got: {concurrency!r}, {repeat!r})",
                "pass whole numbers of 1 or more",
                "run_evals(agent, dataset, concurrency=8, repeat=3)",
            )
        )
    cases = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    runner = agent.copy(reporter=None) if store is None else agent.copy(reporter=None, store=store)
    label = agent.name or repr(agent.model)
    grader = None if judge is None else resolve_model(judge)
    batch = _Batch("eval-" + uuid.uuid4().hex[:8], runner, label, cases.name, store, grader)
    jobs = [(number, case, count) for number, case in enumerate(cases) for count in range(1, repeat + 1)]
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="alpineagents-eval") as pool:
        futures = [pool.submit(_one, batch, *job) for job in jobs]
        results = tuple(future.result() for future in futures)
    return Report(label, cases.name, results, batch.eval_id)


def _stored_result(state: State) -> tuple[int, RunResult] | None:
    """The result a stored eval run keeps in its extra data (with its case's place), or `None` for another run."""
    data = thaw(state.extra_data.get(EVAL_KEY))
    if not isinstance(data, dict):
        return None
    try:
        checks = tuple(
            CheckResult(item["name"], bool(item["passed"]), item.get("reason", ""), None, item.get("detail") or {})
            for item in data["checks"]
        )
        judged = usage_from_dict(data.get("judge_usage") or {})
        result = RunResult(
            data["case"],
            int(data["repeat"]),
            state.id,
            bool(data["passed"]),
            checks,
            data.get("error"),
            float(data["seconds"]),
            state.usage,
            judged,
        )
        return int(data["number"]), result
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"the eval record of run {state.id!r} is damaged ({type(error).__name__}: {error})") from error


def stored_report(store: Store, eval_id: str) -> Report:
    """The report of the eval `eval_id` read back from the runs it saved in `store` (`LookupError` when the store
    has none of them)."""
    states = [store.load(info.id) for info in store.list() if info.id.startswith(eval_id + "-")]
    found = [(state, _stored_result(state)) for state in states]
    kept = sorted(
        ((place, result) for _, entry in found if entry is not None for place, result in [entry]),
        key=lambda pair: (pair[0], pair[1].repeat),
    )
    if not kept:
        raise LookupError(f"no eval {eval_id!r} in {store!r}")
    first = thaw(found[0][0].extra_data[EVAL_KEY])
    return Report(first.get("agent", "?"), first.get("dataset", "?"), tuple(result for _, result in kept), eval_id)


def stored_evals(store: Store) -> list[dict[str, Any]]:
    """The evals whose runs `store` keeps, newest first: `{"eval", "agent", "dataset", "runs", "passed",
    "updated_at"}` each."""
    found: dict[str, dict[str, Any]] = {}
    for info in store.list():
        if not info.id.startswith("eval-") or info.parent_id is not None:
            continue
        data = thaw(store.load(info.id).extra_data.get(EVAL_KEY))
        if not isinstance(data, dict) or "eval" not in data:
            continue
        entry = found.setdefault(
            data["eval"],
            {
                "eval": data["eval"],
                "agent": data.get("agent"),
                "dataset": data.get("dataset"),
                "runs": 0,
                "passed": 0,
                "updated_at": info.updated_at,
            },
        )
        entry["runs"] += 1
        entry["passed"] += bool(data.get("passed"))
    return list(found.values())
