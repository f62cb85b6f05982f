"""The one rule for taking credentials out of a text the library keeps: which values count as secrets, and how
they are replaced.

A text that reaches a store, a log, a trace or a page (an adapter's error, a recorded system prompt, the stack of
a recorded error, a cassette) must hold no credential. The credentials known are those a caller hands over (the
key an adapter was given, an MCP server's headers) and the values of the environment variables whose name says
they hold one (`*_API_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`). A value shorter than
`MIN_SECRET_LENGTH` characters is never treated as a secret (a placeholder key such as "k" would blank every k).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "environment_secrets",
    "is_secret_name",
    "known_by",
    "redact",
    "usable_secrets",
]

REDACTED = "[REDACTED]"
"""What a secret is replaced with."""

MIN_SECRET_LENGTH = 8
"""Shorter values are not treated as secrets."""


def is_secret_name(name: str) -> bool:
    """Whether an environment variable named `name` holds a secret: its name, in any case, contains KEY, TOKEN,
    SECRET, PASSW(OR)D or CREDENTIAL. (Plain `in` tests: a case-blind regex took four times as long, and a State's
    first request reads the whole environment.)"""
    upper = name.upper()
    return "KEY" in upper or "TOKEN" in upper or "SECRET" in upper or "PASSW" in upper or "CREDENTIAL" in upper


def environment_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment variables whose name says they hold a secret, by name (values long enough to count)."""
    found = os.environ if environ is None else environ
    named = [name for name in found if is_secret_name(name)]  # only these values are read (and decoded)
    return {name: value for name in named if len(value := found[name]) >= MIN_SECRET_LENGTH}


def usable_secrets(secrets: Iterable[str | None]) -> list[str]:
    """The distinct secrets long enough to redact, longest first (so a key containing another is caught whole)."""
    unique = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH}
    return sorted(unique, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every occurrence of each secret replaced by `REDACTED`."""
    for secret in usable_secrets(secrets):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def known_by(model: object) -> list[str | None]:
    """The credentials a model knows of: an adapter's key and its clients' keys (its ``_known_secrets()``); none for
    a model that has no such method, or whose method fails."""
    known = getattr(model, "_known_secrets", None)
    try:
        found = known() if callable(known) else None
    except Exception:  # noqa: BLE001 - a model that cannot say has none to add
        return []
    return [item for item in found if item is None or isinstance(item, str)] if isinstance(found, list | tuple) else []
