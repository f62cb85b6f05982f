"""MCP servers reached by url= (Streamable HTTP), headers= and timeout=.

A real server (tests/helpers/mcp_http_server.py) runs as a subprocess on 127.0.0.1 for the whole module.
"""

from __future__ import annotations

import _thread
import asyncio
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from alpineagents import MCP, Agent, MCPConnectionError, State, ToolError
from alpineagents.store import FileStore
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import ErrorEntry, ToolResultEntry
from conftest import results, task

SERVER = str(Path(__file__).parent / "helpers" / "mcp_http_server.py")
TIMED_OUT = "(error from MCP server 'web': MCPError: Request 'tools/call' timed out)"


def _start_server(log: Path) -> tuple[subprocess.Popen[str], str]:
    """Start tests/helpers/mcp_http_server.py; return the process and its base URL once the port accepts connections."""
    with log.open("w") as err:
        process = subprocess.Popen([sys.executable, SERVER], stdout=subprocess.PIPE, stderr=err, text=True)
    out = process.stdout
    assert out is not None
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(out.readline()), daemon=True)
    reader.start()
    reader.join(30)
    if not line or not line[0].strip():
        process.kill()
        pytest.fail(f"the MCP HTTP server did not start: {log.read_text()}")
    port = int(line[0])
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                pytest.fail(f"the MCP HTTP server does not accept connections: {log.read_text()}")
            time.sleep(0.05)
    return process, f"http://127.0.0.1:{port}"


def _stop_server(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)
    if process.stdout is not None:
        process.stdout.close()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of the module's MCP HTTP server (`{base}/mcp`, and `{base}/slow/mcp` answering slowly)."""
    process, url = _start_server(tmp_path_factory.mktemp("mcp_http") / "server.log")
    yield url
    _stop_server(process)


class Silent:
    """A server on 127.0.0.1 that accepts one connection, reads what the client sends and never answers."""

    def __init__(self) -> None:
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.settimeout(10)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/mcp"
        self.accepted = threading.Event()
        self.requested = threading.Event()  # the client sent its first bytes and now waits for an answer
        self.closed = threading.Event()  # the client closed the connection
        self.received = b""
        self._conn: socket.socket | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            self._conn, _ = self.listener.accept()
            self.accepted.set()
            self._conn.settimeout(10)
            while chunk := self._conn.recv(65536):
                self.received += chunk
                self.requested.set()
            self.closed.set()
        except OSError:
            pass

    def close(self) -> None:
        self.listener.close()
        if self._conn is not None:
            self._conn.close()
        self._thread.join(1)


@pytest.fixture
def silent() -> Iterator[Silent]:
    """A server that never answers (see `Silent`)."""
    server = Silent()
    yield server
    server.close()


def _free_port() -> int:
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def _wait_until(ready: Callable[[], object], seconds: float = 10) -> None:
    """Wait in short steps until `ready()` is true; fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while not ready():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.01)


async def _await_until(ready: Callable[[], object], seconds: float = 10) -> None:
    """The async twin of `_wait_until`: the event loop goes on between the steps."""
    deadline = time.monotonic() + seconds
    while not ready():
        assert time.monotonic() < deadline, "gave up waiting"
        await asyncio.sleep(0.01)


def _agent(items: list[Any], tools: list[Any]) -> Agent:
    return Agent(FakeModel(items), tools=tools, reporter=None, human=None)


def _results_by_id(state: State) -> dict[str, ToolResultEntry]:
    return {e.call.id: e for e in results(state)}


def _go(agent: Agent, state: State, how: str) -> Any:
    if how == "run":
        return agent.run(state)
    return asyncio.run(agent.arun(state))


# --- url= -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["run", "arun"])
def test_url_tools_are_listed_and_called(base: str, how: str) -> None:
    web = MCP(url=f"{base}/mcp", name="web")
    add, missing = tool_call("web__add", a=1, b=2), tool_call("web__header", name="X-Token")
    model = FakeModel([[add, missing], "ok"])
    agent = Agent(model, tools=[web], reporter=None, human=None)
    state = task("go")
    assert _go(agent, state, how) == "ok"
    assert [spec.name for spec in model.requests[0].tools] == ["web__add", "web__slow", "web__header"]
    results = _results_by_id(state)
    assert (results[add.id].content, results[add.id].outcome) == ("3", "done")
    assert results[missing.id].content == "(no such header)"
    assert web._conn is None
    assert agent._mcp_users == 0 and agent._mcp_ready is None


def test_url_with_agent_keeps_one_connection(base: str) -> None:
    web = MCP(url=f"{base}/mcp", name="web")
    agent = _agent([tool_call("web__add", a=2, b=2), "a", tool_call("web__add", a=3, b=3), "b"], [web])
    first, second = task("go"), task("go")
    with agent:
        conn = web._conn
        assert conn is not None and conn.client is not None
        assert agent.run(first) == "a"
        assert agent.run(second) == "b"
        assert web._conn is conn
    assert web._conn is None
    assert [e.content for e in _results_by_id(first).values()] == ["4"]
    assert [e.content for e in _results_by_id(second).values()] == ["6"]
    loops = [t for t in threading.enumerate() if t.name == "alpineagents-mcp"]
    assert len(loops) == 1 and loops[0].daemon


def test_concurrent_runs_of_one_agent_share_one_connection(base: str) -> None:
    web = MCP(url=f"{base}/mcp", name="web")
    seen: list[Any] = []
    arrived = asyncio.Event()

    @tool
    async def look() -> str:
        """Look at the connection while both runs are inside a tool call."""
        seen.append((web._conn, agent._mcp_users))
        if len(seen) == 2:
            arrived.set()
        await asyncio.wait_for(arrived.wait(), 5)
        return "seen"

    agent = _agent([tool_call("look"), tool_call("look"), "a", "b"], [look, web])

    async def main() -> list[Any]:
        return list(await asyncio.gather(agent.arun("one"), agent.arun("two")))

    assert sorted(asyncio.run(main())) == ["a", "b"]
    (conn, users), (conn2, users2) = seen
    assert conn is conn2 and conn is not None
    assert users == users2 == 2
    assert web._conn is None and agent._mcp_users == 0


# --- headers= -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["run", "arun"])
def test_headers_reach_the_server(base: str, how: str) -> None:
    headers = {"X-Token": "abc", "Authorization": "Bearer t0k"}
    web = MCP(url=f"{base}/mcp", name="web", headers=headers)
    headers["X-Token"] = "changed after MCP()"
    token, auth = tool_call("web__header", name="X-Token"), tool_call("web__header", name="Authorization")
    agent = _agent([[token, auth], "ok"], [web])
    state = task("go")
    assert _go(agent, state, how) == "ok"
    results = _results_by_id(state)
    assert results[token.id].content == "abc"
    assert results[auth.id].content == "Bearer t0k"
    assert web.headers == {"X-Token": "abc", "Authorization": "Bearer t0k"}
    assert web._conn is None


def test_headers_do_not_shorten_a_call_without_timeout(base: str) -> None:
    # timeout=None means no limit: a call longer than an HTTP client's usual 5-second default still returns.
    web = MCP(url=f"{base}/mcp", name="web", headers={"X-Token": "abc"})
    call = tool_call("web__slow", seconds=5.2)
    agent = _agent([call, "ok"], [web])
    state = task("go")
    assert agent.run(state) == "ok"
    assert (_results_by_id(state)[call.id].content, _results_by_id(state)[call.id].outcome) == ("slept 5.2", "done")


def test_url_argument_checks() -> None:
    url = "http://127.0.0.1:9/mcp"
    with pytest.raises(TypeError) as info:
        MCP(url=url, name="x", env={"A": "1"})
    assert str(info.value).startswith("env= is for a server started by a command\nFix: Remove env=")
    with pytest.raises(TypeError) as info:
        MCP(url=url, name="x", env={"A": "1"}, headers={"B": "2"})
    assert str(info.value).startswith("env= is for a server started by a command\n")
    with pytest.raises(TypeError) as info:
        MCP("cmd", name="x", headers={"A": "b"})
    assert str(info.value).startswith("headers= is for a server reached by url=\nFix: Remove headers=")
    with pytest.raises(TypeError) as info:
        MCP(server=object(), name="x", headers={})
    assert str(info.value).startswith("headers= is for a server reached by url=\n")
    with pytest.raises(TypeError) as info:
        MCP(url="", name="x")
    assert str(info.value).startswith("MCP() takes exactly one server: a command, url= or server=\n")
    with pytest.raises(TypeError) as info:
        MCP(url=url, server=object(), name="x")
    assert str(info.value).startswith("MCP() takes exactly one server: a command, url= or server= (got: url, server)\n")
    web = MCP(url=url, name="web", headers={}, timeout=0.5)
    assert (web.url, web.command, web.server, web.env, web.headers, web.timeout) == (url, None, None, None, {}, 0.5)
    assert repr(web) == f"MCP({url!r}, name='web')"
    assert web._conn is None


# --- timeout= -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["run", "arun"])
def test_timeout_of_a_call(base: str, how: str) -> None:
    # The timeout bounds the connect and each call: wide enough for a busy machine, far below the slow call's 60 s.
    web = MCP(url=f"{base}/mcp", name="web", timeout=3)
    slow, add = tool_call("web__slow", seconds=60), tool_call("web__add", a=20, b=22)
    quick = tool_call("web__slow", seconds=0.1)
    agent = _agent([slow, [add, quick], "ok"], [web])
    state = task("go")
    started = time.monotonic()
    assert _go(agent, state, how) == "ok"
    assert time.monotonic() - started < 30  # the slow call was given up at its timeout, not waited for
    results = _results_by_id(state)
    entry = results[slow.id]
    assert entry.content == TIMED_OUT
    assert (entry.outcome, entry.is_error) == ("error", True)
    assert isinstance(entry.error, ToolError)
    assert entry.error.__cause__ is not None
    assert results[add.id].content == "42"  # the connection stays usable
    assert (results[quick.id].content, results[quick.id].outcome) == ("slept 0.1", "done")
    assert state.pending_calls == ()
    assert web._conn is None


def test_timeout_bounds_the_whole_connect(base: str) -> None:
    # Each request of the handshake and the listing is answered after 0.3 s (< 0.5), all of them together take longer.
    web = MCP(url=f"{base}/slow/mcp", name="web", timeout=0.5)
    agent = _agent(["never"], [web])
    started = time.monotonic()
    with pytest.raises(MCPConnectionError) as info:
        agent.run("go")
    assert time.monotonic() - started < 8  # a 0.5 s timeout: far less than an unbounded wait
    assert str(info.value) == f"Could not connect to MCP server 'web' ({web!r}): TimeoutError"
    assert web._conn is None and agent._mcp_users == 0


@pytest.mark.parametrize("how", ["run", "arun"])
def test_timeout_of_connecting_to_a_server_that_never_answers(silent: Silent, how: str) -> None:
    web = MCP(url=silent.url, name="web", timeout=0.5)
    agent = _agent(["never"], [web])
    state = task("go")
    started = time.monotonic()
    with pytest.raises(MCPConnectionError) as info:
        _go(agent, state, how)
    assert time.monotonic() - started < 8  # a 0.5 s timeout: far less than an unbounded wait
    assert str(info.value) == f"Could not connect to MCP server 'web' ({web!r}): TimeoutError"
    assert isinstance(info.value.__cause__, TimeoutError)
    assert isinstance(state.history[-1], ErrorEntry)
    assert web._conn is None
    assert agent._mcp_users == 0 and agent._mcp_ready is None
    assert silent.closed.wait(30), "the client kept the connection open after giving up"
    assert silent.received.startswith(b"POST /mcp ")


def test_credentials_in_the_url_and_headers_never_reach_the_error_or_the_store(tmp_path: Path) -> None:
    secrets = ["user-name-token", "pass-word-secret", "query-secret-123", "bearer-secret-456"]
    url = f"http://{secrets[0]}:{secrets[1]}@127.0.0.1:{_free_port()}/mcp?key={secrets[2]}&v=1"
    web = MCP(url=url, headers={"Authorization": f"Bearer {secrets[3]}"}, name="web", timeout=0.5)
    agent = Agent(FakeModel(["never"]), tools=[web], reporter=None, human=None, store=FileStore(tmp_path / "store"))
    state = task("go")
    with pytest.raises(MCPConnectionError) as info:
        agent.run(state)
    assert str(info.value).startswith("Could not connect to MCP server 'web' (MCP('http://[REDACTED]:[REDACTED]@")
    entry = state.history[-1]
    assert isinstance(entry, ErrorEntry)
    saved = "".join(path.read_text() for path in (tmp_path / "store").rglob("*") if path.is_file())
    assert "Could not connect to MCP server 'web'" in saved
    for secret in secrets:
        assert secret not in str(info.value) and secret not in entry.content and secret not in saved


@pytest.mark.parametrize("how", ["run", "arun"])
def test_connecting_to_a_port_where_nothing_listens(how: str) -> None:
    web = MCP(url=f"http://127.0.0.1:{_free_port()}/mcp", name="web", timeout=0.5)
    agent = _agent(["never"], [web])
    state = task("go")
    started = time.monotonic()
    with pytest.raises(MCPConnectionError) as info:
        _go(agent, state, how)
    assert time.monotonic() - started < 8  # a 0.5 s timeout: far less than an unbounded wait
    assert str(info.value) == (
        f"Could not connect to MCP server 'web' ({web!r}): ConnectError: All connection attempts failed"
    )
    assert info.value.__cause__ is not None
    assert isinstance(state.history[-1], ErrorEntry)
    assert web._conn is None and agent._mcp_users == 0


# --- stopping a connect in progress -----------------------------------------------------------------------


def test_ctrl_c_while_connecting_stops_the_connect(silent: Silent) -> None:
    web = MCP(url=silent.url, name="web")
    agent = _agent(["never"], [web])
    interrupted: list[float] = []

    def press_ctrl_c() -> None:
        silent.requested.wait(10)  # the connect is under way: the client waits for the server's answer
        interrupted.append(time.monotonic())
        _thread.interrupt_main()

    returned: list[Any] = []
    threading.Thread(target=press_ctrl_c, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        returned.append(agent.run("go"))
        time.sleep(15)  # only reached when run() returned: the interrupt must not escape this test
    assert returned == [] and silent.accepted.is_set()
    assert time.monotonic() - interrupted[0] < 3.5
    assert web._conn is None
    assert agent._mcp_users == 0 and agent._mcp_ready is None
    assert silent.closed.wait(30), "the client kept the connection open after giving up"
    assert silent.received.startswith(b"POST /mcp ")


def test_cancel_while_connecting_stops_the_connect(silent: Silent) -> None:
    web = MCP(url=silent.url, name="web")
    agent = _agent(["never"], [web])

    async def main() -> None:
        task = asyncio.create_task(agent.arun("go"))
        assert await asyncio.to_thread(silent.accepted.wait, 10)  # the connect is under way
        assert web._conn is not None and web._conn.client is None
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - cancelled_at < 3.5

    asyncio.run(main())
    assert web._conn is None
    assert agent._mcp_users == 0 and agent._mcp_ready is None
    assert silent.closed.wait(30), "the client kept the connection open after giving up"
    assert silent.received.startswith(b"POST /mcp ")


def test_cancelling_one_agents_connect_leaves_the_other_waiting(base: str) -> None:
    web = MCP(url=f"{base}/slow/mcp", name="web")
    first = _agent(["never"], [web])
    call = tool_call("web__add", a=1, b=2)
    second = _agent([call, "second"], [web])
    state = task("go")

    async def main() -> str:
        cancelled = asyncio.create_task(first.arun("go"))
        kept = asyncio.create_task(second.arun(state))
        await _await_until(lambda: first._mcp_users == 1 and second._mcp_users == 1)  # both wait for the connect
        conn = web._conn
        assert conn is not None and conn.client is None  # still starting
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert first._mcp_users == 0
        answer = await asyncio.wait_for(kept, 10)
        assert web._conn is None
        return answer

    assert asyncio.run(main()) == "second"
    assert _results_by_id(state)[call.id].content == "3"
    assert first._mcp_users == 0 and second._mcp_users == 0
    assert web._conn is None


# --- a lost connection ----------------------------------------------------------------------------------


def test_lost_connection_over_http(tmp_path: Path) -> None:
    process, url = _start_server(tmp_path / "server.log")
    under_way = tmp_path / "under-way"
    try:
        web = MCP(url=f"{url}/mcp", name="web")
        call = tool_call("web__slow", seconds=30, mark=str(under_way))
        agent = _agent([call, "never"], [web])
        state = task("go")

        def kill_during_the_call() -> None:
            _wait_until(under_way.exists)  # the call is under way on the server
            process.kill()

        threading.Thread(target=kill_during_the_call, daemon=True).start()
        started = time.monotonic()
        with pytest.raises(MCPConnectionError) as info:
            agent.run(state)
        assert time.monotonic() - started < 10
    finally:
        _stop_server(process)
    assert str(info.value).startswith("Lost the connection to MCP server 'web': ")
    assert info.value.__cause__ is not None
    assert state.pending_calls == ()
    entry = _results_by_id(state)[call.id]
    assert (entry.content, entry.outcome) == ("(aborted: MCPConnectionError)", "aborted")
    errors = [e for e in state.history if isinstance(e, ErrorEntry)]
    assert len(errors) == 1 and errors[0].error is info.value
    assert web._conn is None


# --- stopping a call in progress (Ctrl+C, cancellation) ---------------------------------------------------------------


def test_ctrl_c_during_a_call_stops_the_run_promptly(base: str, tmp_path: Path) -> None:
    web = MCP(url=f"{base}/mcp", name="web")
    under_way = tmp_path / "under-way"
    slow = tool_call("web__slow", seconds=5, mark=str(under_way))
    agent = _agent([slow, "never"], [web])
    state = task("go")
    interrupted: list[float] = []

    def press_ctrl_c() -> None:
        _wait_until(under_way.exists)  # the call is under way on the server
        interrupted.append(time.monotonic())
        _thread.interrupt_main()

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    returned: list[Any] = []
    with pytest.raises(KeyboardInterrupt):
        returned.append(agent.run(state))
        time.sleep(15)  # only reached when run() returned: the interrupt must not escape this test
    assert returned == []
    assert time.monotonic() - interrupted[0] < 3.5
    entry = _results_by_id(state)[slow.id]
    assert (entry.content, entry.outcome) == ("(interrupted by user)", "interrupted")
    assert state.pending_calls == ()
    assert web._conn is None and agent._mcp_users == 0


def test_cancelling_arun_during_a_call_cancels_it_promptly(base: str, tmp_path: Path) -> None:
    web = MCP(url=f"{base}/mcp", name="web")
    under_way = tmp_path / "under-way"
    slow = tool_call("web__slow", seconds=5, mark=str(under_way))
    agent = _agent([slow, "never"], [web])
    state = task("go")

    async def main() -> float:
        task = asyncio.create_task(agent.arun(state))
        await _await_until(under_way.exists)  # the call is under way on the server
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - cancelled_at

    assert asyncio.run(main()) < 3.5  # the call would take 5 s
    entry = _results_by_id(state)[slow.id]
    assert (entry.content, entry.outcome) == ("(interrupted by user)", "interrupted")
    assert state.pending_calls == ()
    assert web._conn is None and agent._mcp_users == 0
