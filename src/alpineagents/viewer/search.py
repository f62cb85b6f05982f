"""The runs list of the viewer: which runs a search and a status filter keep, and in which order.

A search matches the run's id and first message, then the content of its saved entries (message texts, thinking,
tool arguments and results, errors). The filters keep the runs whose status starts with one of the words of
`STATUSES`, whose latest run was by one agent or on one model, and that were updated on or after a day (UTC).
Sorting is by `updated` (newest first; `updated_asc` oldest first), `cost` or `turns` (largest first, unknown last)
or `status` (by its text).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from alpineagents.store import Store
from alpineagents.viewer.runs import Listing, Summary, matches, open_run, summarize, summary_of, unlisted_summary

STATUSES = {
    "finished": ("finished",),
    "stopped": ("stopped",),
    "unfinished": ("unfinished",),
    "error": ("error",),
    "damaged": ("cannot load",),
}
"""The status filter's choices and the status texts each keeps."""

SORTS: dict[str, Callable[[Summary], Any]] = {
    "cost": lambda row: (row.cost is None, -(row.cost or 0.0)),
    "turns": lambda row: -row.turns,
    "status": lambda row: row.status,
}
"""The orders besides `updated`: the key of each (sorted ascending)."""


def _content_holds(store: Store, state_id: str, needle: str) -> Summary | None:
    """The row of the run when `needle` (case-folded) is in the text of its saved entries, else None."""
    try:
        run = open_run(store, state_id)
    except (LookupError, ValueError, OSError):
        return None
    text = json.dumps(list(run.raw), ensure_ascii=False).casefold()
    escaped = json.dumps(needle, ensure_ascii=False)[1:-1]  # a needle with quotes or newlines, as the JSON holds it
    if needle in text or escaped in text:
        return summary_of(run)
    return None


@dataclass(frozen=True)
class Choice:
    """What the list page asks for: the search, the filters ("" for none) and the order."""

    query: str = ""
    status: str = ""
    agent: str = ""
    model: str = ""
    since: str = ""
    order: str = "updated"

    def keeps(self, row: Summary) -> bool:
        """True when `row` passes every filter."""
        kept = STATUSES.get(self.status)
        if kept is not None and not row.status.startswith(kept):
            return False
        if (self.agent and row.agent != self.agent) or (self.model and row.model != self.model):
            return False
        day = _day(self.since)
        return day is None or (row.updated_at is not None and row.updated_at.date() >= day)


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:  # not a day: no filter
        return None


def rows(store: Store, runs: Listing, choice: Choice) -> tuple[list[Summary], dict[str, list[str]]]:
    """The rows the list shows for `choice`, and the agents and models of the rows the search found (the filters'
    options)."""
    needle = choice.query.strip().casefold()
    found: list[Summary] = []
    for info in runs.infos:
        if not needle or matches(info, needle):
            found.append(summarize(store, info))
        else:
            row = _content_holds(store, info.id, needle)
            if row is not None:
                found.append(row)
    found += [unlisted_summary(gone) for gone in runs.unlisted if needle in gone.id.casefold()]
    options = {
        "agents": sorted({row.agent for row in found if row.agent}),
        "models": sorted({row.model for row in found if row.model}),
    }
    found = [row for row in found if choice.keeps(row)]
    if choice.order in SORTS:
        found.sort(key=SORTS[choice.order])
    else:
        found.sort(key=lambda row: row.updated_at is None)  # the listing is newest first; unsaved runs go last
        if choice.order == "updated_asc":
            found.reverse()
    return found, options
