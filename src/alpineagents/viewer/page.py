"""The viewer's HTML: the runs list, one run's page, the pieces a live page fetches, and the offline export.

Pages are Jinja2 templates with autoescape on, so every text from a run is shown as text. The stylesheet and the
script are package files put inline into each page, so a page needs nothing from the network, and an exported
page is one file.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from alpineagents._replay.fork import fork_origin
from alpineagents.store import StateInfo, Store
from alpineagents.types import RunStartEntry
from alpineagents.viewer import charts, requests, search, timeline, waterfall
from alpineagents.viewer.runs import Run, Summary, TreeNode, open_run, status, stored_runs, subagent_tree

ENV = Environment(
    loader=PackageLoader("alpineagents.viewer", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def asset(name: str) -> Markup:
    """A file of viewer/static, trusted as it is (it ships with the package)."""
    return Markup(resources.files("alpineagents.viewer").joinpath("static", name).read_text(encoding="utf-8"))


def when(at: datetime | None) -> str:
    """A time stamp as `2026-01-01 09:00:00 UTC`, or `-`."""
    return at.strftime("%Y-%m-%d %H:%M:%S UTC") if at else "-"


def money(cost: float | None) -> str:
    """`$0.0123`, or `-` when the price is unknown."""
    return "-" if cost is None else f"${cost:.4f}"


def policy(*, live: bool) -> str:
    """The Content-Security-Policy of a page: its inline style, and no script but the viewer's own (when live)."""
    script = f"'sha256-{_script_hash()}'" if live else "'none'"
    return f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; script-src {script}"


def _script_hash() -> str:
    digest = hashlib.sha256(str(asset("viewer.js")).encode("utf-8")).digest()
    return base64.b64encode(digest).decode("ascii")


ENV.filters["when"] = when
ENV.filters["money"] = money


@dataclass
class RunPage:
    """Everything one run's section of the page shows."""

    run: Run
    items: list[timeline.Item]
    header: dict[str, Any]
    charts: list[Markup]
    tree: TreeNode | None = None
    spans: list[waterfall.Span] = field(default_factory=list)
    views: dict[int, requests.RequestView] | None = None
    """The input of each request, by position, once an exported page asks for them."""


def header(run: Run) -> dict[str, Any]:
    """The facts at the top of a run's page."""
    state = run.state
    starts = [entry for entry in run.history if isinstance(entry, RunStartEntry)]
    agent = starts[-1].content if starts else None
    usage = state.usage
    said = status(run)
    return {
        "id": run.id,
        "first_message": run.info.first_message,
        "agent": agent.name if agent else None,
        "model": agent.model if agent else None,
        "status": said,
        "tone": "ok" if run.info.finished or run.info.stopped else ("bad" if "error" in said else "warn"),
        "turns": state.turn,
        "usage": usage,
        "cost": usage.cost,
        "budget": state.budget,
        "answer": None if state.answer is None else _answer(state.answer),
        "created_at": run.info.created_at,
        "updated_at": run.info.updated_at,
        "parent_id": run.info.parent_id,
        "forked_from": fork_origin(run.history),
        "entries": len(run.raw),
        "runs": len(starts),
    }


def _answer(answer: Any) -> str:
    return answer if isinstance(answer, str) else timeline.as_json(answer)


def run_page(store: Store, state_id: str, infos: Sequence[StateInfo] | None = None) -> RunPage:
    """The page data of run `state_id` (`LookupError` when the store does not have it)."""
    run = open_run(store, state_id)
    items = timeline.build(run.history, run.raw)
    sent = requests.summaries(run.history)
    for item in items:
        item.input_summary = sent.get(item.seq, "")
    turns = charts.turns(run.history)
    drawn = [charts.token_chart(turns), charts.cost_chart(turns, run.state.usage.cost), charts.duration_chart(items)]
    listing = stored_runs(store).infos if infos is None else infos
    return RunPage(
        run,
        items,
        header(run),
        [chart for chart in drawn if chart],
        subagent_tree(listing, state_id),
        waterfall.spans(state_id, items, lambda child_id: _items(store, child_id)),
    )


def _items(store: Store, state_id: str) -> list[timeline.Item] | None:
    """The timeline items of a subagent run, or None when it is not in the store or cannot be read."""
    try:
        run = open_run(store, state_id)
    except (LookupError, ValueError, OSError):
        return None
    return timeline.build(run.history, run.raw)


def server_link(state_id: str) -> str:
    """The viewer's address of a run's page."""
    return "/runs/" + quote(state_id)


def context(link: Callable[[str], str], **values: Any) -> dict[str, Any]:
    """What every page's template is given: the stylesheet, the script, `link` (a run's address), the page's
    Content-Security-Policy and the helpers of the run pages, with `values`."""
    live = bool(values.get("live"))
    return {
        "css": asset("viewer.css"),
        "js": asset("viewer.js"),
        "link": link,
        "policy": policy(live=live),
        "waterfall": lambda page: waterfall.chart(page.spans, link, page.run.id),
        "request_view": _request_view,
        **values,
    }


def _request_view(page: RunPage, seq: int) -> requests.RequestView | None:
    """The input of the request at `seq` of the page's run (all of them worked out at the first call, in one pass)."""
    if page.views is None:
        page.views = requests.request_views(page.run.history)
    return page.views.get(seq)


def problem_html(heading: str, message: str) -> str:
    """A page that says what went wrong (an unknown run, a store that cannot be read)."""
    template = ENV.get_template("problem.html")
    values = {"heading": heading, "message": message, "title": heading, "live": False, "exported": False}
    return template.render(context(server_link, **values))


def list_html(
    rows: Sequence[Summary],
    choice: search.Choice,
    options: dict[str, list[str]],
    total: int,
    *,
    found: int | None = None,
    page_size: int | None = None,
) -> str:
    """The runs list page: `rows` of the `found` runs the choice keeps (all of them when `None`) out of `total`,
    page `choice.page` of `page_size` rows."""
    template = ENV.get_template("list.html")
    kept = len(rows) if found is None else found
    size = page_size or max(kept, 1)
    first = (max(choice.page, 1) - 1) * size
    pages = {"found": kept, "first": first + 1, "last": first + len(rows), "more": first + len(rows) < kept}
    values = {"rows": rows, "choice": choice, "query": choice.query, "order": choice.order, "total": total, **pages}
    return template.render(context(server_link, statuses=list(search.STATUSES), live=False, **options, **values))


def run_html(page: RunPage) -> str:
    """One run's page as the server shows it, updating itself while the run grows."""
    template = ENV.get_template("run.html")
    return template.render(context(server_link, sections=[page], title=page.run.id, live=True, exported=False))


def fragments(page: RunPage, after: int) -> dict[str, Any]:
    """What a live page fetches: the items after the first `after`, and the header and charts drawn again."""
    module = ENV.get_template("parts.html").make_module(context(server_link, live=True, exported=False))
    macro: Callable[[str], Callable[..., Any]] = lambda name: getattr(module, name)  # noqa: E731 - macros by name
    items = "".join(str(macro("item")(item, page)) for item in page.items[after:])
    return {
        "count": len(page.items),
        "items": items,
        "header": str(macro("header")(page)),
        "charts": str(macro("charts")(page)),
    }


def request_html(store: Store, state_id: str, seq: int) -> str | None:
    """The full input of the request at entry `seq` of run `state_id`, as the HTML its page opens (None when that
    entry is not a request; `LookupError` when the store does not have the run)."""
    run = open_run(store, state_id)
    view = requests.request_view(run.history, seq)
    if view is None:
        return None
    module = ENV.get_template("parts.html").make_module(context(server_link, live=True, exported=False))
    return str(module.request_input(view))  # type: ignore[attr-defined]  # a macro of parts.html


def export_html(store: Store, state_id: str) -> str:
    """One self-contained page of run `state_id` and every subagent run under it, for a browser with no server."""
    infos = stored_runs(store).infos
    first = run_page(store, state_id, infos)
    pages = [first]
    if first.tree is not None:
        below = _descendants(first.tree, state_id)
        pages += [run_page(store, node_id, infos) for node_id in below]
    included = {page.run.id for page in pages}

    def link(target: str) -> str:
        return "#run-" + target if target in included else ""

    template = ENV.get_template("run.html")
    return template.render(context(link, sections=pages, title=state_id, live=False, exported=True))


def _descendants(tree: TreeNode, state_id: str) -> list[str]:
    """The ids of the runs under `state_id` in `tree`, depth first."""
    found: list[str] = []

    def walk(node: TreeNode, inside: bool) -> None:
        for child in node.children:
            if inside:
                found.append(child.info.id)
            walk(child, inside or child.info.id == state_id)

    walk(tree, tree.info.id == state_id)
    return found
