"""The real headless browser of the page tests: Playwright driving Debian's chromium at /usr/bin/chromium.

`conftest.py` registers the `browser` (one per test module) and `page` fixtures for every module. A module that
drives the browser calls `needs_chromium()` first: without chromium its tests are skipped, except in CI (the CI
variable is set), where they must run. Screenshots go to a temporary folder, or to docs/screenshots/ with
`ALPINEAGENTS_SCREENSHOTS=1` (how the docs' pictures are made).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["CHROMIUM", "ROOT", "SHOTS", "WAIT_MS", "browser", "needs_chromium", "page", "shot"]

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[2]
SHOTS = (
    ROOT / "docs" / "screenshots"
    if os.environ.get("ALPINEAGENTS_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / f"alpineagents-screenshots-{os.getpid()}"
)
WAIT_MS = 20_000
"""How long a page test waits for anything (milliseconds)."""


def needs_chromium() -> None:
    """Skip the calling module when chromium is not installed, unless in CI."""
    if not os.path.exists(CHROMIUM) and not os.environ.get("CI"):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium, one per test module."""
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A 1280×900 page whose dialogs (alert, confirm) are recorded in `page.dialogs` and dismissed."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    opened.dialogs = []

    def on_dialog(dialog: Any) -> None:
        opened.dialogs.append(dialog.message)
        dialog.dismiss()

    opened.on("dialog", on_dialog)
    yield opened
    context.close()


def shot(page: Any, name: str, *, full: bool = False) -> None:
    """Save a screenshot of `page` as `name` in the screenshots folder."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=full)
