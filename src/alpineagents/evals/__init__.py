"""Evals: run an Agent on a dataset of cases, grade every run with checks, and report how it did.

    from alpineagents.evals import Case, Contains, Dataset, run_evals

    dataset = Dataset([Case("What is 2+3?", expected="5"), Case("Capital of France?", checks=[Contains("Paris")])])
    report = run_evals(agent, dataset, concurrency=8, repeat=3, store=FileStore("eval-runs"))
    print(report.table())

`alpineagents eval MODULE:DATASET --agent MODULE:AGENT` does the same from the command line.
"""

from alpineagents.evals import checks
from alpineagents.evals.checks import *  # noqa: F403 - every check is an export of the package; checks.__all__ is their one list
from alpineagents.evals.dataset import Case, Dataset, check_from_spec
from alpineagents.evals.running import (
    EVAL_KEY,
    CaseSummary,
    Report,
    RunResult,
    run_evals,
    stored_evals,
    stored_report,
)

__all__ = [
    "Case",
    "Dataset",
    "run_evals",
    "stored_report",
    "stored_evals",
    "Report",
    "RunResult",
    "CaseSummary",
    "EVAL_KEY",
    "check_from_spec",
]
__all__ += checks.__all__
