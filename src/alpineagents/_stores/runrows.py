"""A run as one row of a list, and the search over such rows that a store may answer itself.

The row of a run (`Summary`): its id, first message, turns, times, a short status, cost, tokens, entries, parent,
and the agent and model of its latest run. Everything here reads a saved run the way `load` rebuilds it: only the
entries the store holds are counted, and when the saved history ends in the middle of a turn (the run is still
going, or its process stopped) the status says so (`UNFINISHED`) instead of counting the closing entries `load`
adds.

The search (`RunQuery` -> `RunPage`): a text, found (in any case) in the run's id, its first message or the content
of one of its saved entries (message texts, thinking, tool arguments and results, errors: the entry's compact JSON,
the form a store keeps); filters by status (`STATUSES`), agent, model and the day of the last update (UTC); an
order (`ORDERS`); and a page of it (`offset`, `limit`). A store that can answer it in its own query language
(`SQLiteStore`, `PostgresStore`) has `find_runs` (the optional `FindsRuns` capability, not part of the `Store`
role); for any other store the viewer finds the rows in Python, with the same rules (`alpineagents.viewer.search`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Protocol, runtime_checkable

from alpineagents._stores.lines import json_line
from alpineagents._stores.listing import Unlisted
from alpineagents.state import State
from alpineagents.store import Record, StateInfo, Store
from alpineagents.types import ErrorEntry, HistoryEntry, ModelEventEntry, ModelRequestEntry, RunStartEntry

__all__ = [
    "UNFINISHED",
    "STATUSES",
    "ORDERS",
    "Run",
    "Summary",
    "RunQuery",
    "RunPage",
    "FindsRuns",
    "first_line",
    "open_run",
    "run_of",
    "ending_error",
    "waiting_fork",
    "status",
    "summarize",
    "summary_of",
    "unlisted_summary",
    "matches",
    "folded_needle",
    "line_holds",
    "entries_hold",
]

UNFINISHED = "unfinished turn (still running, or its process stopped)"
"""The status of a run whose saved history ends in the middle of a turn."""

STATUSES: dict[str, tuple[str, ...]] = {
    "finished": ("finished",),
    "stopped": ("stopped",),
    "unfinished": ("unfinished",),
    "error": ("error",),
    "damaged": ("cannot load",),
}
"""The status filter's choices and the beginnings of the status texts each keeps."""

ORDERS = ("updated", "updated_asc", "cost", "turns", "status")
"""The orders of a search: `updated` newest first (the listing's order: runs with no history, then runs that
cannot be listed, last), `updated_asc` that order reversed, `cost` and `turns` largest first (no cost last), and
`status` by its text; runs that tie stay in the listing's order."""


@dataclass(frozen=True)
class Run:
    """One stored run: its listing info, the State `load` rebuilt, the saved entries and their JSON."""

    info: StateInfo
    state: State
    raw: Sequence[dict[str, Any]]

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def history(self) -> tuple[HistoryEntry, ...]:
        """The saved entries (without the closing entries `load` adds to an unfinished turn)."""
        return self.state.history[: len(self.raw)]

    @property
    def unfinished(self) -> bool:
        """True when the saved history ends in the middle of a turn."""
        return len(self.state.history) > len(self.raw)


@dataclass(frozen=True)
class Summary:
    """One row of a listing."""

    id: str
    first_message: str | None
    turns: int
    created_at: datetime | None
    updated_at: datetime | None
    status: str
    finished: bool
    cost: float | None
    tokens: int
    entries: int
    parent_id: str | None
    agent: str | None = None
    model: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as plain JSON values (times as ISO strings)."""
        return {
            "id": self.id,
            "first_message": self.first_message,
            "turns": self.turns,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
            "status": self.status,
            "finished": self.finished,
            "cost": self.cost,
            "tokens": self.tokens,
            "entries": self.entries,
            "parent_id": self.parent_id,
            "agent": self.agent,
            "model": self.model,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Summary:
        """The row `to_json` gave."""
        values = dict(data)
        for key in ("created_at", "updated_at"):
            values[key] = datetime.fromisoformat(values[key]) if values[key] else None
        return cls(**values)


def first_line(error: BaseException) -> str:
    """The first line of an exception's text (the library's errors put the problem there and the fix below)."""
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__


def open_run(store: Store, state_id: str, info: StateInfo | None = None) -> Run:
    """The run `state_id` read from `store` (`LookupError` when it is not there, `ValueError` when damaged)."""
    record = store.read(state_id)
    if record is None:
        raise LookupError(f"no saved State with id {state_id!r} in {store!r}")
    if info is None:
        info = StateInfo.from_info(state_id, record.info)
    return run_of(store, info, record)


def run_of(store: Store, info: StateInfo, record: Record) -> Run:
    """The run of a record already read from `store` (`ValueError` when damaged): its State rebuilt as `load`
    rebuilds it, from this record (no second read; `record.entries` are left as they are)."""
    state = store._rebuild(info.id, record)  # pyright: ignore[reportPrivateUsage]  # load's own rebuild
    return Run(info, state, record.entries)


def ending_error(entries: Iterable[HistoryEntry]) -> str | None:
    """The text of the error that ended the latest run in `entries`, or None.

    An error counts when no model request and no new run came after it (a loop that went on after a failed
    request did not end with that error).
    """
    last: str | None = None
    for entry in entries:
        if isinstance(entry, ErrorEntry):
            last = entry.content
        elif isinstance(entry, (ModelRequestEntry, RunStartEntry)):
            last = None
    return last


def waiting_fork(history: Sequence[HistoryEntry]) -> tuple[str, int] | None:
    """The origin of a fork that has not run since it was made (no run started after its fork event), or None."""
    from alpineagents._replay.fork import FORK_EVENT, fork_origin  # the fork's rule sits in a higher layer

    for entry in reversed(history):
        if isinstance(entry, RunStartEntry):
            return None
        if isinstance(entry, ModelEventEntry) and entry.content.kind == FORK_EVENT:
            return fork_origin([entry])
    return None


def status(run: Run) -> str:
    """A few words on how the run stands: finished, why it stopped, a fork not run yet, an unfinished turn, or the
    error it ended with."""
    if run.info.finished:
        return "finished"
    if run.info.stopped is not None:
        return str(run.info.stopped)
    fork = waiting_fork(run.history)
    if fork is not None:
        return f"forked from {fork[0]} at entry {fork[1]}, not run since (resume it to go on)"
    if run.unfinished:
        return UNFINISHED
    error = ending_error(run.history)
    if error is not None:
        return "error: " + error.splitlines()[0] if error else "error"
    if not run.raw:
        return "empty"
    if not any(isinstance(entry, RunStartEntry) for entry in run.history):
        return "not run yet"
    return "no stop recorded"


def unlisted_summary(gone: Unlisted) -> Summary:
    """The listing row of a run whose info cannot be read: its id and the reason, as its status."""
    return Summary(gone.id, None, 0, None, None, "cannot load: " + first_line(gone.error), False, None, 0, 0, None)


def summarize(store: Store, info: StateInfo, record: Record | None = None) -> Summary:
    """The listing row of one run; a run that cannot be read is listed with the reason as its status. `record`:
    the run as already read from `store` (with the info `info` was made from), or None to read it here."""
    try:
        run = open_run(store, info.id, info) if record is None else run_of(store, info, record)
    except (LookupError, ValueError, OSError) as error:
        return Summary(
            info.id, info.first_message, info.turn, info.created_at, info.updated_at,
            "cannot load: " + first_line(error), info.finished, None, 0, 0, info.parent_id,
        )  # fmt: skip
    return summary_of(run)


def summary_of(run: Run) -> Summary:
    """The listing row of a run already read."""
    info = run.info
    usage = run.state.usage
    starts = [entry.content for entry in run.history if isinstance(entry, RunStartEntry)]
    return Summary(
        info.id,
        info.first_message,
        info.turn,
        info.created_at,
        info.updated_at,
        status(run),
        info.finished,
        usage.cost,
        usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens + usage.output_tokens,
        len(run.raw),
        info.parent_id,
        starts[-1].name if starts else None,
        starts[-1].model if starts else None,
    )


def matches(info: StateInfo, text: str) -> bool:
    """True when `text` (any case) is part of the run's id or first message."""
    needle = text.casefold()
    return needle in info.id.casefold() or needle in (info.first_message or "").casefold()


# ---------------------------------------------------------------------------------------------------------------
# The search


@dataclass(frozen=True)
class RunQuery:
    """What a search of runs asks for (every field optional).

    `text` is found, in any case, in the id, the first message or the content of one saved entry; `status` is a
    key of `STATUSES` ("" for any); `agent` and `model` keep the runs whose latest run was by that agent or on that
    model; `since` keeps the runs updated on or after that day (UTC); `order` is one of `ORDERS`; `offset` and
    `limit` cut a page out of the rows found (`limit=None`: all of them).
    """

    text: str = ""
    status: str = ""
    agent: str = ""
    model: str = ""
    since: date | None = None
    order: str = "updated"
    offset: int = 0
    limit: int | None = 100

    def __post_init__(self) -> None:
        if self.status and self.status not in STATUSES:
            raise ValueError(f"status takes one of {', '.join(STATUSES)} (got: {self.status!r})")
        if self.order not in ORDERS:
            raise ValueError(f"order takes one of {', '.join(ORDERS)} (got: {self.order!r})")
        if self.offset < 0 or (self.limit is not None and self.limit < 0):
            raise ValueError(f"offset and limit take numbers from 0 (got: {self.offset}, {self.limit})")

    def keeps(self, row: Summary) -> bool:
        """True when `row` passes every filter (the text aside)."""
        kept = STATUSES.get(self.status)
        if kept is not None and not row.status.startswith(kept):
            return False
        if (self.agent and row.agent != self.agent) or (self.model and row.model != self.model):
            return False
        if self.since is None:
            return True
        return row.updated_at is not None and _utc_day(row.updated_at) >= self.since


def _utc_day(at: datetime) -> date:
    return (at.astimezone(UTC) if at.tzinfo is not None else at).date()


@dataclass(frozen=True)
class RunPage:
    """One page of a search: its `rows`; `found`, how many runs the search and filters keep in all; `stored`, how
    many runs the store has; and the `agents` and `models` of the runs the text found (the filters' choices)."""

    rows: list[Summary]
    found: int
    stored: int
    agents: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)


@runtime_checkable
class FindsRuns(Protocol):
    """A store that answers a search of its runs itself (an optional capability beside the `Store` role)."""

    def find_runs(self, query: RunQuery) -> RunPage: ...


def folded_needle(text: str) -> tuple[str, str]:
    """The text a search looks for, case-folded, and the same as a JSON string holds it (quotes and newlines
    escaped), for the entries' JSON."""
    needle = text.strip().casefold()
    return needle, json.dumps(needle, ensure_ascii=False)[1:-1]


def line_holds(line: str | None, needle: str, escaped: str) -> bool:
    """True when one stored entry line (its compact JSON) holds the needle, in any case."""
    if line is None:
        return False
    folded = line.casefold()
    return needle in folded or escaped in folded


def entries_hold(entries: Iterable[dict[str, Any]], needle: str, escaped: str) -> bool:
    """True when one of the saved entry dicts holds the needle in its compact JSON, in any case."""
    return any(line_holds(json_line(entry).decode(), needle, escaped) for entry in entries)


def utc_text(at: datetime | None) -> str | None:
    """A time as the text a search's `updated` column holds: UTC, to the microsecond, sortable as text."""
    if at is None:
        return None
    if at.tzinfo is not None:
        at = at.astimezone(UTC).replace(tzinfo=None)
    return at.isoformat(timespec="microseconds")
