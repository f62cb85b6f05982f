"""A stdio MCP server never outlives its client: the agent's process is killed with SIGKILL while the server's tool
runs (blocking in `time.sleep`, or awaiting), and the server, with everything it started, is gone within seconds,
long before its tool would have returned; the tool's side effect after the wait never happens."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SERVER = str(TESTS / "helpers" / "mcp_server.py")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to see processes end")


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, dead but not yet reaped by its new parent, counts as ended)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(check: object, deadline: float, what: str) -> None:
    end = time.monotonic() + deadline
    while not check():  # type: ignore[operator]
        assert time.monotonic() < end, what
        time.sleep(0.05)


def descendants(pid: int) -> list[int]:
    """Every process whose parent chain leads to `pid` (read from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                continue
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, of in parents.items() if of == parent]
        found += children
        frontier += children
    return found


@pytest.mark.parametrize(("tool", "store"), [("sleep_then_mark", "FileStore"), ("await_then_mark", "SQLiteStore")])
def test_a_killed_agent_leaves_no_mcp_server_running(tool: str, store: str, tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    code = textwrap.dedent(
        f"""
        import sys
        from alpineagents import Agent
        from alpineagents.mcp_tools import MCP
        from alpineagents.store import {store}
        from alpineagents.testing import FakeModel, tool_call
        local = MCP({f"{sys.executable} {SERVER}"!r}, name="local")
        reply = tool_call("local__{tool}", mark={str(mark)!r}, seconds=25)
        agent = Agent(FakeModel([reply, "done"]), tools=[local], store={store}({str(tmp_path / "runs")!r}),
                      reporter=None, human=None)
        agent.run("go")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    agent = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: mark.exists() and mark.read_text(), 60, "the server's tool never started")
        server = int(mark.read_text())
        started = descendants(agent.pid)
        assert server in started
        time.sleep(0.3)  # 0.3 s into the call
        agent.send_signal(signal.SIGKILL)
        agent.wait(10)
        killed = time.monotonic()
        wait_for(lambda: not any(alive(pid) for pid in started), 10, f"still running after 10 s: {started}")
        assert time.monotonic() - killed < 10  # the tool would have returned 25 s after it started
        time.sleep(0.5)
        assert not Path(f"{mark}.done").exists()  # the call's side effect after the wait never happened
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait(10)


def test_a_server_ended_by_its_client_ends_as_before(tmp_path: Path) -> None:
    """The launcher changes nothing while the client lives: the run calls the tool and gets its answer, and the
    server (with the launcher) is gone once the run released it."""
    from alpineagents import Agent
    from alpineagents.mcp_tools import MCP
    from alpineagents.testing import FakeModel, tool_call

    local = MCP(f"{sys.executable} {SERVER}", name="local")
    mark = tmp_path / "mark"
    agent = Agent(
        FakeModel([tool_call("local__sleep_then_mark", mark=str(mark), seconds=0), "done"]),
        tools=[local],
        reporter=None,
        human=None,
    )
    assert agent.run("go") == "done"
    server = int(mark.read_text())
    wait_for(lambda: not alive(server), 10, "the released server still runs")
    assert Path(f"{mark}.done").read_text() == "done"
