"""Keeping credentials out of the errors an adapter raises: the one redaction rule every adapter applies.

A provider or a proxy may echo the API key in an error body (`Incorrect API key provided: sk-...`), and the SDK's
exception keeps the HTTP exchange that failed. The text of an adapter's error goes into the State's `error` entry
and so into a store, a log or a page; an error reporter may serialise the exception and what it holds. So when an
adapter wraps an SDK failure, `redacted_error` makes sure that no credential it knows of remains in:

- the text of the error it raises;
- every exception of the chain behind it: the SDK exception (kept as `__cause__`, of its own type, as the model
  role promises), the exception being handled (which becomes `__context__`), their own `__cause__`/`__context__`
  chains and the exceptions they hold as attributes. In each, `args` and every attribute that is a string or a
  JSON value (`message`, `body`, ...) are redacted, and an HTTP request or response it holds (`request`,
  `response`, the transport's `_request`) is replaced by a copy holding the same method, URL, status, headers and
  body with the credentials taken out; credential-bearing headers (`Authorization`, `Proxy-Authorization`,
  `x-api-key`, `api-key`, `x-goog-api-key`) are replaced whole. The copy keeps the status code and the provider's
  request id (its response headers); it drops the original's connection state, where the transport keeps the
  request as sent.

The credentials known are the key the adapter was configured with, the keys of the SDK clients it made or was
handed, and the values of the credential-bearing headers of the failed request. Not covered: the stack frames of a
traceback (their local variables hold the adapter, which holds its key by design), and a secret shorter than
`MIN_SECRET_LENGTH` characters.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, TypeVar

from alpineagents._secrets import MIN_SECRET_LENGTH, REDACTED, redact
from alpineagents._secrets import usable_secrets as _usable

__all__ = ["REDACTED", "MIN_SECRET_LENGTH", "request_secrets", "redact", "redacted_error"]

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


def _request_of(owner: object) -> Any:
    """The HTTP request `owner` (an SDK or transport error, or a response) carries, or `None`."""
    for name in ("request", "_request"):
        try:  # an httpx error or response raises RuntimeError when it was made without its request
            request = getattr(owner, name, None)
        except RuntimeError:
            continue
        if request is not None:
            return request
    return None


def request_secrets(error: BaseException) -> list[str]:
    """The credentials in the headers of the HTTP request behind `error` (an SDK error carries its request, or a
    response holding it); none when there is no such request."""
    headers = None
    for owner in (error, getattr(error, "response", None)):
        headers = getattr(_request_of(owner), "headers", None)
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


def _redact_bytes(data: bytes, secrets: list[str]) -> bytes:
    for secret in secrets:
        data = data.replace(secret.encode(), REDACTED.encode())
    return data


def _redact_value(value: object, secrets: list[str]) -> object:
    """A decoded JSON value (an error body) with the secrets taken out of every string in it."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {key: _redact_value(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_value(item, secrets) for item in value]
    return value


# -- the HTTP exchange an SDK error keeps ------------------------------------------------------------------------


def _is_response(value: object) -> bool:
    return hasattr(value, "status_code") and hasattr(value, "headers") and hasattr(value, "stream")


def _is_request(value: object) -> bool:
    return hasattr(value, "method") and hasattr(value, "url") and hasattr(value, "headers")


def _clean_headers(headers: Any, secrets: list[str]) -> list[tuple[str, str]]:
    """The header pairs of an HTTP message, credential-bearing ones replaced whole, the rest redacted."""
    items = headers.multi_items() if hasattr(headers, "multi_items") else headers.items()
    return [(name, REDACTED if name.lower() in _SECRET_HEADERS else redact(value, secrets)) for name, value in items]


def _body(message: Any, secrets: list[str]) -> bytes:
    """The body of an HTTP message, redacted; empty when it was never read (a stream cannot be read again)."""
    try:
        content = message.content
    except Exception:  # noqa: BLE001 - an unread streamed body (the transport's own error) is not kept
        return b""
    return _redact_bytes(content, secrets) if isinstance(content, bytes) else b""


class _Copier:
    """Makes the redacted copies of the HTTP messages of one chain, each original copied once (an SDK error and
    the transport error behind it share their response, and the copies are shared the same way)."""

    def __init__(self, secrets: list[str]) -> None:
        self.secrets = secrets
        self.copies: dict[int, object] = {}

    def request(self, request: Any) -> Any:
        if id(request) not in self.copies:
            self.copies[id(request)] = type(request)(
                request.method,
                redact(str(request.url), self.secrets),
                headers=_clean_headers(request.headers, self.secrets),
                content=_body(request, self.secrets),
            )
        return self.copies[id(request)]

    def response(self, response: Any) -> Any:
        if id(response) not in self.copies:
            request = _request_of(response)
            self.copies[id(response)] = type(response)(
                response.status_code,
                headers=_clean_headers(response.headers, self.secrets),
                content=_body(response, self.secrets),
                request=self.request(request) if request is not None else None,
            )
        return self.copies[id(response)]

    def clean(self, value: object) -> object:
        """`value` (an attribute of an exception) with no secret in it: a copy when it held one."""
        if isinstance(value, (str, dict, list)):
            return _redact_value(value, self.secrets)
        try:
            if _is_response(value):
                return self.response(value)
            if _is_request(value):
                return self.request(value)
        except Exception:  # noqa: BLE001 - a message we cannot copy is dropped rather than kept with its secrets
            return None
        return value


def _chain(*roots: BaseException | None) -> list[BaseException]:
    """Every exception reachable from `roots` through `__cause__`, `__context__` and exception attributes."""
    found: list[BaseException] = []
    seen: set[int] = set()
    todo = [root for root in roots if root is not None]
    while todo:
        error = todo.pop()
        if id(error) in seen:
            continue
        seen.add(id(error))
        found.append(error)
        held = [error.__cause__, error.__context__, *getattr(error, "__dict__", {}).values()]
        todo.extend(item for item in held if isinstance(item, BaseException))
    return found


def _scrub_in_place(error: BaseException, copier: _Copier) -> None:
    """Take the secrets out of what `error` holds: its `args` and its attributes (see the module's docstring)."""
    try:
        error.args = tuple(copier.clean(a) if isinstance(a, str) else a for a in error.args)
    except (AttributeError, TypeError):  # a read-only exception type keeps its args
        pass
    for name, value in list(getattr(error, "__dict__", {}).items()):
        clean = copier.clean(value)
        if clean is not value:
            try:
                setattr(error, name, clean)
            except (AttributeError, TypeError):  # a read-only attribute: nothing else can be done with it
                pass


def redacted_error(wrapped: _E, cause: BaseException | None, known: Iterable[str | None]) -> _E:
    """`wrapped` (an adapter's error about to be raised from `cause`) with the secrets taken out of its text, and
    out of every exception of the chain behind it (`cause`'s, and that of the exception being handled, which becomes
    `wrapped.__context__`): the `known` ones (configured keys, the clients' keys), those of the failed request's
    credential-bearing headers, and those headers themselves. See the module's docstring for what is covered.

    Call it inside the `except` block that handles `cause`. Returns `wrapped` itself when its text holds no secret,
    else an exception of the same type with the redacted text.
    """
    chain = _chain(cause, sys.exc_info()[1])
    secrets = _usable([*known, *(secret for error in chain for secret in request_secrets(error))])
    copier = _Copier(secrets)
    for error in chain:
        _scrub_in_place(error, copier)
    text = str(wrapped)
    clean = redact(text, secrets)
    if clean == text:
        return wrapped
    return type(wrapped)(clean)
