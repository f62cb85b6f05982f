"""The runs list of the viewer: which runs a search and a status filter keep, and in which order.

A search matches the run's id and first message, then the content of its saved entries (message texts, thinking,
tool arguments and results, errors). The status filter keeps the runs whose status starts with one of the words
of `STATUSES`. Sorting is by `updated` (newest first; `updated_asc` oldest first), `cost` or `turns` (largest
first, unknown last) or `status` (by its text).
"""

from __future__ import annotations

import json
from collections.abc import Callable
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


def rows(store: Store, runs: Listing, query: str, status: str, order: str) -> list[Summary]:
    """The rows the list shows for the search `query`, the `status` filter (a key of `STATUSES`, or "") and the
    `order` (a key of `SORTS`, `updated` or `updated_asc`)."""
    needle = query.strip().casefold()
    found: list[Summary] = []
    for info in runs.infos:
        if not needle or matches(info, needle):
            found.append(summarize(store, info))
        else:
            row = _content_holds(store, info.id, needle)
            if row is not None:
                found.append(row)
    found += [unlisted_summary(gone) for gone in runs.unlisted if needle in gone.id.casefold()]
    kept = STATUSES.get(status)
    if kept is not None:
        found = [row for row in found if row.status.startswith(kept)]
    if order in SORTS:
        found.sort(key=SORTS[order])
    else:
        found.sort(key=lambda row: row.updated_at is None)  # the listing is newest first; unsaved runs go last
        if order == "updated_asc":
            found.reverse()
    return found
