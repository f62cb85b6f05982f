"""Keeping credentials out of error texts: the one redaction rule every adapter applies to the errors it raises.

A provider or a proxy may echo the API key in an error body (`Incorrect API key provided: sk-...`). The text of
an adapter's error goes into the State's `error` entry and so into a store, a log or a page, where a key must
never be written. Every secret the adapter knows of is replaced by `REDACTED` in the error it raises and in the
SDK error kept as its `__cause__`: the key it was configured with, the keys of the SDK clients it made, and every
credential-bearing header (`Authorization`, `x-api-key`, `api-key`, `x-goog-api-key`, proxy authorization) of the HTTP request that
failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

__all__ = ["REDACTED", "MIN_SECRET_LENGTH", "request_secrets", "redact", "redacted_error"]

REDACTED = "[REDACTED]"
"""What a secret is replaced with."""

MIN_SECRET_LENGTH = 8
"""Shorter values are not treated as secrets (a placeholder key such as "k" would otherwise blank every k)."""

_SECRET_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key")
_SCHEMES = ("bearer ", "basic ", "token ")

_E = TypeVar("_E", bound=BaseException)


def _header_secret(value: str) -> str:
    """The credential in a header value, without its scheme word (`Bearer sk-...` gives `sk-...`)."""
    lowered = value.lower()
    for scheme in _SCHEMES:
        if lowered.startswith(scheme):
            return value[len(scheme) :].strip()
    return value.strip()


def request_secrets(error: BaseException) -> list[str]:
    """The credentials in the headers of the HTTP request behind `error` (an SDK error carries its request, or a
    response holding it); none when there is no such request."""
    headers = None
    for owner in (error, getattr(error, "response", None)):
        try:  # an httpx error raises RuntimeError when it was made without its request
            headers = getattr(getattr(owner, "request", None), "headers", None)
        except RuntimeError:
            continue
        if headers is not None:
            break
    if headers is None:
        return []
    found: list[str] = []
    for name in _SECRET_HEADERS:
        try:
            value = headers.get(name)
        except Exception:  # noqa: BLE001 - a header view we cannot read holds nothing we can find
            return found
        if isinstance(value, str) and value:
            found.append(_header_secret(value))
    return found


def _usable(secrets: Iterable[str | None]) -> list[str]:
    """The distinct secrets long enough to redact, longest first (so a key containing another is caught whole)."""
    unique = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH}
    return sorted(unique, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every occurrence of each secret replaced by `REDACTED`."""
    for secret in _usable(secrets):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _redact_value(value: object, secrets: list[str]) -> object:
    """A decoded JSON value (an error body) with the secrets taken out of every string in it."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {key: _redact_value(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_value(item, secrets) for item in value]
    return value


def _scrub_in_place(error: BaseException, secrets: list[str]) -> None:
    """Redact what an SDK exception shows (`args`, and its `message` and `body` attributes) in place."""
    try:
        error.args = tuple(redact(a, secrets) if isinstance(a, str) else a for a in error.args)
        for name in ("message", "body"):
            value = getattr(error, name, None)
            if value is not None:
                setattr(error, name, _redact_value(value, secrets))
    except (AttributeError, TypeError):  # a read-only exception type keeps its text
        pass


def redacted_error(wrapped: _E, cause: BaseException | None, known: Iterable[str | None]) -> _E:
    """`wrapped` (an adapter's error about to be raised from `cause`) with the secrets taken out of its text and of
    `cause`'s: the `known` ones (configured keys, the clients' keys) and those of `cause`'s request headers.

    Returns `wrapped` itself when its text holds none of them, else an exception of the same type with the
    redacted text.
    """
    secrets = _usable([*known, *(request_secrets(cause) if cause is not None else ())])
    if not secrets:
        return wrapped
    if cause is not None:
        _scrub_in_place(cause, secrets)
    text = str(wrapped)
    clean = redact(text, secrets)
    if clean == text:
        return wrapped
    return type(wrapped)(clean)
