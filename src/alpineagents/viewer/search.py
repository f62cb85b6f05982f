"""The runs list of the viewer: which runs a search and the filters keep, in which order, and which page of them.

A search matches the run's id and first message, then the content of its saved entries (message texts, thinking,
tool arguments and results, errors: the text of one entry's JSON, in any case). The filters keep the runs whose
status starts with one of the words of `STATUSES`, whose latest run was by one agent or on one model, and that were
updated on or after a day (UTC). Sorting is by `updated` (newest first; `updated_asc` oldest first), `cost` or
`turns` (largest first, unknown last) or `status` (by its text). The list shows `PAGE_SIZE` rows a page.

A store that answers such a search itself (`find_runs`: `SQLiteStore`, `PostgresStore`, see
`alpineagents._stores.runsql`) is asked for the page, which costs a few queries whatever the number of runs. For any
other store (`FileStore`, a store of your own) the runs are read and searched here, with the same rules; so is a
database the viewer may not write (its run table cannot be made or kept up to date).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from alpineagents._stores.runrows import (
    ORDERS,
    STATUSES,
    FindsRuns,
    RunPage,
    RunQuery,
    Summary,
    entries_hold,
    folded_needle,
    matches,
    open_run,
    summarize,
    summary_of,
    unlisted_summary,
)
from alpineagents.store import Store
from alpineagents.viewer.runs import stored_runs

__all__ = ["STATUSES", "SORTS", "PAGE_SIZE", "Choice", "find", "find_in_python", "warm"]

PAGE_SIZE = 100
"""How many runs a page of the list shows."""

SORTS: dict[str, Callable[[Summary], Any]] = {
    "cost": lambda row: (row.cost is None, -(row.cost or 0.0)),
    "turns": lambda row: -row.turns,
    "status": lambda row: row.status,
}
"""The orders besides `updated`: the key of each (sorted ascending; ties keep the listing's order)."""


@dataclass(frozen=True)
class Choice:
    """What the list page asks for: the search, the filters ("" for none), the order and the page (from 1)."""

    query: str = ""
    status: str = ""
    agent: str = ""
    model: str = ""
    since: str = ""
    order: str = "updated"
    page: int = 1

    def run_query(self, page_size: int | None = PAGE_SIZE) -> RunQuery:
        """The search this choice asks for (a status, order or day the list does not know is no filter, the
        newest-first order, no filter); `page_size=None`: every row."""
        page = max(self.page, 1)
        return RunQuery(
            text=self.query,
            status=self.status if self.status in STATUSES else "",
            agent=self.agent,
            model=self.model,
            since=_day(self.since),
            order=self.order if self.order in ORDERS else "updated",
            offset=0 if page_size is None else (page - 1) * page_size,
            limit=page_size,
        )


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:  # not a day: no filter
        return None


def find(store: Store, query: RunQuery) -> RunPage:
    """The page of runs `query` asks for: from the store's own search when it has one (and may keep its run
    table), else from `find_in_python`."""
    if isinstance(store, FindsRuns):
        try:
            return store.find_runs(query)
        except PermissionError:  # a database the viewer may only read: search it the slow way
            pass
    return find_in_python(store, query)


def warm(store: Store) -> None:
    """Bring the run table of a store with its own search up to date (the viewer does it on a thread of its own as
    it starts, so that the first list after many runs were saved does not wait for their rows); nothing for any
    other store. A store that cannot be read now says so on the first page instead."""
    if isinstance(store, FindsRuns):
        with contextlib.suppress(Exception):
            store.find_runs(RunQuery(limit=0))


def _content_holds(store: Store, state_id: str, needle: str, escaped: str) -> Summary | None:
    """The row of the run when `needle` (case-folded) is in one of its saved entries, else None."""
    try:
        run = open_run(store, state_id)
    except (LookupError, ValueError, OSError):
        return None
    return summary_of(run) if entries_hold(run.raw, needle, escaped) else None


def find_in_python(store: Store, query: RunQuery) -> RunPage:
    """`find` for any store: every run is read (its row, and its entries when the search is not in its id or first
    message), then filtered, sorted and cut in Python."""
    runs = stored_runs(store)
    needle, escaped = folded_needle(query.text)
    found: list[Summary] = []
    for info in runs.infos:
        if not needle or matches(info, needle):
            found.append(summarize(store, info))
        else:
            row = _content_holds(store, info.id, needle, escaped)
            if row is not None:
                found.append(row)
    found += [unlisted_summary(gone) for gone in runs.unlisted if needle in gone.id.casefold()]
    agents = sorted({row.agent for row in found if row.agent})
    models = sorted({row.model for row in found if row.model})
    found = [row for row in found if query.keeps(row)]
    if query.order in SORTS:
        found.sort(key=SORTS[query.order])
    else:
        found.sort(key=lambda row: row.updated_at is None)  # the listing is newest first; unsaved runs go last
        if query.order == "updated_asc":
            found.reverse()
    end = None if query.limit is None else query.offset + query.limit
    return RunPage(found[query.offset : end], len(found), len(runs), agents, models)
