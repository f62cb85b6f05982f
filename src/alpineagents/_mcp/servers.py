"""An Agent's MCP servers: grouping the `tools=` items per server, counting the Agent's users of its servers, and
the checks made once they are connected.

Imported by `alpineagents.agent` only when an Agent has MCP items; never imports the MCP SDK.

The Agent-level count: `run`/`arun`, `with agent:` and a first public call while the Agent has no user each take
one use. The first use holds every server of the Agent and connects them; every other use waits for that same
connect; the last use given back releases the servers (a connect still in progress is stopped).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from alpineagents._mcp.connection import Connection, submit, wait_async, wait_sync
from alpineagents._tokens import estimate_overhead_tokens
from alpineagents.errors import fix_message
from alpineagents.mcp_tools import MCP, MCPTool, MCPToolRef, model_name
from alpineagents.tool import Tool, ToolMap

if TYPE_CHECKING:
    from alpineagents.agent import Agent  # only for the types: the Agent imports this module when it needs it

T = TypeVar("T")

MCPItem = MCP | MCPToolRef | MCPTool
"""What `tools=` may hold for an MCP server: the whole server, one picked tool, or (refused) a connected tool."""

__all__ = ["MCPItem", "group_servers", "acquire", "aacquire", "release", "arelease", "choose"]


def group_servers(items: Iterable[MCPItem]) -> tuple[tuple[MCP, ...], dict[int, set[str] | None]]:
    """Group the MCP items of `tools=` per server: the servers in first-appearance order, and per server (by `id`)
    `None` for all its tools or the set of picked remote names.

    The same server listed several ways merges; two different servers with one name, or a connected tool of
    another Agent, are refused.
    """
    servers: list[MCP] = []
    picks: dict[int, set[str] | None] = {}
    by_name: dict[str, MCP] = {}
    for item in items:
        if isinstance(item, MCPTool):
            server = item.server
            raise TypeError(
                fix_message(
                    f"{item!r} passed in tools= is a connected tool of another Agent's MCP server",
                    "Pass the server, or pick the tool from it",
                    f"tools=[{server.name}]\ntools=[{server.name}[{item.remote_name!r}]]",
                )
            )
        server = item if isinstance(item, MCP) else item.server
        known = by_name.get(server.name)
        if known is not None and known is not server:
            raise ValueError(
                fix_message(
                    f"Two MCP servers are named {server.name!r}: {known!r} and {server!r}",
                    "Give each server its own name=",
                )
            )
        if known is None:
            by_name[server.name] = server
            servers.append(server)
            picks[id(server)] = set()
        chosen = picks[id(server)]
        if isinstance(item, MCP):
            picks[id(server)] = None
        elif chosen is not None and isinstance(item, MCPToolRef):
            chosen.add(item.tool_name)
    return tuple(servers), picks


def _tools_of(agent: Agent, server: MCP, remotes: list[Any]) -> list[MCPTool]:
    """The chosen tools of one connected server, checked: every picked name exists on the server, every
    model-facing name is at most 64 characters and unique within the server, and none equals an own tool's name."""
    picked = agent._mcp_picks[id(server)]
    available = [remote.name for remote in remotes]
    if picked is not None:
        missing = sorted(picked - set(available))
        if missing:
            first = available[0] if available else "tool_name"
            raise ValueError(
                fix_message(
                    f"MCP server {server.name!r} has no tool {', '.join(repr(m) for m in missing)} "
                    f"(its tools: {', '.join(available) or '(none)'})",
                    "Use one of the server's tool names",
                    f"tools=[{server.name}[{first!r}]]",
                )
            )
    chosen = [remote for remote in remotes if picked is None or remote.name in picked]
    seen: dict[str, str] = {}
    for remote in chosen:
        name = model_name(server.name, remote.name)
        if len(name) > 64:
            raise ValueError(
                fix_message(f"MCP tool name {name!r} is longer than 64 characters", "Give the server a shorter name=")
            )
        if name in seen:
            raise ValueError(
                fix_message(
                    f"MCP server {server.name!r} has tools {seen[name]!r} and {remote.name!r}, which both become "
                    f"{name!r}",
                    f"Pick one of them with tools=[{server.name}[...]]",
                )
            )
        seen[name] = remote.name
    tools = [MCPTool(server, remote) for remote in chosen]
    own: dict[str, Tool] = agent._tools
    for tool in tools:
        other = own.get(tool.name)
        if other is not None:
            raise ValueError(
                fix_message(
                    f"Duplicate tool name {tool.name!r}: tool {tool.remote_name!r} of {server!r} and {other!r}",
                    'Rename the other tool with @tool(name="..."), or give the server another name=',
                )
            )
    return tools


async def _connect(agent: Agent, conns: list[Connection]) -> dict[str, Tool]:
    """On the background loop: wait for every server's tool list, then check each server's tools in order."""
    servers: tuple[MCP, ...] = agent._mcp_servers
    # Mirrored: the connections are shared, so stopping this connect must not cancel another Agent's wait.
    lists = await asyncio.gather(*(asyncio.wrap_future(_mirror(conn.ready)) for conn in conns))
    found: dict[str, Tool] = {}
    for server, remotes in zip(servers, lists, strict=True):
        for tool in _tools_of(agent, server, list(remotes)):
            found[tool.name] = tool
    return found


def _install(agent: Agent, found: dict[str, Tool] | None) -> None:
    """Show the MCP tools in `tool_map` and the request specs (or, with `None`, hide them again)."""
    own: dict[str, Tool] = agent._tools
    if found is None:
        tools = own
        agent._tool_map = ToolMap(own, tuple(server.name for server in agent._mcp_servers))
    else:
        tools = {**own, **found}
        agent._tool_map = ToolMap(tools)
    agent._specs = tuple(tool.spec for tool in tools.values())
    agent._overhead = estimate_overhead_tokens(agent._system, agent._specs)


def _take(agent: Agent) -> concurrent.futures.Future[dict[str, Tool]]:
    with agent._mcp_lock:
        agent._mcp_users += 1
        ready = agent._mcp_ready
        if ready is None:
            # The servers are held from the first use to the last (release gives them back).
            conns = [server._hold() for server in agent._mcp_servers]
            ready = submit(_connect(agent, conns))
            agent._mcp_ready = ready
            ready.add_done_callback(lambda done: _on_ready(agent, done))
            _watch(agent)
        return ready


_WATCHED: dict[int, weakref.finalize[Any, Any]] = {}
"""Per Agent holding its servers (by `id`): what gives its holds back if the Agent is dropped while holding."""


def _watch(agent: Agent) -> None:
    """If the Agent is garbage-collected while it still holds its servers (a sticky use of `think` and the like is
    never given back), its holds are given back then, so that a server nobody can use any more is closed."""
    key = id(agent)
    watch = weakref.finalize(agent, _dropped, key, agent._mcp_servers)
    watch.atexit = False  # at exit the process ends, and its servers with it
    _WATCHED[key] = watch


def _unwatch(agent: Agent) -> None:
    watch = _WATCHED.pop(id(agent), None)
    if watch is not None:
        watch.detach()


def _dropped(key: int, servers: tuple[MCP, ...]) -> None:
    # Runs wherever the garbage collector ran: the shutdown (up to 5 s) goes on a thread of its own.
    _WATCHED.pop(key, None)
    try:
        threading.Thread(target=_unhold_all, args=(servers,), name="alpineagents-mcp-release", daemon=True).start()
    except RuntimeError:  # the interpreter is shutting down: the servers end with the process
        pass


def _on_ready(agent: Agent, done: concurrent.futures.Future[dict[str, Tool]]) -> None:
    with agent._mcp_lock:
        if agent._mcp_ready is not done or done.cancelled() or done.exception() is not None:
            return
        _install(agent, done.result())


def acquire(agent: Agent) -> None:
    """Take one Agent-level use and wait until the servers are connected and checked (sync caller)."""
    ready = _take(agent)
    try:
        wait_sync(_mirror(ready))
    except BaseException:
        release(agent)
        raise


async def aacquire(agent: Agent) -> None:
    """The async twin of `acquire`: cancelling the caller gives back only its use."""
    ready = _take(agent)
    try:
        await wait_async(_mirror(ready))
    except BaseException:
        await arelease(agent)  # its use is given back at once; a server's shutdown goes on off the event loop
        raise


def _mirror(future: concurrent.futures.Future[T]) -> concurrent.futures.Future[T]:
    # Each waiter waits on its own future, so cancelling one waiter never cancels the shared connect.
    mine: concurrent.futures.Future[T] = concurrent.futures.Future()

    def copy(done: concurrent.futures.Future[T]) -> None:
        if mine.done():
            return
        if done.cancelled():
            mine.set_exception(concurrent.futures.CancelledError())
        elif done.exception() is not None:
            mine.set_exception(done.exception())  # pyright: ignore[reportArgumentType]
        else:
            mine.set_result(done.result())

    future.add_done_callback(copy)
    return mine


def _give_back(agent: Agent) -> bool:
    """Give back one Agent-level use; True when it was the last one, so the servers are to be given back."""
    with agent._mcp_lock:
        if agent._mcp_users <= 0:
            return False
        agent._mcp_users -= 1
        if agent._mcp_users:
            return False
        ready = agent._mcp_ready
        agent._mcp_ready = None
        if ready is None:
            return False
        _install(agent, None)
        _unwatch(agent)
    if not ready.done():
        ready.cancel()
    return True


def _unhold_all(servers: tuple[MCP, ...]) -> None:
    """Give back one hold on each server; the last holder of a server closes it (up to 5 s)."""
    interrupt: KeyboardInterrupt | None = None
    for server in servers:
        try:
            server._unhold()  # a connection still starting is stopped
        except KeyboardInterrupt as error:  # release the other servers too, then let Ctrl+C through
            interrupt = error
    if interrupt is not None:
        raise interrupt


def release(agent: Agent) -> None:
    """Give back one Agent-level use; the last one releases the servers (a connect in progress is stopped)."""
    if _give_back(agent):
        _unhold_all(agent._mcp_servers)


async def arelease(agent: Agent) -> None:
    """The async twin of `release`: a server's shutdown is waited for on a worker thread, not on the event loop."""
    if _give_back(agent):
        await asyncio.to_thread(_unhold_all, agent._mcp_servers)


def choose(agent: Agent, item: MCPItem) -> list[MCPTool] | None:
    """The connected tools of this Agent that a `think(tools=...)` item stands for, or None when it stands for none."""
    tool_map: ToolMap = agent._tool_map
    if isinstance(item, MCP):
        if item not in agent._mcp_servers:
            return None
        found = [tool for tool in tool_map.values() if isinstance(tool, MCPTool) and tool.server is item]
        return found or None
    if isinstance(item, MCPToolRef):
        tool = tool_map.get(item.name)
        if isinstance(tool, MCPTool) and tool.server is item.server and tool.remote_name == item.tool_name:
            return [tool]
        return None
    if isinstance(item, MCPTool):
        tool = tool_map.get(item.name)
        return [tool] if tool is item else None
    return None
