"""`find_runs` for the database stores: the rows of a run list kept in a table, and the search as SQL.

Each run's row (`runrows.Summary`: status, cost, turns, agent, model...) is computed from the saved run, with the
same rules as the viewer's list, and kept in a table of its own beside the store's tables (`alpine_runs` in
SQLite, `runs` in the PostgreSQL schema), with the entry count and the info text it was computed from. Nothing is
added to the saved format or to a save point: before each search, the rows of the runs that changed since (another
count or info), are new or were deleted are brought up to date (all of them on the first search of a database
that never had the table, such as one written by an older version; the table is made then). Those rows are
computed in bulk (`stale_rows`): the entries of many runs come from one query, and each run is rebuilt from them as
`load` rebuilds it, with no read per run. A database stays readable and writable by a version that does not know
the table.

The search is then a few queries on that table: the content search reads the stored entry lines once, into a
temporary table of the runs they hold the text in; the filters, the order (the listing's order breaks ties) and the
page are SQL. SQLite matches the text with Python's case folding (a function registered on the connection), so it
finds exactly what the Python search finds; PostgreSQL with its `lower()`, which differs from case folding only
for a few letters (German ß, for one).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from alpineagents._stores.lines import parse_all
from alpineagents._stores.listing import Unlisted
from alpineagents._stores.runrows import (
    STATUSES,
    RunPage,
    RunQuery,
    Summary,
    folded_needle,
    line_holds,
    summarize,
    unlisted_summary,
    utc_text,
)
from alpineagents.store import Record, StateInfo, Store

__all__ = [
    "Dialect",
    "COLUMNS",
    "BULK",
    "table_query",
    "stale_query",
    "upsert_query",
    "gone_query",
    "row_values",
    "stale_rows",
    "search",
]

BULK = 500
"""How many States' entries one query reads when their rows are computed (bounds the memory of a first search)."""

COLUMNS = (
    "id",
    "count",
    "info",
    "first_fold",
    "updated",
    "status",
    "cost",
    "turns",
    "agent",
    "model",
    "unlisted",
    "loadable",
    "row",
)
"""The run table's columns: the State's id, the entry count and info text the row was computed from, the first
message case-folded, `updated` (UTC text, sortable), the sorted and filtered values, whether the info cannot be
read (`unlisted`) or the run can be loaded (`loadable`: only those are searched by content), and the row as JSON."""

_BASE_ORDER = "updated IS NULL, unlisted, updated DESC, id"
"""The listing's order: newest first, runs with no history, then runs that cannot be listed, ties by id."""

_ORDERS = {
    "updated": _BASE_ORDER,
    "updated_asc": "(updated IS NULL) DESC, unlisted DESC, updated ASC, id DESC",
    "cost": f"cost IS NULL, cost DESC, {_BASE_ORDER}",
    "turns": f"turns DESC, {_BASE_ORDER}",
    "status": f"status {{collate}}, {_BASE_ORDER}",
}


@dataclass(frozen=True)
class Dialect:
    """What differs between the databases: the placeholder, the tables' names, the text match of an entry line
    (`holds`, with two placeholders: the needle and its JSON-escaped form), the function that finds text in text
    (`find(haystack, needle)`, 0 when absent), the collation that orders text by code point, and how a query asks for
    no limit. `exact`: `holds` folds case as Python does; otherwise (PostgreSQL, whose `lower()` depends on the
    database's locale) it is trusted only for a text all in ASCII, and other texts are matched in Python among the
    lines that hold their longest piece of ASCII."""

    mark: str
    runs: str
    states: str
    entries: str
    hits: str
    holds: str
    find: str
    collate: str
    no_limit: int | None
    exact: bool = True


def stale_query(dialect: Dialect) -> str:
    """The States whose row is missing or out of date (id, count, info), and nothing else."""
    return (
        f"SELECT s.id, s.count, s.info FROM {dialect.states} s LEFT JOIN {dialect.runs} r ON r.id = s.id "
        "WHERE r.id IS NULL OR r.count <> s.count OR r.info <> s.info"
    )


def upsert_query(dialect: Dialect) -> str:
    """Puts one run's row in the table, in place of the one it had."""
    marks = ", ".join([dialect.mark] * len(COLUMNS))
    updates = ", ".join(f"{column} = excluded.{column}" for column in COLUMNS[1:])
    return (
        f"INSERT INTO {dialect.runs} ({', '.join(COLUMNS)}) VALUES ({marks}) ON CONFLICT (id) DO UPDATE SET {updates}"
    )


def table_query(dialect: Dialect, real: str) -> str:
    """Makes the run table when it is missing (`real`: the type of a float column)."""
    return (
        f"CREATE TABLE IF NOT EXISTS {dialect.runs} (id TEXT PRIMARY KEY, count INTEGER NOT NULL, info TEXT NOT NULL, "
        f"first_fold TEXT NOT NULL, updated TEXT, status TEXT NOT NULL, cost {real}, turns INTEGER NOT NULL, "
        "agent TEXT, model TEXT, unlisted INTEGER NOT NULL, loadable INTEGER NOT NULL, row TEXT NOT NULL)"
    )


def gone_query(dialect: Dialect, *, delete: bool = True) -> str:
    """Removes the rows of States that are no longer saved (`delete=False`: counts them)."""
    action = "DELETE" if delete else "SELECT count(*)"
    return f"{action} FROM {dialect.runs} WHERE id NOT IN (SELECT id FROM {dialect.states})"


def row_values(
    store: Store,
    state_id: str,
    count: int,
    info_text: str,
    parse: Callable[[str, str], Any],
    entries: list[dict[str, Any]] | None = None,
) -> tuple[Any, ...]:
    """The run table's values for one State, as the viewer's list shows it (`summarize`; a State whose info cannot
    be read is the row of an `Unlisted`). `parse(state_id, text)` parses the info text the store keeps; `entries`:
    the State's saved entries already read with that info (None: `summarize` reads the State itself)."""
    info: StateInfo | None
    try:
        info_dict = parse(state_id, info_text)
        info = StateInfo.from_info(state_id, info_dict)
    except ValueError as error:
        info = None
        row = unlisted_summary(Unlisted(state_id, error))
    else:
        row = summarize(store, info, None if entries is None else Record(entries, info_dict))
    return (
        state_id,
        count,
        info_text,
        (info.first_message or "").casefold() if info is not None else "",
        utc_text(row.updated_at),
        row.status,
        row.cost,
        row.turns,
        row.agent,
        row.model,
        int(info is None),
        int(not row.status.startswith(STATUSES["damaged"])),
        json.dumps(row.to_json(), ensure_ascii=False),
    )


def stale_rows(
    store: Store,
    stale: Sequence[tuple[str, int, str]],
    parse: Callable[[str, str], Any],
    entries_of: Callable[[Sequence[str]], Iterable[tuple[str, int, Any]]],
) -> list[tuple[Any, ...]]:
    """The run table's values of the `stale` States (id, count, info text), computed in bulk: the entries of
    `BULK` States at a time come from one query, `entries_of(ids)` (rows of state id, seq and line, ordered by
    State and seq), instead of one read per State, which made a first search of 10,000 runs take seconds. The
    rules are the same (`row_values`, `summarize`, the State rebuilt as `load` does); a State whose lines do not
    add up to its count (changed meanwhile, or damaged) or do not parse is read alone, so that its row says what
    that read says."""
    values: list[tuple[Any, ...]] = []
    for start in range(0, len(stale), BULK):
        chunk = stale[start : start + BULK]
        counts = {state_id: count for state_id, count, _ in chunk}
        saved = _entries_by_state(entries_of([state_id for state_id, count, _ in chunk if count]), counts)
        for state_id, count, info_text in chunk:
            values.append(row_values(store, state_id, count, info_text, parse, saved.get(state_id)))
    return values


def _entries_by_state(rows: Iterable[tuple[str, int, Any]], counts: Mapping[str, int]) -> dict[str, list[Any]]:
    """The entry dicts of each State whose rows are exactly its lines 0 to count - 1, all JSON objects (one parse
    per State); States with no entries have none. The others are left out."""
    found: dict[str, list[Any]] = {state_id: [] for state_id, count in counts.items() if count == 0}
    for state_id, group in itertools.groupby(rows, key=lambda row: row[0]):
        lines = [(seq, line) for _, seq, line in group]
        if [seq for seq, _ in lines] != list(range(counts.get(state_id, -1))):
            continue
        texts = [line for _, line in lines]
        if not all(type(line) is str for line in texts):  # a line that is not UTF-8 (SQLite gives its bytes)
            continue
        entries = parse_all("[" + ",".join(texts) + "]", len(texts))
        if entries is not None:
            found[state_id] = entries
    return found


def _filters(query: RunQuery, mark: str) -> tuple[list[str], list[Any]]:
    """The conditions of the filters, with their arguments."""
    kept: list[str] = []
    args: list[Any] = []
    prefixes = STATUSES.get(query.status)
    if prefixes:
        kept.append("(" + " OR ".join(f"substr(status, 1, {len(prefix)}) = {mark}" for prefix in prefixes) + ")")
        args.extend(prefixes)
    if query.agent:
        kept.append(f"agent = {mark}")
        args.append(query.agent)
    if query.model:
        kept.append(f"model = {mark}")
        args.append(query.model)
    if query.since is not None:
        kept.append(f"updated >= {mark}")
        args.append(query.since.isoformat())
    return kept, args


def _match_in_python(
    dialect: Dialect,
    execute: Callable[[str, Sequence[Any]], list[tuple[Any, ...]]],
    text: str,
    needle: str,
    escaped: str,
) -> None:
    """Fill the hits of a text with letters beyond ASCII: the lines that hold its longest ASCII piece (in lower
    case, which every locale folds alike) are read and matched here, with Python's case folding."""
    pieces = [piece for piece in re.split(r'[^\x20-\x7e]|["\\]', text.strip().lower()) if piece]
    piece = max(pieces, key=len, default="")
    rows = execute(
        f"SELECT state_id, line FROM {dialect.entries}"
        + (f" WHERE {dialect.find}(lower(line), {dialect.mark}) > 0" if piece else ""),
        [piece] if piece else [],
    )
    found = sorted({state_id for state_id, line in rows if line_holds(line, needle, escaped)})
    for start in range(0, len(found), 500):
        chunk = found[start : start + 500]
        values = ", ".join([f"({dialect.mark})"] * len(chunk))
        execute(f"INSERT INTO {dialect.hits} (id) VALUES {values}", chunk)


def search(
    dialect: Dialect,
    execute: Callable[[str, Sequence[Any]], list[tuple[Any, ...]]],
    query: RunQuery,
) -> RunPage:
    """Answer `query` from the run table (brought up to date by the caller), in the caller's transaction;
    `execute(sql, args)` runs one statement and returns its rows."""
    mark = dialect.mark
    needle, escaped = folded_needle(query.text)
    kept, kept_args = _filters(query, mark)
    found: list[str] = []
    found_args: list[Any] = []
    if needle:
        execute(f"DELETE FROM {dialect.hits}", [])
        if dialect.exact or query.text.isascii():
            execute(
                f"INSERT INTO {dialect.hits} (id) SELECT DISTINCT state_id FROM {dialect.entries} WHERE {dialect.holds}",
                [needle, escaped],
            )
        else:
            _match_in_python(dialect, execute, query.text, needle, escaped)
        # ids are letters, digits, "_" and "-": lower() folds them as case folding does
        text = (
            f"({dialect.find}(lower(id), {mark}) > 0 OR {dialect.find}(first_fold, {mark}) > 0 "
            f"OR (loadable = 1 AND id IN (SELECT id FROM {dialect.hits})))"
        )
        found, found_args = [text], [needle, needle]
    searched = " AND ".join(found) or "1 = 1"
    filtered = " AND ".join([*found, *kept]) or "1 = 1"
    stored = execute(f"SELECT count(*) FROM {dialect.runs}", [])[0][0]
    total = execute(f"SELECT count(*) FROM {dialect.runs} WHERE {filtered}", [*found_args, *kept_args])[0][0]
    facets = execute(
        f"SELECT DISTINCT agent, model FROM {dialect.runs} WHERE {searched}",
        found_args,
    )
    order = _ORDERS[query.order].format(collate=dialect.collate)
    limit = dialect.no_limit if query.limit is None else query.limit
    rows = execute(
        f"SELECT row FROM {dialect.runs} WHERE {filtered} ORDER BY {order} LIMIT {mark} OFFSET {mark}",
        [*found_args, *kept_args, limit, query.offset],
    )
    return RunPage(
        [Summary.from_json(json.loads(text)) for (text,) in rows],
        int(total),
        int(stored),
        sorted({agent for agent, _ in facets if agent}),
        sorted({model for _, model in facets if model}),
    )
