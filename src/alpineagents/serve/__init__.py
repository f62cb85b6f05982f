"""Serve an Agent over HTTP: web front ends stream its runs (AG-UI, the Vercel AI SDK, or this library's own
events), and other agents call it over MCP or A2A.

Install the extra: `pip install -e '.[serve]'` in the library's clone (and `[mcp]` or `[a2a]` for those servers).

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
DNS rebinding; a page of another origin (not listed in `origins=`) cannot send a request that changes anything;
request bodies over `max_body` bytes are refused. A program that serves many users passes
`authorize(request, state_id)`, which decides for each run whether this request may see or change it.
"""

from __future__ import annotations

import socket

from starlette.types import ASGIApp

from alpineagents.serve.guard import LOOPBACK_HOSTS, MAX_BODY
from alpineagents.serve.http import Authorize, app

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
