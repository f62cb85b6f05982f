"""Serve an Agent over HTTP: web front ends stream its runs (AG-UI, the Vercel AI SDK, or this library's own
events), and other agents call it over MCP or A2A.

Install the extra: `pip install 'alpineagents[serve]'` (and `[mcp]` or `[a2a]` for those servers).

```python
from alpineagents import Agent, FileStore
from alpineagents import serve

agent = Agent("claude-sonnet-5", tools=[...])
app = serve.app(agent, store=FileStore("runs"))       # an ASGI app: mount it, or run it with uvicorn
```

or, with no code: `alpineagents serve myproject.agents:agent --store runs`.

Security: the server listens on 127.0.0.1 unless told otherwise, and any other address needs a bearer token
(`token=`, `--token` or the `ALPINEAGENTS_SERVE_TOKEN` variable): it refuses to start without one. CORS is off
unless `origins=` lists the pages' origins; the Host header must name this machine (or one of `hosts=`), against
DNS rebinding; request bodies over `max_body` bytes are refused. A program that serves many users passes
`authorize(request, state_id)`, which decides for each run whether this request may see or change it.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.routing import BaseRoute
from starlette.types import ASGIApp

from alpineagents.agent import Agent
from alpineagents.serve.guard import LOOPBACK_HOSTS, MAX_BODY
from alpineagents.serve.http import Authorize, create_app
from alpineagents.store import Store

if TYPE_CHECKING:
    from alpineagents.workers import Workers

__all__ = [
    "app",
    "listen",
    "address",
    "run_server",
    "Authorize",
    "TOKEN_ENV",
    "LOOPBACK_HOSTS",
    "MAX_BODY",
    "check_address",
]

TOKEN_ENV = "ALPINEAGENTS_SERVE_TOKEN"
"""The environment variable a token is read from when none is given."""


def app(
    agent: Agent,
    *,
    store: Store | None = None,
    token: str | None = None,
    origins: Iterable[str] = (),
    hosts: Iterable[str] = LOOPBACK_HOSTS,
    max_body: int = MAX_BODY,
    authorize: Authorize | None = None,
    routes: Iterable[BaseRoute] = (),
    workers: Workers | None = None,
) -> Starlette:
    """An ASGI app (Starlette) that runs `agent` and streams its runs.

    Args:
        agent: The Agent every run uses. Its Terminal reporter and human (the defaults) are left out: a server
            has no console.
        store: Where the runs are kept (default: the Agent's store; one of the two is needed).
        token: When given, every request must send `Authorization: Bearer <token>`.
        origins: The origins of web pages allowed to call the API from a browser (CORS); none by default.
        hosts: The host names the server answers to (the Host header); `"*"` for any.
        max_body: The largest request body, in bytes.
        authorize: `authorize(request, state_id) -> bool` (or an awaitable): may this request use that run?
            Refused requests get 403; the runs list shows only the allowed runs.
        routes: Starlette routes of your own, served by the same app before the API's (a page, say); they pass
            the same checks (Host header, token, body size).
        workers: `alpineagents.workers.Workers` whose queue takes the runs (`agent` must be one of its Agents;
            the runs are kept in its store). Streams then follow each run through the store, entry by entry.

    Example of `authorize`, for a program whose users each see their own runs::

        owners: dict[str, str] = {}        # state id -> user (keep it in your database)

        def authorize(request, state_id):
            user = request.headers.get("x-user")            # set by your login proxy
            if user is None:
                return False
            return owners.setdefault(state_id, user) == user  # a new run becomes the user's
    """
    return create_app(
        agent,
        store=store,
        token=token,
        origins=origins,
        hosts=hosts,
        max_body=max_body,
        authorize=authorize,
        routes=routes,
        workers=workers,
    )


def check_address(host: str, token: str | None) -> None:
    """Refuse to listen on an address other than this machine's without a token (a `ValueError` saying how)."""
    if host not in LOOPBACK_HOSTS and not token:
        raise ValueError(
            f"listening on {host} lets other machines run the agent: give a token (--token, or the {TOKEN_ENV} "
            "environment variable) that every request must send as Authorization: Bearer TOKEN"
        )


def listen(host: str, port: int, token: str | None) -> socket.socket:
    """A socket listening on `host:port` (0: any free port), after `check_address`.

    Raises:
        ValueError: `host` is not this machine's and there is no token.
        OSError: The address cannot be listened on.
    """
    check_address(host, token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Each event goes out at once: without this, a small write waits for the client's delayed ACK of the one
    # before (Nagle's algorithm), up to 40 ms (benchmarks/serve.py; the accepted sockets inherit the option).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


def address(sock: socket.socket) -> str:
    """The URL of a listening socket, without a trailing slash."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if sock.family == socket.AF_INET6 else f"http://{host}:{port}"


def run_server(application: ASGIApp, sock: socket.socket) -> None:
    """Serve `application` with uvicorn on a socket of `listen` until Ctrl+C or SIGTERM (the runs going on are
    cancelled and their States saved)."""
    import uvicorn

    config = uvicorn.Config(application, log_level="warning", access_log=False, timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])
