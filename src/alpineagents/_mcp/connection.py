"""One connection to an MCP server, living on the one background event loop that every connection shares.

The MCP SDK is imported only inside the connection task, never at import time. Each connection is opened and
closed by one task on that loop (the SDK enters and leaves a session in the same task). Sync callers wait for the
loop in short steps so that Ctrl+C gets through; async callers await a wrapped future, and cancelling them cancels
only what they waited for.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import os
import shlex
import shutil
import sys
import threading
import time
import weakref
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

from alpineagents._install import install_hint
from alpineagents.errors import MCPConnectionError, fix_message
from alpineagents.models._redact import redact

if TYPE_CHECKING:
    from mcp import Client  # the SDK: imported for real only inside the connection task
    from mcp_types import CallToolResult, Tool

    from alpineagents.mcp_tools import MCP  # only for the types: mcp_tools imports this module

__all__ = [
    "FORKED",
    "Connection",
    "background_loop",
    "describe",
    "is_transport_error",
    "not_connected",
    "scrubbed",
    "secrets_of",
    "submit",
    "wait_async",
    "wait_sync",
]

T = TypeVar("T")

_LOOP_LOCK = threading.Lock()
_LOOP: asyncio.AbstractEventLoop | None = None
_OPEN: weakref.WeakSet[Connection] = weakref.WeakSet()
"""The connections of this process that may still hold a session (so that a forked child can disown them)."""

FORKED = "the process was forked, and a connection belongs to the process that opened it"
"""Why a connection inherited by a forked child is lost."""


def _after_fork_in_child() -> None:
    """A forked child has none of the parent's threads: it starts its own background loop when it needs one, and
    the connections it inherited are lost (their sessions live on the parent's loop)."""
    global _LOOP, _LOOP_LOCK
    _LOOP = None
    _LOOP_LOCK = threading.Lock()
    for conn in list(_OPEN):
        conn.disown()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


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


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run `coro` on the background loop."""
    return asyncio.run_coroutine_threadsafe(coro, background_loop())


def wait_sync(future: concurrent.futures.Future[T]) -> T:
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


async def wait_async(future: concurrent.futures.Future[T]) -> T:
    """Await `future` from another event loop; cancelling the caller cancels it."""
    return await asyncio.wrap_future(future)


def _innermost(error: BaseException) -> BaseException:
    """For an exception group, its first sub-exception, repeatedly; any other exception as is."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


async def _list_tools(client: Client) -> list[Tool]:
    """Every tool of the server, following the pagination cursors until none is returned.

    Raises:
        ValueError: The server sent a cursor it had sent before (following it would never end).
    """
    tools: list[Tool] = []
    cursor = None
    seen: set[str] = set()
    while True:
        listed = await client.list_tools(cursor=cursor)
        tools.extend(listed.tools)
        cursor = listed.next_cursor
        if not cursor:
            return tools
        if cursor in seen:
            raise ValueError(f"the server sent the tool-list cursor {cursor!r} twice")
        seen.add(cursor)


def secrets_of(server: MCP) -> list[str]:
    """What a server's settings may hold that an error text must never show (error texts reach the State's
    history and so the store): the user name, password and query values of its url, the values of its headers
    (also without a scheme word such as ``Bearer``) and of its env."""
    found: list[str] = []
    if server.url:
        try:
            parts = urlsplit(server.url)
            found += [parts.username or "", parts.password or ""]
            found += [value for _, value in parse_qsl(parts.query)]
        except ValueError:  # a url the SDK will refuse anyway
            pass
    for value in (server.headers or {}).values():
        found += [value, *value.split()[-1:]]
    found += list((server.env or {}).values())
    return found


def scrubbed(server: MCP, text: str) -> str:
    """``text`` with every secret of the server's settings replaced (see ``secrets_of``)."""
    return redact(text, secrets_of(server))


def describe(error: BaseException) -> str:
    """How an exception is shown in MCP error texts: for a group its first sub-exception (repeatedly), then
    `Type: message`, or just `Type` when the message is empty."""
    error = _innermost(error)
    message = str(error)
    name = type(error).__name__
    return f"{name}: {message}" if message else name


def is_transport_error(error: BaseException) -> bool:
    """True when `error` means the connection broke: the SDK's connection-closed error, an OS or EOF error, a
    closed, broken or ended stream, or an HTTP transport error."""
    error = _innermost(error)
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


async def _target(server: MCP, stack: AsyncExitStack) -> Any:
    """What the SDK client connects to: the `server` object as is, a bare `url`, an HTTP client carrying the
    `headers` (closed by `stack`), or stdio parameters for a `command`."""
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
    if os.name != "posix":
        return StdioServerParameters(command=words[0], args=words[1:], env=server.env, cwd=server.cwd)
    _check_command(words[0], server)
    # Through the launcher, so that the server dies with this process (see _mcp/launcher.py).
    launcher = [sys.executable, "-I", "-S", _LAUNCHER, str(os.getpid()), *words]
    return StdioServerParameters(command=launcher[0], args=launcher[1:], env=server.env, cwd=server.cwd)


_LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher.py")


def _check_command(command: str, server: MCP) -> None:
    """The error starting `command` directly would give (a missing or not executable program), raised here: the
    launcher would only exit with it.

    Raises:
        FileNotFoundError: No such program on the server's PATH (or at its path).
        PermissionError: The file is not executable.
    """
    path = (server.env or {}).get("PATH", os.environ.get("PATH", os.defpath))
    if os.sep in command:
        found = os.path.join(server.cwd or ".", command)
        if not os.path.isfile(found):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
        if not os.access(found, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), command)
    elif shutil.which(command, path=path) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)


def not_connected(server: MCP, lost: BaseException | None) -> MCPConnectionError:
    """The error of a call made while `server` has no open session (naming the loss, if it was lost)."""
    problem = f"MCP server {server.name!r} is not connected"
    if lost is not None:
        problem += f" (connection lost: {describe(lost)})"
    error = MCPConnectionError(
        fix_message(
            scrubbed(server, problem),
            "A lost connection is opened again by the next run (or the next with agent:) after this one ends. "
            "Tools of an MCP server work inside agent.run(), or inside with agent: / async with agent:",
        )
    )
    error.__cause__ = lost
    return error


class Connection:
    """One open (or opening) session to one MCP server; `client` is the SDK session once ready."""

    def __init__(self, server: MCP) -> None:
        self.server = server
        self.client: Client | None = None
        self.lost: BaseException | None = None
        self.ready: concurrent.futures.Future[list[Tool]] = concurrent.futures.Future()
        self._closing: asyncio.Event | None = None
        self._running: asyncio.Task[Any] | None = None
        self._disowned = False
        self._task: concurrent.futures.Future[None] = submit(self._serve())
        _OPEN.add(self)

    async def _serve(self) -> None:
        """The connection's one task: open the session, list the tools, keep it open until closed or lost."""
        self._closing = asyncio.Event()
        self._running = asyncio.current_task()
        try:
            async with AsyncExitStack() as stack:
                client, tools = await self._open(stack)
                self.client = client
                if not self.ready.done():
                    self.ready.set_result(tools)
                await self._closing.wait()
        except BaseException as error:
            if not self.ready.done():
                self.ready.set_exception(self._could_not_connect(error))
            elif self.lost is None and not self._closing.is_set():
                self.lost = error
        finally:
            self.client = None

    async def _open(self, stack: AsyncExitStack) -> tuple[Client, list[Tool]]:
        """Open an SDK client session (entered on `stack`) and list all the tools, within `timeout` seconds."""
        server = self.server
        try:
            from mcp import Client
        except ImportError as error:
            raise MCPConnectionError(
                fix_message(
                    f"MCP server {server.name!r} needs the mcp package, which is not installed",
                    "install the mcp extra: " + install_hint("mcp"),
                )
            ) from error
        try:
            async with asyncio.timeout(server.timeout):
                client = Client(await _target(server, stack), read_timeout_seconds=server.timeout)
                await stack.enter_async_context(client)
                return client, await _list_tools(client)
        except BaseException as error:
            raise self._could_not_connect(error)  # noqa: B904 - it sets the cause itself

    def _could_not_connect(self, error: BaseException) -> MCPConnectionError:
        """The error a failed connect raises: an `MCPConnectionError` as is (also inside the group that closing
        the session may wrap it in), else one that describes `error` and is caused by it."""
        inner = _innermost(error)
        if isinstance(inner, MCPConnectionError):
            return inner
        server = self.server
        text = f"Could not connect to MCP server {server.name!r} ({server!r}): {describe(error)}"
        wrapped = MCPConnectionError(scrubbed(server, text))
        wrapped.__cause__ = error
        return wrapped

    async def call(self, name: str, args: dict[str, Any]) -> CallToolResult:
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
                text = f"Lost the connection to MCP server {self.server.name!r}: {describe(error)}"
                raise MCPConnectionError(scrubbed(self.server, text)) from error
            raise

    def not_connected(self) -> MCPConnectionError:
        """The error of a call made while this connection has no open session."""
        return not_connected(self.server, self.lost)

    def disown(self) -> None:
        """In a forked child: this connection's session lives on the parent's loop, so it counts as lost, and
        closing it has nothing to stop here."""
        self._disowned = True
        self.client = None
        if self.lost is None:
            self.lost = MCPConnectionError(FORKED)

    def close(self) -> None:
        """Stop the session (or the connect in progress); waits at most 5 seconds, ignores shutdown failures."""
        _OPEN.discard(self)
        if self._disowned:
            return
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
        except KeyboardInterrupt:  # Ctrl+C still gets through
            self._task.cancel()
            raise
