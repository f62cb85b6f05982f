"""The HTML report of an eval: one self-contained page (the viewer's stylesheet inline, no script), a table per
Agent with each case's pass rate over its repeats, flaky cases marked, every run linked to its page in the viewer,
and the totals: pass rate, tokens, cost, latency.

The viewer serves the same report beside its other pages: `/evals` lists the evals whose runs the store keeps, and
`/evals/{id}` shows one, read back from its runs (`stored_report`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from alpineagents.evals import Report, RunResult, stored_evals, stored_report
from alpineagents.store import Store
from alpineagents.viewer import page

__all__ = ["evals_html", "eval_list_endpoint", "eval_report_endpoint"]

_HEADERS = {"X-Content-Type-Options": "nosniff"}


def evals_html(reports: Sequence[Report], threshold: float, viewer: str = "http://127.0.0.1:8321") -> str:
    """The report page of `reports` (one per Agent), the runs linked to the viewer at `viewer`."""
    template = page.ENV.get_template("evals.html")
    css = page.asset("viewer.css")

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
        exported=not viewer.startswith("/") and bool(viewer),
    )


def eval_list_endpoint(store: Store) -> Callable[[Request], Response]:
    """`/evals`: the evals whose runs `store` keeps, each linked to its report."""

    def evals(request: Request) -> Response:
        template = page.ENV.get_template("eval_list.html")
        shown = template.render(
            css=page.asset("viewer.css"),
            evals=stored_evals(store),
            title="evals",
            live=False,
            exported=False,
            quote=quote,
        )
        return HTMLResponse(shown, headers={**_HEADERS, "Content-Security-Policy": page.policy(live=False)})

    return evals


def eval_report_endpoint(store: Store) -> Callable[[Request], Response]:
    """`/evals/{eval_id}`: the report of one eval, read back from its runs."""

    def report(request: Request) -> Response:
        eval_id = request.path_params["eval_id"]
        headers = {**_HEADERS, "Content-Security-Policy": page.policy(live=False)}
        try:
            found = stored_report(store, eval_id)
        except LookupError:
            missing = page.problem_html(f"No eval {eval_id}", "The store keeps no run of this eval.")
            return HTMLResponse(missing, status_code=404, headers=headers)
        return HTMLResponse(evals_html([found], threshold=1.0, viewer=""), headers=headers)

    return report
