"""Agents for the command-line and viewer tests, each with a scripted FakeModel (no network), and the helpers
both test files use: `cli` runs the command, `viewer` starts `alpineagents view`, `has_entry` reads a store.

The commands import them as `cli_agents:NAME` (the tests run with this folder as the working directory or on
PYTHONPATH). Each process gets fresh models, so a script starts over in every command.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from alpineagents import Agent, Image, Price, Request, State, loop, tool
from alpineagents.errors import ToolError
from alpineagents.permissions import AllowByReadOnly, DecideByHuman, DenyByName
from alpineagents.store import Store
from alpineagents.testing import FakeHuman, FakeModel, tool_call
from alpineagents.types import RawBlock, ToolResultBlock

XSS = "<script>alert(1)</script>"
PRICE = Price(input=3, output=15)
QUIET: dict[str, Any] = {"reporter": None, "human": None}
LONG = "\n".join(f"line {n}: " + "lorem ipsum dolor sit amet " * 3 for n in range(60))


def _has_results(request: Request) -> bool:
    last = request.messages[-1]
    return any(isinstance(block, ToolResultBlock) for block in last.content)


def _calc_reply(request: Request) -> Any:
    """Asks for add(2, 3) on a task that says "add", answers once the result is in, and greets otherwise."""
    if _has_results(request):
        return "The sum is 5."
    if "add" in request.messages[-1].text.lower():
        return [
            RawBlock("anthropic", {"type": "thinking", "thinking": "I should use the add tool."}),
            tool_call("add", a=2, b=3),
        ]
    return "Hello again."


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


calc = Agent(FakeModel([_calc_reply] * 20, price=PRICE), name="calc", tools=[add], **QUIET)


@tool
def explode() -> str:
    """A tool that breaks."""
    raise RuntimeError("boom")


broken = Agent(FakeModel([tool_call("explode")]), name="broken", tools=[explode], **QUIET)


@tool(read_only=True)
def list_issues(state: str) -> list[str]:
    """List the issues of the project.

    Args:
        state: "open" or "closed".
    """
    return ["#1 crash on start", "#2 slow listing"] if state == "open" else []


@tool
def write_note(title: str) -> str:
    """Write a note and return it.

    Args:
        title: The note's title.
    """
    return title + "\n" + LONG


@tool
def rm(path: str) -> str:
    """Remove a file.

    Args:
        path: The file.
    """
    return "removed"


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page.

    Args:
        url: The address.
    """
    raise ToolError(f"could not reach {url}: connection refused")


scout = Agent(
    FakeModel([tool_call("list_issues", state="open"), "There are two open issues: #1 and #2."] * 5, price=PRICE),
    name="scout",
    description="Looks up the project's issues.",
    system="You look things up.",
    tools=[list_issues],
    **QUIET,
)


def never(state: State) -> bool:
    """The lead stops by finishing, not by a condition."""
    return False


@loop(until=never, limit=10)
def lead_loop(agent: Agent, state: State) -> None:
    """Think and use tools; after the first turn, ask the person and compact the context."""
    agent.think(state)
    if state.pending_calls:
        agent.use_tools(state)
        if state.turn == 1:
            agent.ask_human(state, "Go on with the summary?", returns=bool)
            state.compact("The scout found two open issues; a note was written; rm was refused; the fetch failed.")
    else:
        state.finish("two open issues")


lead = Agent(
    FakeModel(
        [
            [
                "Let me look around.",
                tool_call("scout", prompt="List the open issues"),
                tool_call("write_note", title="Findings"),
                tool_call("rm", path="/etc/passwd"),
                tool_call("fetch_page", url="http://example.invalid"),
            ],
            "There are two open issues.",
        ],
        price=PRICE,
    ),
    name="lead",
    system="You lead.",
    tools=[scout, write_note, rm, fetch_page],
    permissions=[DenyByName(["rm"]), AllowByReadOnly(), DecideByHuman()],
    loop=lead_loop,
    human=FakeHuman(["yes"] * 8),
    reporter=None,
)


@tool
def echo(text: str) -> str:
    """Say the text back.

    Args:
        text: The text.
    """
    return text


xss = Agent(FakeModel([tool_call("echo", text=XSS), f"Here it is: {XSS}"]), name="xss", tools=[echo], **QUIET)


@tool
def wait_for_file(path: str) -> str:
    """Wait until a file exists (at most 60 seconds), then return its text.

    Args:
        path: The file.
    """
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear")
        time.sleep(0.05)
    return Path(path).read_text(encoding="utf-8")


slow = Agent(
    FakeModel([tool_call("wait_for_file", path=os.environ.get("CLI_TEST_GATE", "gate.txt")), "The gate opened."]),
    name="slow",
    tools=[wait_for_file],
    **QUIET,
)


HOSTILE = "ok\x1b[2K\rforged\x07 \x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ \x9b31m"
"""Text that would erase a line, ring the bell, open a link and switch colours on a terminal that acted on it."""


@tool
def shout(text: str) -> str:
    """Fail with a message that holds terminal escapes.

    Args:
        text: What to say.
    """
    raise ToolError(HOSTILE)


@tool
def crash() -> str:
    """Raise an exception whose text holds terminal escapes."""
    raise RuntimeError(HOSTILE)


hostile = Agent(
    FakeModel([[HOSTILE, tool_call("shout", text=HOSTILE), tool_call("no\x1b[1Asuch")], HOSTILE], price=PRICE),
    name="hostile",
    tools=[shout],
    **QUIET,
)
hostile_crash = Agent(FakeModel([tool_call("crash")]), name="hostile", tools=[crash], **QUIET)


def red_square_png(size: int = 8) -> bytes:
    """A real PNG file: a red square of `size` pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * size for _ in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@tool
def draw() -> Image:
    """Draw a red square."""
    return Image(red_square_png())


painter = Agent(FakeModel([tool_call("draw"), "A red square."]), name="painter", tools=[draw], **QUIET)


def make_calc() -> Agent:
    """A function that builds an Agent: MODULE:AGENT may name it."""
    return calc


not_an_agent = 42


HERE = Path(__file__).resolve().parent


def command_env(**extra: str) -> dict[str, str]:
    """The environment of an `alpineagents` subprocess: this one's without ALPINEAGENTS_STORE, plus `extra`, with
    this folder on PYTHONPATH (so `cli_agents:NAME` imports)."""
    env = {key: value for key, value in os.environ.items() if key != "ALPINEAGENTS_STORE"}
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    return env


def command(*args: str) -> list[str]:
    """The command line of `python -m alpineagents ARGS`."""
    return [sys.executable, "-m", "alpineagents", *args]


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs `alpineagents ARGS` in `cwd` (at most 60 seconds) and returns what it did."""
    return subprocess.run(
        command(*args), cwd=cwd, env=command_env(**(env or {})), capture_output=True, text=True, timeout=60
    )


def has_entry(store: Store, state_id: str, kind: str) -> bool:
    """True once `store` holds an entry of `kind` for `state_id`."""
    record = store.read(state_id)
    return record is not None and any(entry["kind"] == kind for entry in record.entries)


@contextlib.contextmanager
def viewer(store: str, cwd: Path, deadline: float = 60, extra: Sequence[str] = ()) -> Iterator[str]:
    """Runs `alpineagents view --port 0` on `store` (with the `extra` options) and yields the address it prints
    (within `deadline` seconds)."""
    process = subprocess.Popen(
        command("view", "--port", "0", "--store", store, *extra),
        cwd=cwd,
        env=command_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=deadline)
        assert ready, "alpineagents view printed no address in time"
        line = process.stdout.readline()
        assert line.startswith("alpineagents viewer: "), line
        yield line.split()[2]
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
