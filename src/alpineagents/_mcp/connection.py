"""One connection to an MCP server, living on the shared background loop (08 §4.5, §4.6, §4.9).

Private: the MCP SDK is imported only inside the connection task, never at import time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import shlex
import threading
import time
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import Any

from alpineagents.errors import MCPConnectionError, fix_message

_LOOP_LOCK = threading.Lock()
_LOOP: asyncio.AbstractEventLoop | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """The one event loop every MCP connection lives on (daemon thread `alpineagents-mcp`), started on first use."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="alpineagents-mcp", daemon=True)
            thread.start()
            _LOOP = loop
        return _LOOP


def submit(coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
    """Run `coro` on the background loop."""
    return asyncio.run_coroutine_threadsafe(coro, background_loop())


def wait_sync(future: concurrent.futures.Future[Any]) -> Any:
    """Wait for `future` in short steps (so Ctrl+C gets through); cancel it when the wait is interrupted."""
    try:
        while True:
            try:
                return future.result(timeout=0.1)
            except concurrent.futures.TimeoutError:
                continue
    except BaseException:
        future.cancel()
        raise


async def wait_async(future: concurrent.futures.Future[Any]) -> Any:
    """Await `future` from another event loop; cancelling the caller cancels it."""
    return await asyncio.wrap_future(future)


def describe(error: BaseException) -> str:
    """The description of an exception (08 §4.6): first sub-exception of a group, then `Type: message`."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    message = str(error)
    name = type(error).__name__
    return f"{name}: {message}" if message else name


def is_transport_error(error: BaseException) -> bool:
    """True when `error` means the connection broke (08 §4.9)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, (OSError, EOFError)):
        return True
    module = type(error).__module__
    name = type(error).__name__
    if module.startswith("anyio") and name in ("ClosedResourceError", "BrokenResourceError", "EndOfStream"):
        return True
    if module.startswith("httpx2"):
        try:
            import httpx2

            if isinstance(error, httpx2.TransportError):
                return True
        except ImportError:  # pragma: no cover
            pass
    if name == "MCPError" and module.startswith("mcp"):
        try:
            from mcp_types.jsonrpc import CONNECTION_CLOSED  # pyright: ignore
        except ImportError:  # pragma: no cover
            CONNECTION_CLOSED = -32000
        return getattr(error, "code", None) == CONNECTION_CLOSED
    return False


async def _target(server: Any, stack: AsyncExitStack) -> Any:
    """Step 2 of 08 §4.6: what the SDK client connects to (an HTTP client for `headers` is closed by `stack`)."""
    if server.server:
        return server.server
    if server.url:
        if not server.headers:
            return server.url
        import httpx2
        from mcp.client.streamable_http import streamable_http_client  # pyright: ignore

        # The timeouts the SDK gives its own client for a bare url (30 s, reading 300 s), plus the headers.
        timeout = httpx2.Timeout(30.0, read=300.0)
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=dict(server.headers), timeout=timeout))
        return streamable_http_client(server.url, http_client=http)  # pyright: ignore
    from mcp import StdioServerParameters

    words = shlex.split(server.command)
    return StdioServerParameters(command=words[0], args=words[1:], env=server.env, cwd=server.cwd)


def not_connected(server: Any, lost: BaseException | None) -> MCPConnectionError:
    """The error of a call made while `server` has no open session (08 §4.9)."""
    problem = f"MCP server {server.name!r} is not connected"
    if lost is not None:
        problem += f" (connection lost: {describe(lost)})"
    error = MCPConnectionError(
        fix_message(
            problem,
            "A lost connection is opened again by the next run (or the next with agent:) after this one ends. "
            "Tools of an MCP server work inside agent.run(), or inside with agent: / async with agent:",
        )
    )
    error.__cause__ = lost
    return error


class Connection:
    """One open (or opening) session to one MCP server; `client` is the SDK session once ready."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.client: Any = None
        self.tools: list[Any] = []
        self.lost: BaseException | None = None
        self.ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._closing: asyncio.Event | None = None
        self._running: asyncio.Task[Any] | None = None
        self._task: concurrent.futures.Future[Any] = submit(self._serve())

    async def _serve(self) -> None:
        self._closing = asyncio.Event()
        self._running = asyncio.current_task()
        server = self.server
        try:
            try:
                from mcp import Client  # noqa: F401
            except ImportError as error:
                raise MCPConnectionError(
                    fix_message(
                        f"MCP server {server.name!r} needs the mcp package, which is not installed",
                        'Install it: pip install "alpineagents[mcp]"',
                    )
                ) from error
            async with AsyncExitStack() as stack:
                try:
                    async with asyncio.timeout(server.timeout):
                        client = Client(await _target(server, stack), read_timeout_seconds=server.timeout)
                        await stack.enter_async_context(client)
                        tools: list[Any] = []
                        cursor = None
                        while True:
                            listed = await client.list_tools(cursor=cursor)
                            tools.extend(listed.tools)
                            cursor = listed.next_cursor
                            if not cursor:
                                break
                except MCPConnectionError:
                    raise
                except BaseException as error:
                    raise MCPConnectionError(
                        f"Could not connect to MCP server {server.name!r} ({server!r}): {describe(error)}"
                    ) from error
                self.tools = tools
                self.client = client
                if not self.ready.done():
                    self.ready.set_result(tools)
                await self._closing.wait()
        except BaseException as error:
            if not self.ready.done():
                wrapped = error
                while isinstance(wrapped, BaseExceptionGroup) and wrapped.exceptions:
                    wrapped = wrapped.exceptions[0]  # closing the session may wrap the error in a group
                if not isinstance(wrapped, MCPConnectionError):
                    wrapped = MCPConnectionError(
                        f"Could not connect to MCP server {server.name!r} ({server!r}): {describe(error)}"
                    )
                    wrapped.__cause__ = error
                self.ready.set_exception(wrapped)
            elif self.lost is None and not (self._closing is not None and self._closing.is_set()):
                self.lost = error
        finally:
            self.client = None

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        """Call one remote tool (on the background loop)."""
        client = self.client
        if client is None:
            raise self.not_connected()
        try:
            return await client.call_tool(name, args)
        except Exception as error:
            if is_transport_error(error):
                self.lost = error
                self.client = None
                raise MCPConnectionError(
                    f"Lost the connection to MCP server {self.server.name!r}: {describe(error)}"
                ) from error
            raise

    def not_connected(self) -> MCPConnectionError:
        """The error of a call made while this connection has no open session."""
        return not_connected(self.server, self.lost)

    def close(self) -> None:
        """Stop the session (or the connect in progress); waits at most 5 seconds, ignores shutdown failures."""
        loop = background_loop()

        def stop() -> None:
            if self._closing is not None and self.ready.done():
                self._closing.set()  # an open session ends in its own task
            elif self._running is not None:
                self._running.cancel()  # a connect in progress is stopped; close() waits for it to unwind
            else:
                self._task.cancel()  # not started yet

        loop.call_soon_threadsafe(stop)
        if threading.current_thread().name == "alpineagents-mcp":
            return  # called on the background loop itself: waiting here would block the shutdown
        deadline = time.monotonic() + 5
        try:
            while not self._task.done():  # short slices, so that Ctrl+C arrives promptly
                left = deadline - time.monotonic()
                if left <= 0:  # slowness never hides what the run did
                    self._task.cancel()
                    return
                concurrent.futures.wait((self._task,), timeout=min(0.1, left))
        except KeyboardInterrupt:  # Ctrl+C still gets through (08 §4.5)
            self._task.cancel()
            raise
