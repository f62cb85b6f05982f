"""The HTML report of an eval: one self-contained page (the viewer's stylesheet inline, no script), a table per
Agent with each case's pass rate over its repeats, flaky cases marked, every run linked to its page in the viewer,
and the totals: pass rate, tokens, cost, latency."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from urllib.parse import quote

from markupsafe import Markup

from alpineagents.evals import Report, RunResult
from alpineagents.viewer import page

__all__ = ["evals_html"]


def evals_html(reports: Sequence[Report], threshold: float, viewer: str = "http://127.0.0.1:8321") -> str:
    """The report page of `reports` (one per Agent), the runs linked to the viewer at `viewer`."""
    template = page.ENV.get_template("evals.html")
    css = Markup(resources.files("alpineagents.viewer").joinpath("static", "viewer.css").read_text(encoding="utf-8"))

    def runs_of(report: Report, case: str) -> list[RunResult]:
        return [result for result in report.results if result.case == case]

    return template.render(
        css=css,
        reports=reports,
        threshold=threshold,
        runs_of=runs_of,
        run_link=lambda state_id: viewer.rstrip("/") + "/runs/" + quote(state_id),
        policy=page.policy(live=False),
        title="eval report",
        live=False,
        exported=True,
    )
