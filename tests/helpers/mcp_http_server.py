"""A small Streamable HTTP MCP server for tests/test_mcp_http.py (started as a subprocess).

It listens on 127.0.0.1 on a free port and prints that port as its first line. The server is at `/mcp`; under
`/slow/mcp` the same server answers every HTTP request only after `SLOW_DELAY` seconds (a server that takes a while
to start).
"""

import asyncio
import socket
import sys
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer

SLOW_DELAY = 0.3

server = MCPServer("web")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
async def slow(seconds: float, mark: str = "") -> str:
    """Sleep, then answer. With `mark`, first create that file: the test then knows the call is under way here."""
    if mark:
        Path(mark).touch()
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of one HTTP header of this request."""
    headers = ctx.headers or {}
    return headers.get(name.lower(), "(no such header)")


def app() -> Any:
    inner = server.streamable_http_app()

    async def outer(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/slow/"):
            await asyncio.sleep(SLOW_DELAY)
            scope = {**scope, "path": scope["path"][len("/slow") :], "raw_path": None}
        await inner(scope, receive, send)

    return outer


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app(), log_level="warning", lifespan="on")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    sys.exit(main())
