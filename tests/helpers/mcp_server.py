"""A small stdio MCP server for tests/test_mcp.py (started as a subprocess)."""

import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def fail(message: str) -> str:
    """Always fails."""
    raise ToolError(message)


@server.tool()
def greeting() -> str:
    """The GREETING variable."""
    return os.environ.get("GREETING", "")


@server.tool()
def sleep_then_mark(mark: str, seconds: float) -> str:
    """Write this server's pid to `mark`, block for `seconds` (time.sleep), then write `mark`.done."""
    import time

    with open(mark, "w") as file:
        file.write(str(os.getpid()))
    time.sleep(seconds)
    with open(mark + ".done", "w") as file:
        file.write("done")
    return "slept"


@server.tool()
async def await_then_mark(mark: str, seconds: float) -> str:
    """The same, waiting with `await anyio.sleep` (the server's event loop stays free)."""
    import anyio

    with open(mark, "w") as file:
        file.write(str(os.getpid()))
    await anyio.sleep(seconds)
    with open(mark + ".done", "w") as file:
        file.write("done")
    return "slept"


@server.tool()
def die() -> str:
    """Make the server exit."""
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
    if os.environ.get("SLOW_EXIT"):  # a server slow to shut down: it ignores SIGTERM and lingers after stdin ends
        import signal
        import time

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if os.environ.get("SLOW_EXIT_MARK"):  # tells the test that the shutdown is under way
            open(os.environ["SLOW_EXIT_MARK"], "w").close()
        time.sleep(float(os.environ["SLOW_EXIT"]))
