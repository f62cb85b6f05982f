"""The run viewer in a real headless browser: Playwright driving Debian's chromium at /usr/bin/chromium.

The runs are made by the `alpineagents` command with the agents of `tests/helpers/cli_agents.py`, the viewer is
`alpineagents view` on a free 127.0.0.1 port. The screenshots go to a temporary folder, or to docs/screenshots/ with
`ALPINEAGENTS_SCREENSHOTS=1` (how the README's pictures are made). Without chromium the tests are skipped, except in
CI (the CI variable is set), where they must run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alpineagents.store import SQLiteStore
from helpers.browser import ROOT, WAIT_MS, needs_chromium, shot
from helpers.cli_agents import XSS, cli, command, command_env, has_entry, viewer

needs_chromium()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store with a calc run, a lead run (tool calls, errors, a subagent, a compaction), a run whose
    content holds a script tag, and a run that raised."""
    folder = tmp_path_factory.mktemp("viewer")
    store = str(folder / "runs.db")
    for agent, prompt, state_id in [
        ("calc", "please add 2 and 3", "r1"),
        ("xss", f"Show me {XSS}", "xss1"),
        ("broken", "break it", "b1"),
        ("painter", "draw something", "p1"),
        ("lead", "Survey the project", "lead1"),
    ]:
        cli("run", f"cli_agents:{agent}", prompt, "--id", state_id, "--store", store, cwd=folder)
    return folder


@pytest.fixture(scope="module")
def address(runs: Path) -> Iterator[str]:
    with viewer(str(runs / "runs.db"), runs) as found:
        yield found


def row_ids(page: Any) -> list[str]:
    return page.locator("tr.run-row").evaluate_all("rows => rows.map(row => row.dataset.id)")


def test_the_runs_list_shows_every_run_with_its_status_and_cost(page: Any, address: str) -> None:
    page.goto(address)
    ids = row_ids(page)
    assert {"lead1", "r1", "xss1", "b1", "p1"} <= set(ids) and len(ids) == 6
    assert ids.index("lead1") < ids.index("p1") < ids.index("b1") < ids.index("xss1") < ids.index("r1")  # newest first
    lead = page.locator('tr[data-id="lead1"]')
    assert lead.locator(".status").inner_text() == "finished"
    assert lead.locator("td.num").nth(1).inner_text().startswith("$0.00")
    assert page.locator('tr[data-id="b1"] .status').inner_text() == "error: RuntimeError: boom"
    child = [i for i in ids if i not in ("lead1", "r1", "xss1", "b1", "p1")][0]
    assert "subagent of lead1" in page.locator(f'tr[data-id="{child}"]').inner_text()
    shot(page, "runs-list.png")


def test_the_runs_list_searches_and_sorts_by_updated(page: Any, address: str) -> None:
    page.goto(address)
    newest_first = row_ids(page)
    page.fill("input[name=q]", "SURVEY")
    page.press("input[name=q]", "Enter")
    page.wait_for_url("**/?q=SURVEY**")
    assert row_ids(page) == ["lead1"]
    page.goto(address)
    page.click("#sort-updated")
    page.wait_for_url("**sort=updated_asc**")
    assert row_ids(page) == list(reversed(newest_first))


def test_a_run_page_shows_tool_calls_errors_a_subagent_and_a_compaction(page: Any, address: str) -> None:
    page.goto(address)
    page.click('tr[data-id="lead1"] td.id a')
    page.wait_for_url("**/runs/lead1")
    head = page.locator("section.head")
    assert head.locator("h1").inner_text() == "lead1"
    assert head.locator(".status").inner_text() == "finished"
    assert "fake/fake" in head.inner_text() and "$0.00" in head.inner_text()
    assert head.locator(".answer pre").inner_text() == "two open issues"
    kinds = page.locator("li.entry").evaluate_all("items => items.map(item => item.querySelector('.kind').textContent)")
    assert kinds[:4] == ["context_change", "run_start", "model_request", "model_reply"]
    assert kinds.count("tool_result") == 4 and kinds.count("human") == 4 and kinds[-1] == "stop"

    badges = page.locator("li.kind-tool_result .badge").all_inner_texts()
    assert sorted(badges) == ["denied", "done", "done", "error"]
    error = page.locator("li.kind-tool_result.bad")
    assert "could not reach http://example.invalid: connection refused" in error.inner_text()
    assert re.fullmatch(r"\d+ ms|\d+\.\d{3} s", error.locator(".fact").first.inner_text())  # its duration, to the ms
    assert "rm is not allowed." in page.locator("li.kind-tool_result.warn").inner_text()
    assert 'Run write_note(title="Findings")?' in page.locator("li.kind-human").nth(1).inner_text()
    compact = page.locator("li.kind-context_change", has_text="context compacted")
    assert "2142 → 51 tokens" in compact.inner_text() or "→ 51 tokens" in compact.inner_text()
    reply = page.locator("li.kind-model_reply").first
    assert "Let me look around." in reply.inner_text()
    assert reply.locator(".piece.call").count() == 4
    assert page.locator("section.charts svg").count() == 4  # the waterfall, tokens, cost and tool durations
    shot(page, "run-page.png")
    shot(page, "run-page-full.png", full=True)

    folded = page.locator("li.kind-tool_result", has_text="write_note").locator("details.fold")
    assert folded.get_attribute("open") is None
    assert not folded.locator("pre").last.is_visible()
    folded.locator("summary").click()
    assert "line 59: lorem ipsum" in folded.locator("pre").last.inner_text()

    raw = page.locator("li.kind-tool_result.bad details.raw")
    raw.locator("summary").click()
    assert '"outcome": "error"' in raw.locator("pre").inner_text()

    page.locator("li.kind-tool_result", has_text="scout(").locator(".links a").click()
    page.wait_for_url("**/runs/*")
    child = page.locator("section.head")
    assert "subagent of" in child.inner_text() and "lead1" in child.inner_text()
    assert 'list_issues(state="open")' in page.locator("ol.timeline").inner_text()
    tree = page.locator("section.tree")
    assert tree.locator("a", has_text="lead1").count() == 1
    assert tree.locator("li.current").count() == 1
    tree.locator("a", has_text="lead1").click()
    page.wait_for_url("**/runs/lead1")


def test_a_run_that_raised_shows_the_error(page: Any, address: str) -> None:
    page.goto(address + "runs/b1")
    assert page.locator("section.head .status").inner_text() == "error: RuntimeError: boom"
    assert page.locator("li.kind-error").inner_text().count("RuntimeError: boom") == 1
    assert page.locator("li.kind-tool_result .badge").inner_text() == "aborted"


def test_an_image_result_is_shown_inline(page: Any, address: str) -> None:
    page.goto(address + "runs/p1")
    image = page.locator("li.kind-tool_result img.inline-image")
    assert (image.get_attribute("src") or "").startswith("data:image/png;base64,")
    page.wait_for_function("document.querySelector('img.inline-image').complete", timeout=WAIT_MS)
    assert page.evaluate("document.querySelector('img.inline-image').naturalWidth") == 8
    assert "took" in page.locator("li.kind-model_reply .fact").first.inner_text()


def test_a_script_in_the_content_is_shown_as_text_and_never_runs(page: Any, address: str) -> None:
    page.goto(address)
    assert XSS in page.locator('tr[data-id="xss1"]').inner_text()
    page.goto(address + "runs/xss1")
    text = page.locator("main").inner_text()
    assert text.count(XSS) >= 3  # the first message, the tool result, the reply (and the answer)
    assert page.locator("section.head .answer pre").inner_text() == f"Here it is: {XSS}"
    assert page.evaluate("document.scripts.length") == 1  # the viewer's own script only
    page.wait_for_timeout(500)
    assert page.dialogs == []
    shot(page, "escaped-script.png")


def test_a_run_that_is_still_going_updates_as_its_store_grows(page: Any, runs: Path, address: str) -> None:
    gate = runs / "gate.txt"
    process = subprocess.Popen(
        command("run", "cli_agents:slow", "wait", "--id", "live1", "--store", "runs.db"),
        cwd=runs,
        env=command_env(CLI_TEST_GATE=str(gate)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        store = SQLiteStore(runs / "runs.db")
        deadline = time.monotonic() + 60
        while not has_entry(store, "live1", "model_reply"):
            assert time.monotonic() < deadline, "the run never reached its tool call"
            time.sleep(0.05)
        page.goto(address + "runs/live1")
        assert "unfinished turn" in page.locator("section.head .status").inner_text()
        before = page.locator("li.entry").count()
        gate.write_text("opened", encoding="utf-8")
        page.locator("li.kind-model_reply", has_text="The gate opened.").wait_for(timeout=WAIT_MS)
        assert page.locator("li.entry").count() > before
        page.locator("section.head .status", has_text="stopped by waiting_for_user").wait_for(timeout=WAIT_MS)
        assert "opened" in page.locator("li.kind-tool_result").inner_text()
        count = page.locator(".entry-count")
        page.wait_for_function(
            "n => document.querySelector('.entry-count').textContent === String(n)",
            arg=page.locator("li.entry").count(),
            timeout=WAIT_MS,
        )
        assert int(count.inner_text()) == page.locator("li.entry").count() > before
    finally:
        process.wait(timeout=60)


def test_the_exported_page_works_from_a_file_with_the_network_off(browser: Any, runs: Path, address: str) -> None:
    target = runs / "lead1.html"
    assert cli("export", "lead1", "-o", str(target), "--store", "runs.db", cwd=runs).returncode == 0
    context = browser.new_context(offline=True, viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    context.on("request", lambda request: requests.append(request.url))
    context.route("http://**/*", lambda route: route.abort())
    context.route("https://**/*", lambda route: route.abort())
    offline = context.new_page()
    offline.set_default_timeout(WAIT_MS)
    offline.goto(target.as_uri())
    main = offline.locator("main.run").first
    assert main.locator("h1").inner_text() == "lead1"
    assert main.locator(".status").first.inner_text() == "finished"
    assert "context compacted" in main.inner_text()
    assert sorted(main.locator("li.kind-tool_result .badge").all_inner_texts()) == ["denied", "done", "done", "error"]
    assert offline.locator("main.run").count() == 2  # the lead and its subagent
    offline.locator("li.kind-tool_result", has_text="scout(").locator(".links a").first.click()
    assert offline.url.startswith(target.as_uri() + "#run-")
    assert [url for url in requests if not url.startswith("file://")] == []

    online = browser.new_page()
    online.goto(address + "runs/lead1")
    assert online.locator("li.entry").count() == main.locator("li.entry").count()
    online.close()
    offline.goto(target.as_uri())
    shot(offline, "export-offline.png")
    context.close()


def test_a_damaged_run_is_listed_with_the_reason_and_its_page_says_so(page: Any, tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    assert cli("run", "cli_agents:calc", "hi", "--id", "ok1", "--store", str(folder), cwd=tmp_path).returncode == 0
    assert cli("run", "cli_agents:calc", "hi", "--id", "bad1", "--store", str(folder), cwd=tmp_path).returncode == 0
    log = folder / "bad1" / "log.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines()
    log.write_text("\n".join([lines[0], "not json", *lines[2:]]) + "\n", encoding="utf-8")
    with viewer(str(folder), tmp_path) as found:
        page.goto(found)
        assert page.locator('tr[data-id="bad1"] .status').inner_text().startswith("cannot load: ")
        assert page.locator('tr[data-id="ok1"] .status').inner_text() == "stopped by waiting_for_user"
        status = page.locator('tr[data-id="bad1"] .status').bounding_box()
        cell = page.locator('tr[data-id="bad1"] td.state').bounding_box()
        after = page.locator('tr[data-id="bad1"] td.num').nth(1).bounding_box()
        assert status["x"] + status["width"] <= cell["x"] + cell["width"] + 1  # a long status wraps in its cell
        assert status["x"] + status["width"] <= after["x"]  # and never covers the next column
        response = page.goto(found + "runs/bad1")
        assert response.status == 500
        assert page.locator("h1").inner_text() == "The store cannot be read"
        assert "damaged" in page.locator("main").inner_text()
        assert page.goto(found + "runs/nothing-here").status == 404


def test_the_viewer_shows_the_demo_run(page: Any, tmp_path: Path) -> None:
    demo_env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEMO_MODEL")
    }
    db = tmp_path / "runs.db"
    made = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--db", str(db)],
        cwd=tmp_path, env=demo_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    with viewer(str(db), tmp_path) as found:
        page.goto(found)
        assert page.locator("tr.run-row").count() == 1
        page.locator("tr.run-row td.id a").click()
        page.wait_for_url("**/runs/*")
        assert "How many lines does README.md have" in page.locator("section.head").inner_text()
        timeline = page.locator("ol.timeline").inner_text()
        assert 'count_lines(path="README.md")' in timeline and "list_examples()" in timeline
        assert "The examples are:" in page.locator("section.head .answer").inner_text()
        shot(page, "demo-run.png")


def test_the_waterfall_shows_requests_tool_calls_and_nested_subagents_to_the_millisecond(
    page: Any, address: str
) -> None:
    page.goto(address + "runs/lead1")
    chart = page.locator("svg.waterfall")
    rows = chart.locator("g.span")
    labels = rows.locator(".span-label").all_text_contents()
    assert labels[0] == "request to fake" and labels[-1] == "request to fake"
    assert 'write_note(title="Findings")' in labels and 'fetch_page(url="http://example.invalid")' in labels
    assert not any(label.startswith("rm(") for label in labels)  # refused: it never ran
    scout = labels.index('scout(prompt="List the open issues")')
    assert rows.nth(scout + 1).get_attribute("class") == "span depth-1"  # the subagent's rows, nested under it
    assert labels[scout + 2] == 'list_issues(state="open")'
    times = rows.locator(".span-time").all_text_contents()
    assert times and all(re.fullmatch(r"\d+ ms|\d+\.\d{3} s", text) for text in times)
    boxes = [rows.nth(i).locator("rect").bounding_box() for i in (scout, scout + 1)]
    assert boxes[1]["x"] >= boxes[0]["x"] - 1  # the subagent starts inside its call...
    assert boxes[1]["x"] + boxes[1]["width"] <= boxes[0]["x"] + boxes[0]["width"] + 1  # ...and ends before it ends
    chart.scroll_into_view_if_needed()
    shot(page, "waterfall.png")
    rows.nth(labels.index('write_note(title="Findings")')).locator("a").click()
    page.wait_for_function("location.hash.startsWith('#lead1-e')", timeout=WAIT_MS)
    assert "write_note" in page.locator("li.entry:target").inner_text()
    rows.nth(scout + 2).locator("a").click()
    page.wait_for_url("**/runs/*#*-e*")
    assert 'list_issues(state="open")' in page.locator("li.entry:target").inner_text()


def test_the_runs_list_searches_the_content_filters_by_status_and_sorts_by_cost_turns_and_status(
    page: Any, address: str
) -> None:
    page.goto(address)
    rows = {row_id: page.locator(f'tr[data-id="{row_id}"]') for row_id in row_ids(page)}
    child = next(row_id for row_id in rows if row_id not in ("lead1", "r1", "xss1", "b1", "p1", "live1"))
    page.fill("input[name=q]", "Connection Refused")  # only in the error text of lead1's fetch_page result
    page.press("input[name=q]", "Enter")
    page.wait_for_url("**q=Connection+Refused**")
    assert row_ids(page) == ["lead1"]
    page.goto(address + "?q=" + "%231 crash on start")  # a tool result of the scout subagent only
    assert row_ids(page) == [child]
    page.goto(address + "?q=title%3D%22Findings")  # in tool-call arguments, quotes included
    assert row_ids(page) == ["lead1"]
    page.goto(address)
    page.select_option("select[name=status]", "error")
    page.click("form.search button")
    page.wait_for_url("**status=error**")
    assert row_ids(page) == ["b1"]
    page.fill("input[name=q]", "break")
    page.click("form.search button")
    page.wait_for_url("**q=break**")
    assert row_ids(page) == ["b1"] and page.locator("select[name=status]").input_value() == "error"
    page.goto(address)
    agents = page.locator("select[name=agent] option").all_inner_texts()
    assert {"any agent", "lead", "scout", "calc", "broken"} <= set(agents)
    page.select_option("select[name=agent]", "scout")
    page.click("form.search button")
    page.wait_for_url("**agent=scout**")
    assert row_ids(page) == [child]
    models = page.locator("select[name=model] option").all_inner_texts()
    assert models[0] == "any model" and len(models) >= 2
    page.goto(address + "?since=2999-01-01")
    assert row_ids(page) == []
    page.goto(address + "?since=2000-01-01&agent=lead")
    assert row_ids(page) == ["lead1"]
    page.goto(address + "?q=add&status=stopped&since=2000-01-01")
    shot(page, "search-and-filters.png")
    page.goto(address + "?q=zzz-nothing&status=finished")
    assert row_ids(page) == [] and "no runs" in page.locator("tbody").inner_text()

    page.goto(address)
    page.click("#sort-cost")
    page.wait_for_url("**sort=cost**")
    costs = [text.strip() for text in page.locator("tr.run-row td.num:nth-child(6)").all_inner_texts()]
    known = [float(text[1:]) for text in costs if text != "-"]
    assert known == sorted(known, reverse=True) and row_ids(page)[0] == "lead1"
    assert costs[len(known) :] == ["-"] * (len(costs) - len(known))  # unknown costs last
    page.click("#sort-turns")
    page.wait_for_url("**sort=turns**")
    turns = [int(text) for text in page.locator("tr.run-row td.num:nth-child(3)").all_inner_texts()]
    assert turns == sorted(turns, reverse=True)
    page.click("#sort-status")
    page.wait_for_url("**sort=status**")
    statuses = page.locator("tr.run-row .status").all_inner_texts()
    assert statuses == sorted(statuses)


@pytest.mark.parametrize("kind", ["sqlite", "file"])
def test_the_runs_list_shows_a_page_of_100_runs_and_pages_through_the_rest(
    page: Any, runs: Path, tmp_path: Path, kind: str
) -> None:
    source = SQLiteStore(runs / "runs.db")
    record = source.read("r1")
    assert record is not None
    target = str(tmp_path / "many.db") if kind == "sqlite" else str(tmp_path / "many")
    from alpineagents.store import FileStore

    many = SQLiteStore(target) if kind == "sqlite" else FileStore(target)
    for number in range(130):  # the same run under 130 ids; every 3rd one holds a word of its own
        entries = [dict(entry) for entry in record.entries]
        if number % 3 == 0:
            entries[0] = {**entries[0], "content": {**entries[0]["content"], "extra": f"marker{number}"}}
        many.write(f"m{number:03d}", entries, dict(record.info), create=True)
    with viewer(target, tmp_path) as address:
        page.goto(address)
        first = row_ids(page)
        assert len(first) == 100 and "1–100 of 130 found" in page.locator(".count").inner_text()
        assert page.locator("#page-prev").count() == 0
        page.click("#page-next")
        page.wait_for_url("**page=2**")
        second = row_ids(page)
        assert len(second) == 30 and not set(first) & set(second) and len(set(first) | set(second)) == 130
        assert page.locator("#page-next").count() == 0 and "101–130 of 130" in page.locator(".count").inner_text()
        shot(page, "runs-list-pages.png", full=True)
        page.click("#page-prev")
        page.wait_for_url("**page=1**")
        assert row_ids(page) == first
        page.goto(address + "?q=MARKER&sort=updated_asc")  # the search and the order stay as the pages turn
        assert row_ids(page) == [
            f"m{number:03d}" for number in reversed(range(0, 130, 3))
        ]  # same time: by id, reversed
        assert page.locator("nav.pages").count() == 0
