"""The search of the runs list: the database stores' own search (`find_runs`) answers exactly what the Python
search of the viewer answers on the same runs, for every text, filter, order and page; FileStore (no search of its
own) is searched in Python; the run table of a database store follows the runs as they change, and a database
that never had it (an older version's) is searched all the same and stays readable."""

from __future__ import annotations

import sqlite3
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from alpineagents._stores import runsql
from alpineagents._stores.runrows import ORDERS, STATUSES, FindsRuns, RunPage, RunQuery
from alpineagents.agent import Agent
from alpineagents.state import State
from alpineagents.store import FileStore, Store
from alpineagents.testing import FakeModel
from alpineagents.tool import tool
from alpineagents.types import Message, Price, ToolCall
from alpineagents.viewer.search import Choice, find, find_in_python
from helpers.store_kinds import KINDS, StoreKind

pytestmark = pytest.mark.timeout(300)


@tool
def note(title: str, body: str) -> str:
    """Keep a note.

    Args:
        title: Its title.
        body: Its text.
    """
    return f"kept {title!r}: {len(body)} characters"


@tool
def crash() -> str:
    """Fail."""
    raise RuntimeError("the disk said Connection Refused")


def _run(store: Store, state_id: str, prompt: str, replies: list[Any], *, name: str, model: str, price: bool) -> None:
    fake = FakeModel(replies, name=model, price=Price(input=3, output=15) if price else None)
    agent = Agent(fake, tools=[note, crash], store=store, reporter=None, human=None, name=name)
    try:
        agent.run(State(id=state_id, messages=[Message.user(prompt)]))
    except RuntimeError:  # the run that fails: saved with its error
        pass


def make_runs(kind: StoreKind, store: Store) -> dict[str, str]:
    """Runs of every status, two agents and two models, costs known and unknown, content in tool arguments and
    results and in non-ASCII text, and two damaged runs; returns what each run is."""
    made: dict[str, str] = {}
    for number in range(6):
        calls = [  # fixed ids: a random hex id could hold a searched word ("bad")
            ToolCall("note", {"title": f"Größe {number}", "body": "x" * number}, f"c{number}_{i}")
            for i in range(number % 3)
        ]
        _run(
            store,
            f"run{number}",
            f"Question {number}: the ÉCOLE report" if number % 2 else f"plain question {number}",
            [*calls, f"answer {number} with Apfel"],
            name="writer" if number % 2 else "reader",
            model="alpha" if number < 3 else "beta",
            price=number % 3 != 0,
        )
        made[f"run{number}"] = "stopped"
    _run(store, "broken1", "break it", [ToolCall("crash", {}, "c_crash")], name="reader", model="m", price=True)
    made["broken1"] = "error"
    state = State(id="done1", messages=[Message.user('title="Findings" of the week')])
    state.finish("the answer")
    store.save(state)
    made["done1"] = "finished"
    store.save(State(id="empty1"))
    made["empty1"] = "empty"
    pending = State(id="mid1", messages=[Message.user("half way")])
    store.save(pending)
    made["mid1"] = "not run yet"
    _run(store, "bad1", "damaged later", ["fine"], name="reader", model="m", price=False)
    kind.set_lines(store, "bad1", ['{"seq": 0, "kind": "nonsense"}'])
    made["bad1"] = "cannot load"
    _run(store, "bad2", "info damaged later", ["fine"], name="reader", model="m", price=False)
    kind.set_info(store, "bad2", "{not json")
    made["bad2"] = "unlisted"
    return made


@pytest.fixture(params=KINDS, ids=[kind.name for kind in KINDS])
def kind(request: pytest.FixtureRequest) -> StoreKind:
    return request.param


@pytest.fixture
def made(kind: StoreKind, request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Store, dict[str, str]]:
    store = kind.make(request, tmp_path)
    return store, make_runs(kind, store)


def _same(a: RunPage, b: RunPage) -> None:
    assert [row.to_json() for row in a.rows] == [row.to_json() for row in b.rows]
    assert (a.found, a.stored, a.agents, a.models) == (b.found, b.stored, b.agents, b.models)


TEXTS = ["", "apfel", "APFEL", "école", "größe 4", "question", "RUN1", 'title="findings', "connection refused", "zzz"]


def test_the_database_stores_search_as_the_python_search_does(made: tuple[Store, dict[str, str]]) -> None:
    store, runs = made
    if not isinstance(store, FindsRuns):
        pytest.skip(f"{type(store).__name__} has no search of its own: the viewer searches it in Python")
    today = datetime.now(UTC).date()
    queries = [RunQuery(text=text, limit=None) for text in TEXTS]
    queries += [RunQuery(status=status, limit=None) for status in STATUSES]
    queries += [RunQuery(order=order, limit=None) for order in ORDERS]
    queries += [
        RunQuery(text="question", order=order, limit=3, offset=offset) for order in ORDERS for offset in (0, 3, 6)
    ]
    queries += [
        RunQuery(agent="writer", limit=None),
        RunQuery(model="fake/beta", order="cost", limit=None),
        RunQuery(text="apfel", agent="reader", model="fake/alpha", limit=None),
        RunQuery(since=today, limit=None),
        RunQuery(since=date(2999, 1, 1), limit=None),
        RunQuery(text="a", status="stopped", order="turns", limit=2, offset=1),
        RunQuery(offset=100),
    ]
    for query in queries:
        _same(store.find_runs(query), find_in_python(store, query))


def test_every_store_finds_the_runs_by_content_filters_sorts_and_pages(made: tuple[Store, dict[str, str]]) -> None:
    store, runs = made
    everything = find(store, RunQuery(limit=None))
    assert everything.stored == everything.found == len(runs) + 0  # every run, the damaged ones too
    assert {row.id for row in everything.rows} == set(runs)
    by_id = {row.id: row for row in everything.rows}
    for state_id, what in runs.items():
        assert by_id[state_id].status.startswith(what if what != "unlisted" else "cannot load"), state_id
    assert [row.id for row in everything.rows][-1] == "bad2"  # a run that cannot be listed comes last

    # the text in any case, in answers, tool arguments (quotes included), tool results and errors
    assert {row.id for row in find(store, RunQuery(text="APFEL", limit=None)).rows} == {f"run{n}" for n in range(6)}
    assert {row.id for row in find(store, RunQuery(text="größe 4", limit=None)).rows} == {"run4"}
    assert {row.id for row in find(store, RunQuery(text="école", limit=None)).rows} == {"run1", "run3", "run5"}
    assert {row.id for row in find(store, RunQuery(text='title="findings', limit=None)).rows} == {"done1"}
    assert {row.id for row in find(store, RunQuery(text="connection refused", limit=None)).rows} == {"broken1"}
    assert {row.id for row in find(store, RunQuery(text="bad", limit=None)).rows} == {"bad1", "bad2"}  # by id

    writers = find(store, RunQuery(agent="writer", limit=None))
    assert {row.id for row in writers.rows} == {"run1", "run3", "run5"}
    assert everything.agents == ["reader", "writer"] and "fake/alpha" in everything.models
    assert {row.id for row in find(store, RunQuery(status="error", limit=None)).rows} == {"broken1"}
    assert {row.id for row in find(store, RunQuery(status="damaged", limit=None)).rows} == {"bad1", "bad2"}

    costs = [row.cost for row in find(store, RunQuery(order="cost", limit=None)).rows]
    known = [cost for cost in costs if cost is not None]
    assert known == sorted(known, reverse=True) and known and costs[len(known) :] == [None] * (len(costs) - len(known))
    turns = [row.turns for row in find(store, RunQuery(order="turns", limit=None)).rows]
    assert turns == sorted(turns, reverse=True)
    statuses = [row.status for row in find(store, RunQuery(order="status", limit=None)).rows]
    assert statuses == sorted(statuses)

    pages = [find(store, RunQuery(offset=offset, limit=4)) for offset in range(0, len(runs) + 4, 4)]
    assert [row.id for page in pages for row in page.rows] == [row.id for row in everything.rows]
    assert all(page.found == len(runs) for page in pages) and len(pages[-1].rows) == 0


def test_a_choice_of_the_list_page_becomes_a_query_that_ignores_what_it_does_not_know() -> None:
    query = Choice("x", status="nonsense", since="not a day", order="sideways", page=3).run_query(10)
    assert (query.status, query.since, query.order, query.offset, query.limit) == ("", None, "updated", 20, 10)
    with pytest.raises(ValueError, match="order takes one of"):
        RunQuery(order="sideways")
    with pytest.raises(ValueError, match="status takes one of"):
        RunQuery(status="nonsense")


def test_the_run_table_follows_new_changed_and_deleted_runs(made: tuple[Store, dict[str, str]]) -> None:
    store, _ = made
    if not isinstance(store, FindsRuns):
        pytest.skip("FileStore reads its runs at every search")
    assert store.find_runs(RunQuery(text="later words", limit=None)).found == 0
    state = store.load("mid1")
    state.add_message(Message.user("later words"))
    store.save(state)  # a save point adds entries: the row and the content search follow
    assert [row.id for row in store.find_runs(RunQuery(text="later words", limit=None)).rows] == ["mid1"]
    finished = store.load("run0")
    finished.finish("done")
    store.save(finished)
    assert "run0" in {row.id for row in store.find_runs(RunQuery(status="finished", limit=None)).rows}
    store.delete("run1")
    page = store.find_runs(RunQuery(limit=None))
    assert "run1" not in {row.id for row in page.rows} and page.stored == page.found
    _same(page, find_in_python(store, RunQuery(limit=None)))


def test_rows_computed_in_bulk_are_the_rows_computed_one_by_one(
    kind: StoreKind, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = kind.make(request, tmp_path)
    if not isinstance(store, FindsRuns):
        pytest.skip(f"{type(store).__name__} has no run table")
    make_runs(kind, store)
    lines = kind.raw_lines(store, "run2")
    kind.set_lines(store, "run2", [*lines[:-1], "{not json"])  # a line that does not parse
    lines = kind.raw_lines(store, "run4")
    kind.set_lines(store, "run4", [lines[1], lines[0], *lines[2:]])  # parses, but the seqs are out of place
    monkeypatch.setattr(runsql, "BULK", 3)  # several queries of entries, with damaged runs among them
    read = store.read
    alone: list[str] = []

    def read_alone(state_id: str) -> Any:
        alone.append(state_id)
        return read(state_id)

    monkeypatch.setattr(store, "read", read_alone)
    page = store.find_runs(RunQuery(limit=None))
    assert alone == ["run2"]  # only the run whose lines do not parse is read alone, to name its damage
    monkeypatch.undo()
    statuses = {row.id: row.status for row in page.rows}
    assert all(statuses[state_id].startswith("cannot load") for state_id in ("run2", "run4", "bad1", "bad2"))
    assert statuses["empty1"] == "empty" and statuses["run0"].startswith("stopped")
    _same(page, find_in_python(store, RunQuery(limit=None)))


def test_a_sqlite_database_of_an_older_version_is_searched_and_stays_readable(tmp_path: Path) -> None:
    kind = next(kind for kind in KINDS if kind.name == "sqlite")
    store = kind.make(None, tmp_path)
    runs = make_runs(kind, store)
    path = str(tmp_path / "runs.db")
    assert isinstance(store, FindsRuns)
    first = store.find_runs(RunQuery(text="apfel", limit=None))
    with sqlite3.connect(path) as conn:  # as an older version left it: no run table
        conn.execute("DROP TABLE alpine_runs")
    again = type(store)(path)
    assert isinstance(again, FindsRuns)
    _same(again.find_runs(RunQuery(text="apfel", limit=None)), first)
    # the store's own tables are as they were: the same reads and listing as before
    with sqlite3.connect(path) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"alpine_states", "alpine_entries", "alpine_runs"}
    assert {info.id for info in again.survey() if hasattr(info, "turn")} == set(runs) - {"bad2"}
    assert again.load("run2").messages[0].text == "plain question 2"


def test_filestore_has_no_search_of_its_own(tmp_path: Path) -> None:
    assert not isinstance(FileStore(tmp_path / "runs"), FindsRuns)
