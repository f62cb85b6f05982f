"""The viewer's compare page and eval reports in a real headless browser (Playwright driving Debian's chromium):
two stored runs side by side, the first divergence highlighted; the evals a store keeps, each run linked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from alpineagents import Agent, Price, State, tool
from alpineagents.evals import Case, Contains, Dataset, run_evals
from alpineagents.store import SQLiteStore
from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import Message
from helpers.browser import needs_chromium
from helpers.cli_agents import XSS, viewer

needs_chromium()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def saved(store: SQLiteStore, state_id: str, replies: list[Any], text: str = "What is 1+2?") -> None:
    state = State(id=state_id, messages=[Message.user(text)])
    Agent(model=FakeModel(replies, price=Price(input=1, output=2)), tools=[add], reporter=None, store=store).run(state)


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("compare")
    store = SQLiteStore(folder / "runs.db")
    saved(store, "a1", [tool_call("add", a=1, b=2), "It is 3."])
    saved(store, "a2", [tool_call("add", a=1, b=2), "It is 3."])
    saved(store, "b1", [tool_call("add", a=1, b=3), f"It is 4. {XSS}"])
    flip = iter(["Paris.", "Lyon.", "Paris.", "4", "4", "4"])
    agent = Agent(model=FakeModel([lambda request: next(flip)] * 6), name="geo", reporter=None)
    cases = [Case("Capital of France?", checks=[Contains("Paris")], name="capital"), Case("2+2?", expected="4")]
    run_evals(agent, Dataset(cases, name="basics"), concurrency=1, repeat=3, store=store)
    with viewer(str(folder / "runs.db"), folder) as found:
        yield found.rstrip("/")


def test_two_diverging_runs_side_by_side_with_the_divergence_highlighted(page: Any, address: str) -> None:
    page.goto(address + "/compare")
    assert page.locator("table.compare").count() == 0
    page.fill("input[name=a]", "a1")
    page.fill("input[name=b]", "b1")
    page.click("form.pick button")
    page.wait_for_url("**/compare?a=a1&b=b1")
    assert page.locator("#verdict").inner_text() == "First divergence at step 2 of 5."
    rows = page.locator("tr.step")
    assert rows.count() == 5
    classes = rows.evaluate_all("rows => rows.map(row => row.className)")
    assert classes == ["step same", "step differs divergence", "step differs", "step differs", "step same"]
    first = page.locator("#first-divergence")
    assert first.locator("td.a").inner_text() == "reply: calls add(a=1, b=2)"
    assert first.locator("td.b").inner_text() == "reply: calls add(a=1, b=3)"
    outline = first.locator("td.a").evaluate("cell => getComputedStyle(cell).outlineStyle")
    red = first.locator("td.a").evaluate("cell => getComputedStyle(cell).backgroundColor")
    same = rows.nth(0).locator("td.a").evaluate("cell => getComputedStyle(cell).backgroundColor")
    assert outline == "solid" and red == "rgb(251, 225, 223)" and same != red
    assert rows.nth(3).locator("td.b").inner_text() == f"reply: It is 4. {XSS}"  # shown as text
    assert page.dialogs == []
    assert page.locator("#side-a .turns").inner_text() == "2" and page.locator("#side-a .calls").inner_text() == "1"
    assert page.locator("#side-b .cost").inner_text().startswith("$")
    page.click("#verdict a")
    assert page.evaluate("location.hash") == "#first-divergence"
    page.click("#side-a h2 a")
    page.wait_for_url("**/runs/a1")


def test_identical_runs_and_an_unknown_run(page: Any, address: str) -> None:
    page.goto(address + "/compare?a=a1&b=a2")
    assert page.locator("#verdict").inner_text() == "The runs are the same (5 steps)."
    assert page.locator("tr.step.differs").count() == 0
    response = page.goto(address + "/compare?a=a1&b=nope")
    assert response.status == 404
    assert "nope" in page.locator("#problem").inner_text()
    assert page.locator("datalist option").count() == 9


def test_the_evals_a_store_keeps_are_listed_and_each_report_links_its_runs(page: Any, address: str) -> None:
    page.goto(address + "/evals")
    rows = page.locator("tr.eval-row")
    assert rows.count() == 1
    assert rows.locator("td").all_inner_texts()[1:4] == ["geo", "basics", "5/6"]
    rows.locator("a").click()
    page.wait_for_url("**/evals/eval-*")
    assert "83% of 6 runs passed" in page.locator(".total").inner_text()
    capital = page.locator('tr.case[data-case="capital"]')
    assert "flaky" in capital.get_attribute("class") and capital.locator(".rate").inner_text() == "2/3"
    assert "contains: 'Paris' is not in 'Lyon.'" in capital.locator(".reason").inner_text()
    assert page.locator('tr.case[data-case="case-2"] .rate').inner_text() == "3/3"
    failed = capital.locator("a.run.failed")
    assert failed.count() == 1
    failed.click()
    page.wait_for_url("**/runs/eval-*-capital-2")
    assert "Lyon." in page.inner_text("body")
    assert page.goto(address + "/evals/eval-nope").status == 404
