"""The run page as a trace tool, in a real headless Chromium (Playwright, Debian's chromium): each model request
opens to its exact input, a fork links to the run it came from, and an error shows its stack, collapsed.

The runs are made by the `alpineagents` command with the agents of `tests/helpers/cli_agents.py` in a store of this
module's own, and shown by `alpineagents view` on a free 127.0.0.1 port. With `ALPINEAGENTS_SCREENSHOTS=1` the
picture of a request's full input goes to docs/screenshots/ (see `test_viewer.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.cli_agents import cli, viewer
from test_viewer import WAIT_MS, browser, page, shot  # noqa: F401 - the browser fixtures of the viewer's tests

pytestmark = pytest.mark.usefixtures("record_all")

FORK_AT = 6


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store with the lead run (a system prompt, four tools, several requests, a subagent), a run that
    raised, and a fork of the lead run that has not run since."""
    folder = tmp_path_factory.mktemp("viewer-requests")
    for agent, prompt, state_id in [("lead", "Survey the project", "lead1"), ("broken", "break it", "b1")]:
        made = cli("run", f"cli_agents:{agent}", prompt, "--id", state_id, "--store", "runs.db", cwd=folder)
        assert state_id != "lead1" or made.returncode == 0, made.stderr
    forked = cli("fork", "lead1", "--at", str(FORK_AT), "--id", "fork1", "--store", "runs.db", cwd=folder)
    assert forked.returncode == 0, forked.stderr
    return folder


@pytest.fixture(scope="module")
def address(runs: Path) -> Iterator[str]:
    with viewer(str(runs / "runs.db"), runs) as found:
        yield found


def open_input(entry: Any) -> Any:
    """Open a request's full input and wait until it is shown; returns its body."""
    details = entry.locator("details.request-input")
    details.locator("> summary").click()
    body = details.locator(".input-body")
    body.locator(".sent-messages").wait_for(timeout=WAIT_MS)
    return body


def test_each_request_opens_to_its_system_prompt_messages_as_sent_and_tool_specs(page: Any, address: str) -> None:  # noqa: F811
    page.goto(address + "runs/lead1")
    requests = page.locator("li.kind-model_request")
    assert requests.count() >= 2
    first = requests.first
    summary = first.locator("details.request-input > summary").inner_text()
    assert summary == "full input: 1 message · system prompt (9 characters) · 4 tools"
    assert not first.locator(".input-body").is_visible()  # closed until asked for

    body = open_input(first)
    assert body.locator(".piece.text").first.locator("pre").inner_text() == "You lead."
    assert body.locator(".sent-message").count() == 1
    assert body.locator(".sent-message").inner_text().startswith("USER")  # the role, as the CSS shows it
    assert "Survey the project" in body.locator(".sent-message").inner_text()
    tools = body.locator(".piece.json")
    assert tools.locator(".piece-title").inner_text() == "tool specs: scout, write_note, rm, fetch_page"
    tools.locator("details.fold summary").click()
    assert '"description": "Looks up the project\'s issues."' in tools.locator("pre").last.inner_text()

    page.locator("li.kind-tool_result", has_text="scout(").locator(".links a").click()  # the subagent's run
    page.wait_for_url("**/runs/*")
    last = page.locator("li.kind-model_request").last
    later = open_input(last)  # a later request: the prompt's text is found in the first one
    assert later.locator(".piece.text").first.locator("pre").inner_text() == "You look things up."
    sent = later.locator(".sent-message")
    said = last.locator("details.request-input > summary").inner_text()
    assert said == "full input: 3 messages · system prompt (19 characters) · 1 tool"
    assert [role.lower() for role in sent.locator(".role").all_inner_texts()] == ["user", "assistant", "user"]
    assert sent.nth(1).locator(".piece.call .piece-title").inner_text() == 'list_issues(state="open")'
    result = sent.nth(2).locator(".piece.result")  # the tool's result, as the request sent it back
    assert result.locator(".piece-title").inner_text().startswith("result of list_issues (")
    assert "#1 crash on start" in result.locator("pre").inner_text()
    last.scroll_into_view_if_needed()
    shot(page, "request-input.png")


def test_the_exported_page_holds_each_request_input_without_a_server(browser: Any, runs: Path) -> None:  # noqa: F811
    target = runs / "lead1.html"
    assert cli("export", "lead1", "-o", str(target), "--store", "runs.db", cwd=runs).returncode == 0
    context = browser.new_context(offline=True)
    offline = context.new_page()
    offline.set_default_timeout(WAIT_MS)
    offline.goto(target.as_uri())
    request = offline.locator("main.run").first.locator("li.kind-model_request").first
    request.locator("details.request-input > summary").click()
    body = request.locator(".input-body")
    assert body.locator(".piece.text pre").first.inner_text() == "You lead."
    assert "Survey the project" in body.locator(".sent-message").inner_text()
    context.close()


def test_a_fork_links_to_the_run_it_came_from_and_says_it_has_not_run(page: Any, address: str) -> None:  # noqa: F811
    page.goto(address + "runs/fork1")
    head = page.locator("section.head")
    status = f"forked from lead1 at entry {FORK_AT}, not run since (resume it to go on)"
    assert head.locator(".status").inner_text() == status
    assert "no stop recorded" not in page.locator("main").inner_text()
    assert head.locator(".forked dd").inner_text() == f"lead1 at entry {FORK_AT}"
    event = page.locator("li.kind-model_event")
    assert event.locator(".badge").inner_text() == "fork"
    assert f"forked from lead1 after {FORK_AT} entries" in event.locator(".label").inner_text()
    head.locator(".forked a").click()
    page.wait_for_url("**/runs/lead1")
    assert page.locator("section.head h1").inner_text() == "lead1"
    page.goto(address)
    assert page.locator('tr[data-id="fork1"] .status').inner_text() == status


def test_an_error_shows_its_traceback_collapsed(page: Any, address: str) -> None:  # noqa: F811
    page.goto(address + "runs/b1")
    error = page.locator("li.kind-error")
    assert "RuntimeError: boom" in error.locator(".piece.result pre").inner_text()
    stack = error.locator("details.traceback")
    assert stack.get_attribute("open") is None and not stack.locator("pre").is_visible()
    assert stack.locator("summary").inner_text().startswith("traceback (")
    stack.locator("summary").click()
    text = stack.locator("pre").inner_text()
    assert text.startswith("Traceback (most recent call last):")
    assert (
        "in explode" in text and 'raise RuntimeError("boom")' in text and text.rstrip().endswith("RuntimeError: boom")
    )
