"""The viewer's compare page: two runs side by side, step by step, the first divergence highlighted.

`/compare?a=ID&b=ID` shows `alpineagents.diff` of the two runs: each side's totals on top, then one row per
aligned step, the same steps in one colour, differing steps in another, and the first divergence marked (and
scrolled to). Without both ids, or with an unknown one, the page shows a form to pick them.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from alpineagents.compare import RunDiff
from alpineagents.compare import diff as diff_runs
from alpineagents.store import Store
from alpineagents.viewer import page
from alpineagents.viewer.runs import open_run

__all__ = ["compare_html", "compare_endpoint"]


def compare_html(compared: RunDiff | None, a: str, b: str, ids: list[str], problem: str | None = None) -> str:
    """The compare page of `compared` (or only the form, with `problem` said, when there is nothing to show)."""
    template = page.ENV.get_template("compare.html")
    title = f"compare {a} and {b}" if compared else "compare runs"
    return template.render(
        page.context(page.server_link, compared=compared, a=a, b=b, ids=ids, problem=problem, title=title)
    )


def compare_endpoint(store: Store) -> Callable[[Request], Response]:
    """The endpoint of `/compare` over `store`."""

    def compare(request: Request) -> Response:
        a = request.query_params.get("a", "").strip()
        b = request.query_params.get("b", "").strip()
        ids = [info.id for info in store.list()]
        headers = {"Content-Security-Policy": page.policy(live=False), "X-Content-Type-Options": "nosniff"}
        if not a or not b:
            return HTMLResponse(compare_html(None, a, b, ids), headers=headers)
        try:
            compared = diff_runs(open_run(store, a).state, open_run(store, b).state)
        except LookupError as error:
            shown = compare_html(None, a, b, ids, str(error))
            return HTMLResponse(shown, status_code=404, headers=headers)
        return HTMLResponse(compare_html(compared, a, b, ids), headers=headers)

    return compare
