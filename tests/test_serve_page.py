"""The chat page of `examples/serve_chat.py` (one static HTML file) in a real headless Chromium, through
Playwright: a message typed, its answer streamed in piece by piece, an email call approved (it runs once) and one
denied (the model reads why). Without chromium the tests are skipped, except in CI, where they must run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alpineagents import FileStore
from alpineagents.testing import tool_call
from alpineagents.types import Request, ToolResultBlock, result_text
from helpers.browser import needs_chromium
from helpers.scriptload import load_script
from helpers.serve_agents import Streaming, reply_forever, serving

needs_chromium()

LONG = " ".join(f"word{i}" for i in range(30))


def reply(request: Request) -> Any:
    """Emails bob when asked to, says what came of it, and answers anything else with thirty words."""
    last = request.messages[-1]
    results = [block for block in last.content if isinstance(block, ToolResultBlock)]
    if results:
        return "Sent it." if result_text(results[0].content).startswith("sent") else "I did not send it."
    if "email" in last.text:
        return tool_call("send_email", to="bob@example.com", subject="Lunch", body="Noon?")
    return LONG


@pytest.fixture
def example() -> Any:
    return load_script("examples", "serve_chat")


@pytest.fixture
def address(example: Any, tmp_path: Path) -> Iterator[str]:
    example.OUTBOX.clear()
    model = Streaming(reply_forever(reply), delay=0.03)
    app = example.make_app(model, store=FileStore(tmp_path / "runs"), reporter=None, human=None)
    with serving(app) as url:
        yield url + "/"


def send(page: Any, text: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def test_a_message_gets_its_answer_streamed_in(page: Any, address: str) -> None:
    page.goto(address)
    page.evaluate(
        """() => { window.seen = new Set();
        new MutationObserver(() => document.querySelectorAll('.assistant').forEach(e => window.seen.add(e.textContent)))
          .observe(document.getElementById('log'), {subtree: true, childList: true, characterData: true}); }"""
    )
    send(page, "hello")
    page.wait_for_selector(".msg.user")
    page.wait_for_function(f"() => [...document.querySelectorAll('.assistant')].some(e => e.textContent === {LONG!r})")
    page.wait_for_function("() => !document.getElementById('prompt').disabled")
    pieces = page.evaluate("() => window.seen.size")
    assert pieces > 5  # the text grew piece by piece
    send(page, "and again")
    page.wait_for_function(
        f"() => document.querySelectorAll('.assistant').length === 2"
        f" && document.querySelectorAll('.assistant')[1].textContent === {LONG!r}"
    )
    assert page.locator(".msg.user").all_inner_texts() == ["hello", "and again"]


def test_an_email_waits_for_approval_on_the_page(page: Any, address: str, example: Any) -> None:
    page.goto(address)
    send(page, "email bob about lunch")
    box = page.wait_for_selector(".approval")
    assert "Send the email 'Lunch' to bob@example.com?" in box.inner_text()
    assert example.OUTBOX == []  # nothing sent before a person decides
    page.click(".approval button.approve")
    page.wait_for_function("() => [...document.querySelectorAll('.assistant')].some(e => e.textContent === 'Sent it.')")
    assert "send_email: sent to bob@example.com (done)" in page.locator("#log").inner_text()
    assert len(example.OUTBOX) == 1
    send(page, "email bob again")
    page.wait_for_selector(".approval:not([data-decided])")
    page.click(".approval:not([data-decided]) button.deny")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.assistant')].some(e => e.textContent === 'I did not send it.')"
    )
    assert "(denied)" in page.locator("#log").inner_text() and len(example.OUTBOX) == 1
