"""MCP servers as tools: creating, picking, connecting, calling, converting results, losing and releasing."""

from __future__ import annotations

import _thread
import asyncio
import base64
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as ServerToolError
from mcp.types import CallToolResult, ImageContent, TextContent

from alpineagents.agent import Agent
from alpineagents.errors import MCPConnectionError, ToolError
from alpineagents.mcp_tools import MCP, SEPARATOR, MCPTool, MCPToolRef, convert_result
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import ErrorEntry, Image, TextBlock, ToolResultEntry
from conftest import results, task

SERVER = str(Path(__file__).parent / "helpers" / "mcp_server.py")


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = (1).to_bytes(4, "big") * 2 + bytes([8, 0, 0, 0, 0])
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\x00")) + chunk(b"IEND", b"")
    )


def _demo() -> MCP:
    server = MCPServer("demo")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def fail(message: str) -> str:
        """Always fails."""
        raise ServerToolError(message)

    @server.tool(name="search-code")
    def search_code(q: str) -> str:
        """Search."""
        return "found " + q

    return MCP(server=server, name="demo")


def _agent(items: list[Any], tools: list[Any]) -> Agent:
    return Agent(FakeModel(items), tools=tools, reporter=None, human=None)


def test_names_and_separator() -> None:
    assert SEPARATOR == "__"
    gh = MCP("npx -y s", name="gh")
    assert gh.search_code == MCPToolRef(gh, "search_code")
    assert hash(gh.x) == hash(gh["x"])
    assert gh.x != MCP("npx -y s", name="gh").x
    assert gh["search-code"].name == "gh__search-code"


def test_mcp_takes_exactly_one_server_and_a_name() -> None:
    with pytest.raises(TypeError, match="exactly one server"):
        MCP(name="x")
    with pytest.raises(TypeError) as info:
        MCP("a", url="u", name="x")
    assert "(got: command, url)" in str(info.value)
    with pytest.raises(ValueError, match="needs name="):
        MCP("npx s")


def test_mcp_names_allow_letters_digits_dash_and_single_underscore() -> None:
    for bad in ("a__b", "_x", "x_", "has space", "", "dot.name", "-x"):
        with pytest.raises(ValueError, match="not allowed"):
            MCP("cmd", name=bad)
    for good in ("a-b", "x-", "a_b_c", "github", "A1"):
        assert MCP("cmd", name=good).name == good


def test_env_needs_a_command_headers_need_a_url_and_commands_are_not_empty() -> None:
    with pytest.raises(TypeError, match="env="):
        MCP(url="https://e/mcp", name="x", env={"A": "1"})
    with pytest.raises(TypeError, match="headers="):
        MCP("cmd", name="x", headers={})
    with pytest.raises(ValueError, match="empty command"):
        MCP("   ", name="x")


def test_repr_and_picked_tool_refs() -> None:
    gh = MCP("npx -y s", name="gh")
    assert repr(gh) == "MCP('npx -y s', name='gh')"
    assert repr(gh.search_code) == "gh.search_code"
    assert gh["a.b c"].name == "gh__a_b_c"
    assert gh.x == gh.x
    with pytest.raises(AttributeError):
        gh._x  # noqa: B018
    assert repr(MCP(url="https://x/mcp", name="lin")) == "MCP('https://x/mcp', name='lin')"


def test_two_servers_with_one_name_are_refused_and_creation_connects_nothing() -> None:
    with pytest.raises(ValueError, match="Two MCP servers are named 'github'"):
        _agent([], [MCP("a", name="github"), MCP("b", name="github")])
    server = MCP("a", name="github")
    agent = _agent([], [server])
    assert server._conn is None
    assert agent._agent_info_now().mcp_servers == ("github",)
    assert agent._mcp_ready is None
    assert agent._mcp_users == 0
    assert "MCP('a', name='github')" in repr(agent)


def test_a_run_connects_calls_and_releases_an_in_process_server() -> None:
    demo = _demo()
    model = FakeModel([[tool_call("demo__add", a=1, b=2), tool_call("demo__fail", message="nope")], "ok"])
    agent = Agent(model, tools=[demo], reporter=None, human=None)
    state = task("go")
    assert agent.run(state) == "ok"
    by_name = {entry.call.name: entry for entry in results(state)}
    add, fail = by_name["demo__add"], by_name["demo__fail"]
    assert (add.content, add.outcome) == ("3", "done")
    assert (fail.content, fail.outcome, fail.is_error) == ("Error executing tool fail: nope", "error", True)
    assert isinstance(fail.error, ToolError)
    assert [spec.name for spec in model.requests[0].tools] == ["demo__add", "demo__fail", "demo__search-code"]
    assert demo._conn is None
    assert agent._mcp_users == 0 and agent._mcp_ready is None


def test_picked_tools_are_the_only_ones_shown() -> None:
    demo = _demo()
    model = FakeModel(["ok"])
    assert Agent(model, tools=[demo.add, demo["search-code"]], reporter=None, human=None).run("go") == "ok"
    assert [spec.name for spec in model.requests[0].tools] == ["demo__add", "demo__search-code"]
    agent = _agent(["ok"], [demo.serch])
    state = task("go")
    with pytest.raises(ValueError, match="has no tool 'serch'"):
        agent.run(state)
    assert isinstance(state.history[-1], ErrorEntry)
    assert demo._conn is None


def test_a_server_tool_named_like_an_own_tool_is_refused_at_connect() -> None:
    @tool(name="demo__add")
    def mine() -> str:
        """Mine."""
        return "x"

    demo = _demo()
    agent = _agent(["ok"], [mine, demo])
    with pytest.raises(ValueError, match="Duplicate tool name 'demo__add'"):
        agent.run("go")
    assert demo._conn is None


def test_missing_required_arguments_are_an_input_error() -> None:
    agent = _agent([tool_call("demo__add", a=1), "ok"], [_demo()])
    state = task("go")
    agent.run(state)
    (entry,) = results(state)
    assert entry.content == "(input error: missing required arguments: b)"
    assert entry.outcome == "input_error"


def test_server_results_are_converted_to_text() -> None:
    png = _png()
    data = base64.b64encode(png).decode()
    text = TextContent(type="text", text="Loaded")
    result = CallToolResult(
        content=[
            text,
            TextContent(type="text", text="in 1.2s"),
            ImageContent(type="image", data=data, mime_type="image/png"),
        ]
    )
    parts = convert_result("demo", result)
    assert parts == ["Loaded\nin 1.2s", Image(png)]
    svg = base64.b64encode(b"<svg/>").decode()
    result = CallToolResult(
        content=[TextContent(type="text", text="Logo"), ImageContent(type="image", data=svg, mime_type="image/svg+xml")]
    )
    assert convert_result("demo", result) == "Logo\n(image image/svg+xml not shown: this image type is not supported)"
    result = CallToolResult(
        content=[
            TextContent(type="text", text="render failed"),
            ImageContent(type="image", data=data, mime_type="image/png"),
        ],
        is_error=True,
    )
    with pytest.raises(ToolError) as info:
        convert_result("demo", result)
    assert str(info.value) == "render failed\n(image/png image)"
    assert convert_result("demo", CallToolResult(content=[])) == "(done)"
    assert convert_result("demo", CallToolResult(content=[], structured_content={"a": "é"})) == '{"a": "é"}'
    with pytest.raises(ToolError) as info:
        convert_result("demo", CallToolResult(content=[], is_error=True))
    assert str(info.value) == "(MCP server 'demo' reported an error without a message)"


def test_an_image_result_becomes_text_and_image_blocks() -> None:
    png = _png()
    server = MCPServer("pics")

    @server.tool()
    def shot() -> list[Any]:
        """A picture."""
        return [
            TextContent(type="text", text="Loaded"),
            TextContent(type="text", text="in 1.2s"),
            ImageContent(type="image", data=base64.b64encode(png).decode(), mime_type="image/png"),
        ]

    agent = _agent([tool_call("pics__shot"), "ok"], [MCP(server=server, name="pics")])
    state = task("go")
    agent.run(state)
    (entry,) = results(state)
    assert entry.content == (TextBlock("Loaded\nin 1.2s"), Image(png))


def test_with_agent_keeps_one_connection_across_runs() -> None:
    demo = _demo()
    seen: list[Any] = []

    @tool
    def look() -> str:
        """Look at the connection."""
        seen.append(demo._conn)
        assert demo._conn is not None and demo._conn.client is not None
        return "ok"

    agent = _agent([tool_call("look"), "a", tool_call("look"), "b"], [look, demo])
    with agent:
        conn = demo._conn
        assert conn is not None and conn.client is not None
        assert "demo__add" in agent.tool_map
        assert isinstance(agent.tool_map["demo__add"], MCPTool)
        agent.run("one")
        agent.run("two")
        assert demo._conn is conn
    assert seen == [conn, conn]
    assert demo._conn is None
    assert "demo__add" not in agent.tool_map
    first = _agent([], [demo])
    second = _agent([], [demo.add])
    with first:
        with second:
            assert second.tool_map["demo__add"] is not first.tool_map["demo__add"]
            shared = demo._conn
        assert demo._conn is shared
    assert demo._conn is None


def test_async_with_and_arun() -> None:
    demo = _demo()
    agent = _agent([tool_call("demo__add", a=2, b=3), "ok"], [demo])

    async def main() -> State:
        state = task("go")
        async with agent:
            assert demo._conn is not None
            assert await agent.arun(state) == "ok"
        return state

    state = asyncio.run(main())
    assert results(state)[0].content == "5"
    assert demo._conn is None


def test_sticky_use_and_think_tools() -> None:
    demo = _demo()
    model = FakeModel(["a", "b"])
    agent = Agent(model, tools=[demo], reporter=None, human=None)
    state = task("go")
    agent.think(state, tools=[demo.add])
    assert [spec.name for spec in model.requests[0].tools] == ["demo__add"]
    assert agent._mcp_users == 1 and demo._conn is not None
    agent.think(state, tools=[demo])
    assert len(model.requests[1].tools) == 3
    agent._mcp_use("release")
    assert demo._conn is None and agent._mcp_users == 0


def test_a_stdio_server_gets_env_and_a_missing_command_cannot_connect() -> None:
    local = MCP(f"{sys.executable} {SERVER}", name="local", env={"GREETING": "hi"})
    agent = _agent([tool_call("local__greeting"), "ok"], [local])
    state = task("go")
    agent.run(state)
    assert results(state)[0].content == "hi"
    assert local._conn is None
    bad = MCP("definitely-not-a-command", name="bad")
    agent = _agent(["ok"], [bad])
    state = task("go")
    with pytest.raises(MCPConnectionError, match="Could not connect to MCP server 'bad'") as info:
        agent.run(state)
    assert str(info.value).startswith(
        "Could not connect to MCP server 'bad' (MCP('definitely-not-a-command', name='bad')): FileNotFoundError"
    )
    assert info.value.__cause__ is not None
    assert isinstance(state.history[-1], ErrorEntry)
    assert bad._conn is None and agent._mcp_users == 0


def test_a_server_that_dies_mid_call_stops_the_run() -> None:
    local = MCP(f"{sys.executable} {SERVER}", name="local")
    agent = _agent([tool_call("local__die"), "never"], [local])
    state = task("go")
    with pytest.raises(MCPConnectionError, match="Lost the connection"):
        agent.run(state)
    assert state.pending_calls == ()
    (entry,) = results(state)
    assert entry.content == "(aborted: MCPConnectionError)"
    assert entry.outcome == "aborted"
    assert local._conn is None


def test_not_connected_call() -> None:
    demo = _demo()
    agent = _agent([], [demo])
    with agent:
        add = agent.tool_map["demo__add"]
    with pytest.raises(MCPConnectionError, match="MCP server 'demo' is not connected"):
        asyncio.run(add.run({"a": 1, "b": 2}, None))


def test_importing_the_package_does_not_import_the_sdk() -> None:
    code = "import sys, alpineagents, alpineagents.mcp_tools; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_tool_map_lookups_before_connecting_name_the_servers() -> None:
    agent = _agent([], [MCP("npx s", name="gh")])
    with pytest.raises(KeyError) as info:
        agent.tool_map["gh__x"]  # noqa: B018
    assert str(info.value).startswith("No tool named 'gh__x'. This Agent's MCP servers (gh) are not connected")


def test_mcptool_members() -> None:
    server = MCPServer("ro")

    @server.tool(annotations={"readOnlyHint": True})  # type: ignore[arg-type]
    def peek() -> str:
        """Peek."""
        return "x"

    ro = MCP(server=server, name="ro")
    agent = _agent([], [ro])
    with agent:
        peek_tool = agent.tool_map["ro__peek"]
    assert isinstance(peek_tool, MCPTool)
    assert repr(peek_tool) == "MCPTool('ro__peek')"
    assert peek_tool.remote_name == "peek" and peek_tool.server is ro
    assert peek_tool.is_async and peek_tool.parallel
    assert (peek_tool.read_only, peek_tool.destructive, peek_tool.idempotent, peek_tool.open_world) == (
        True,
        False,
        True,
        True,
    )
    assert peek_tool.input_schema["type"] == "object"
    with pytest.raises(TypeError, match="is a connected tool of another Agent's MCP server"):
        _agent([], [peek_tool])


# --- releasing a server slow to shut down ----------------------------------------------------------------


class RunEnds(Reporter):
    """Records the `on_run_end` calls."""

    def __init__(self) -> None:
        self.ended: list[BaseException | None] = []

    def on_run_end(self, state: State, error: BaseException | None) -> None:
        self.ended.append(error)


def test_ctrl_c_while_a_server_shuts_down_gets_through(tmp_path: Path) -> None:
    shutting_down = tmp_path / "shutting-down"
    local = MCP(
        f"{sys.executable} {SERVER}", name="local", env={"SLOW_EXIT": "8", "SLOW_EXIT_MARK": str(shutting_down)}
    )
    ends = RunEnds()
    interrupted: list[float] = []

    def last_reply(request: Any) -> str:
        def press_ctrl_c() -> None:
            deadline = time.monotonic() + 10
            while not shutting_down.exists():  # the run has left its loop and waits for the server to shut down
                assert time.monotonic() < deadline, "the server never started to shut down"
                time.sleep(0.01)
            interrupted.append(time.monotonic())
            _thread.interrupt_main()

        threading.Thread(target=press_ctrl_c, daemon=True).start()
        return "done"

    agent = Agent(FakeModel([tool_call("local__add", a=1, b=2), last_reply]), tools=[local], reporter=ends, human=None)
    state = task("go")
    returned: list[Any] = []
    with pytest.raises(KeyboardInterrupt):
        returned.append(agent.run(state))
        time.sleep(15)  # only reached when run() returned: the interrupt must not escape this test
    assert returned == []
    assert time.monotonic() - interrupted[0] < 4.0  # long before the server's 8 s
    assert ends.ended == [None]  # on_run_end first, for a run that ended well
    assert state.answer == "done"
    assert [e.content for e in state.history if isinstance(e, ToolResultEntry)] == ["3"]
    assert local._conn is None and agent._mcp_users == 0


def test_a_server_slow_to_shut_down_is_waited_for_at_most_5_seconds() -> None:
    class LastReply(Reporter):
        at = 0.0

        def on_think_end(self, state: Any, reply: Any) -> None:
            self.at = time.monotonic()  # the last one is the final reply: the run then ends and releases

    local = MCP(f"{sys.executable} {SERVER}", name="local", env={"SLOW_EXIT": "20"})
    last = LastReply()
    agent = Agent(FakeModel([tool_call("local__add", a=1, b=2), "done"]), tools=[local], reporter=last, human=None)
    assert agent.run("go") == "done"
    released = time.monotonic() - last.at
    assert 4.0 < released < 12.0  # the release waited, then gave up after 5 s; the server lingers 20 s
    assert local._conn is None


class Ticker:
    """Ticks on the event loop every 20 ms and records the gaps: a long gap means the loop was blocked."""

    def __init__(self) -> None:
        self.gaps: list[float] = []
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(self.tick())

    async def tick(self) -> None:
        last = time.monotonic()
        while not self.stop.is_set():
            await asyncio.sleep(0.02)
            now = time.monotonic()
            self.gaps.append(now - last)
            last = now

    async def longest_gap(self) -> float:
        self.stop.set()
        await self.task
        return max(self.gaps)


def _slow_exit_agent() -> tuple[MCP, Agent]:
    local = MCP(f"{sys.executable} {SERVER}", name="local", env={"SLOW_EXIT": "3"})  # exits 3 s after stdin ends
    agent = Agent(FakeModel([tool_call("local__add", a=1, b=2), "done"]), tools=[local], reporter=None, human=None)
    return local, agent


def test_arun_waits_for_a_server_shutting_down_without_blocking_the_event_loop() -> None:
    local, agent = _slow_exit_agent()

    async def main() -> tuple[float, float]:
        ticker = Ticker()
        started = time.monotonic()
        assert await agent.arun("go") == "done"
        took = time.monotonic() - started
        return took, await ticker.longest_gap()

    took, gap = asyncio.run(main())
    assert took > 2.5  # the run waited for the server to shut down
    assert gap < 1.5  # ... while the event loop went on (a blocked loop would stall for the whole 3 s)
    assert local._conn is None and agent._mcp_users == 0


def test_async_with_releases_a_slow_server_without_blocking_the_event_loop() -> None:
    local, agent = _slow_exit_agent()

    async def main() -> tuple[float, float]:
        async with agent:
            assert await agent.arun("go") == "done"
            assert local._conn is not None  # the block keeps the server connected after the run
            ticker = Ticker()
            started = time.monotonic()
        took = time.monotonic() - started  # the block's exit released the server
        return took, await ticker.longest_gap()

    took, gap = asyncio.run(main())
    assert took > 2.5
    assert gap < 1.5
    assert local._conn is None and agent._mcp_users == 0


# --- a forked child (multiprocessing's default start method on Linux) -----------------------------------------


def _in_a_forked_child(work: Callable[[], str]) -> str:
    """Run `work` in a forked child and return what it returned (or the exception it raised, as text)."""
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # forking a process that has threads
        pid = os.fork()
    if pid == 0:  # the child never returns into pytest
        try:
            signal.alarm(30)  # a child that hangs ends anyway
            text = work()
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            text = f"{type(error).__name__}: {error}"
        os.write(write, text.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    return text


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_connects_its_own_servers() -> None:
    local = MCP(f"{sys.executable} {SERVER}", name="local", timeout=30)

    def run() -> str:
        return _agent([tool_call("local__add", a=1, b=2), "done"], [local]).run("go")

    assert run() == "done"  # the parent's background loop runs now; the child does not inherit its thread
    assert _in_a_forked_child(run) == "done"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_connection_open_when_the_process_forks_is_lost_in_the_child() -> None:
    local = MCP(f"{sys.executable} {SERVER}", name="local", timeout=30)
    agent = _agent([tool_call("local__add", a=1, b=2), tool_call("local__add", a=2, b=2), "again"], [local])

    def run_inside_then_after() -> str:
        try:
            agent.run("go")
        except MCPConnectionError as error:
            inside = str(error).split("\n")[0]
        agent._mcp_use("release")  # the with block ends in the child too
        return inside + " | " + agent.run("go")  # connects again in the child, and the call works

    with agent:
        text = _in_a_forked_child(run_inside_then_after)
    assert text == (
        "MCP server 'local' is not connected (connection lost: MCPConnectionError: the process was forked, and a "
        "connection belongs to the process that opened it) | again"
    )
    assert local._conn is None


# --- servers that describe themselves badly --------------------------------------------------------------------


def _lowlevel(tools: list[types.Tool], cursor: str | None = None) -> Server:
    """An in-process server that lists `tools` (with `cursor` as the next page's cursor) and answers every call."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools, next_cursor=cursor)

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])

    return Server("odd", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.mark.timeout(30)
def test_a_server_that_repeats_its_tool_list_cursor_cannot_connect() -> None:
    odd = MCP(server=_lowlevel([types.Tool(name="t", input_schema={"type": "object"})], cursor="again"), name="odd")
    agent = _agent(["never"], [odd])
    with pytest.raises(MCPConnectionError) as info:
        agent.run("go")
    assert str(info.value).endswith("ValueError: the server sent the tool-list cursor 'again' twice")
    assert odd._conn is None


def test_a_malformed_required_list_from_a_server_is_left_to_the_server() -> None:
    schema = {"type": "object", "required": [1, "a"]}  # a name that is not a string: only "a" is checked here
    odd = MCP(server=_lowlevel([types.Tool(name="t", input_schema=schema)]), name="odd")
    agent = _agent([tool_call("odd__t", b=1), tool_call("odd__t", a=1), "done"], [odd])
    state = task("go")
    assert agent.run(state) == "done"
    assert [entry.content for entry in results(state)] == ["(input error: missing required arguments: a)", "ran t"]


def test_a_dropped_agent_gives_back_its_sticky_use() -> None:
    local = MCP(f"{sys.executable} {SERVER}", name="local", timeout=30)
    agent = _agent(["thought"], [local])
    state = task("go")
    agent.think(state)  # a sticky use: the Agent stays connected
    assert local._conn is not None
    kept = _agent(["thought"], [local])
    kept.think(task("go"))  # another Agent holds the same server and is kept
    del agent, state
    gc.collect()
    assert local._conn is not None  # still held by the Agent that is kept
    del kept
    gc.collect()
    deadline = time.monotonic() + 10
    while local._conn is not None:  # given back on a thread of its own
        assert time.monotonic() < deadline, "the server of the dropped Agents is still held"
        time.sleep(0.02)
