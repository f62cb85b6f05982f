"""The checks every request passes before a route sees it: the Host header, the page's origin, the bearer token,
the body size.

- **Host** (against DNS rebinding): a web page on another site can make a browser send requests to 127.0.0.1 under
  a name the attacker controls; the browser then sends that name as the Host header. Only the names in `hosts` are
  served (by default those of this machine: `127.0.0.1`, `localhost`, `::1`), with any port.
- **Origin** (against cross-site requests): a web page of another site can make a browser send a form or a
  plain-text POST to 127.0.0.1 without asking first (no CORS preflight), and so start a run or decide a call even
  though it cannot read the answer. A browser names the page's origin in the `Origin` header of every such request:
  a request whose method changes something (any but GET, HEAD, OPTIONS) and that names an origin is served only
  when that origin is the server's own (its host and port are the request's Host header) or one of `origins` (the
  pages allowed by CORS). Programs that are not browsers send no `Origin` and are not concerned.
- **Token**: when the server has one, every request carries `Authorization: Bearer <token>`. The comparison takes
  the same time whatever the text sent, and the token is never written to a log, a response or a stored run.
- **Body size**: a body longer than `max_body` bytes is refused with 413, whether it announces its length or not,
  before it is read into memory.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from alpineagents.serve.errors import ApiError, error_response

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""The names of this machine that a local server answers to."""

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""The methods that change nothing, which a page of any origin may send (it cannot read the answer without CORS)."""

MAX_BODY = 1_000_000
"""The largest request body accepted by default, in bytes (a long conversation of text fits easily)."""


def host_name(header: str) -> str:
    """The name in a Host header, without its port: `[::1]:8000` is `::1`, `Example.com:80` is `example.com`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard:
    """ASGI middleware: refuses a request with a wrong Host header (421), a change sent by a page of another origin
    (403), without the token (401) or with a body over the limit (413), each with a JSON error."""

    def __init__(
        self, app: ASGIApp, *, hosts: Iterable[str], token: str | None, max_body: int, origins: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.hosts = frozenset(name.lower().strip("[]") for name in hosts)
        self.origins = frozenset(origin.lower().rstrip("/") for origin in origins)
        self._token = None if token is None else ("Bearer " + token).encode("utf-8")
        self.max_body = max_body

    def __repr__(self) -> str:  # never shows the token
        return f"Guard(hosts={sorted(self.hosts)}, token={'set' if self._token else 'none'}, max_body={self.max_body})"

    def refusal(self, scope: Scope) -> ApiError | None:
        headers = dict(scope.get("headers") or ())
        if "*" not in self.hosts:
            name = host_name(headers.get(b"host", b"").decode("latin-1"))
            if name not in self.hosts:
                return ApiError(
                    421,
                    "bad_host",
                    "this server does not answer to the host name in the request; start it with --allow-host NAME "
                    "(or hosts=[...]) to serve a name other than 127.0.0.1 and localhost",
                )
        origin = headers.get(b"origin")
        if origin is not None and scope.get("method") not in SAFE_METHODS and not self._same_or_listed(origin, headers):
            return ApiError(
                403,
                "bad_origin",
                "a web page of another origin may not send this request; start the server with --origin URL "
                "(or origins=[...]) to let that page call it",
            )
        if self._token is not None and scope.get("method") != "OPTIONS":
            sent = headers.get(b"authorization", b"")
            if not hmac.compare_digest(sent, self._token):
                return ApiError(
                    401, "unauthorized", "send the server's token as the header Authorization: Bearer TOKEN"
                )
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            return too_large(self.max_body)
        return None

    def _same_or_listed(self, origin: bytes, headers: dict[bytes, bytes]) -> bool:
        """The origin is the server's own (the same host and port as the Host header) or one of `origins`."""
        named = origin.decode("latin-1").strip().lower().rstrip("/")
        if named in self.origins:
            return True
        try:
            netloc = urlsplit(named).netloc
        except ValueError:  # not a URL (e.g. "null", from a sandboxed page or a file)
            return False
        return netloc != "" and netloc == headers.get(b"host", b"").decode("latin-1").strip().lower()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope)
        if refused is not None:
            response = error_response(refused.status, refused.code, refused.message)
            if refused.status == 401:
                response.headers["WWW-Authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        await self.app(scope, _limited(receive, self.max_body), send)


def too_large(limit: int) -> ApiError:
    return ApiError(413, "body_too_large", f"the request body is over the limit of {limit} bytes: send less")


def _limited(receive: Receive, limit: int) -> Receive:
    """`receive` that raises `ApiError(413)` once the body read so far is longer than `limit`."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise too_large(limit)
        return message

    return wrapped
