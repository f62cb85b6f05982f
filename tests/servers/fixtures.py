"""Pytest fixtures for the fake provider server (`tests/conftest.py` registers them for every test module)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import alpineagents.models.anthropic as anthropic_adapter
from servers.provider import ProviderServer

_SERVER: ProviderServer | None = None

_CLOUD_VARIABLES = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
)
"""The Gemini and AWS settings the SDKs read from the environment (removed like the others)."""


def _shared() -> ProviderServer:
    global _SERVER
    if _SERVER is None:
        _SERVER = ProviderServer().start()
    return _SERVER


def _clear_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_", "GOOGLE_", "GEMINI_", "AWS_")):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ProviderServer]:
    """The fake provider server on 127.0.0.1, emptied for this test; the output-limit cache is emptied too, and
    the provider credentials and URLs of the environment are removed."""
    shared = _shared()
    shared.reset()
    monkeypatch.setattr(anthropic_adapter, "_OUTPUT_LIMITS", {})
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        *_CLOUD_VARIABLES,
    ):
        monkeypatch.delenv(name, raising=False)
    yield shared
    shared.reset()


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove every provider credential and URL from the environment, and empty the output-limit cache."""
    monkeypatch.setattr(anthropic_adapter, "_OUTPUT_LIMITS", {})
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        *_CLOUD_VARIABLES,
    ):
        monkeypatch.delenv(name, raising=False)
