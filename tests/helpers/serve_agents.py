"""Agents the serve tests run: scripted models (no network) whose replies stream word by word, a tool, and a
helper that serves an app on a free 127.0.0.1 port in a thread of the test process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from alpineagents import Agent, tool
from alpineagents.models.base import OnStream
from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import RawBlock, Reply, Request, TextBlock, ToolCall, ToolResultBlock, result_text

WAIT = 20.0


class Streaming(FakeModel):
    """A FakeModel whose text replies arrive word by word, `delay` seconds apart (each word one `on_text`)."""

    def __init__(self, replies: Any, *, delay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(replies, **kwargs)
        self.delay = delay

    def respond(self, request: Request, on_text: Any = None, on_event: Any = None) -> Reply:
        reply = super().respond(request, None, on_event)
        text = reply.message.text
        if on_text is not None and text:
            words = text.split(" ")
            for index, word in enumerate(words):
                if self.delay:
                    time.sleep(self.delay)
                on_text(word if index == len(words) - 1 else word + " ")
        return reply


THOUGHT = "Four and five make nine, so I add them."
"""What `thinker` thinks before it calls add(a=4, b=5)."""


class Thinking(FakeModel):
    """A FakeModel that streams, word by word `delay` seconds apart, the thinking of each reply (its `RawBlock`
    holding `"thinking"`), its text, and its tool calls' arguments in pieces of three characters, as a live
    stream asks (an `OnStream`)."""

    def __init__(self, replies: Any, *, delay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(replies, **kwargs)
        self.delay = delay

    def respond(self, request: Request, on_text: Any = None, on_event: Any = None) -> Reply:
        reply = super().respond(request, None, on_event)
        if not isinstance(on_text, OnStream):
            return reply
        for block in reply.message.content:
            if isinstance(block, RawBlock) and isinstance(block.data.get("thinking"), str):
                for word in _pieces_of(block.data["thinking"], " "):
                    time.sleep(self.delay)
                    on_text.thinking(word)
            elif isinstance(block, TextBlock):
                for word in _pieces_of(block.text, " "):
                    time.sleep(self.delay)
                    on_text(word)
            elif isinstance(block, ToolCall):
                text = json.dumps(dict(block.args))
                on_text.tool_args(block.id, block.name, "")
                for start in range(0, len(text), 3):
                    time.sleep(self.delay)
                    on_text.tool_args(block.id, block.name, text[start : start + 3])
        return reply


def _pieces_of(text: str, sep: str) -> list[str]:
    words = text.split(sep)
    return [word if index == len(words) - 1 else word + sep for index, word in enumerate(words)]


def thinker(delay: float = 0.02) -> Agent:
    """An Agent whose model thinks `THOUGHT`, says "Adding." and calls add(a=4, b=5), then answers "It is 9.", all
    streamed by `Thinking` (each request is answered this way)."""

    def reply(request: Request) -> Any:
        if _has_results(request):
            return "It is 9."
        return [RawBlock("fake", {"thinking": THOUGHT}), "Adding.", tool_call("add", a=4, b=5)]

    return Agent(Thinking(reply_forever(reply), delay=delay), tools=[add], reporter=None, human=None)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def nap(seconds: float) -> str:
    """Sleep a while."""
    time.sleep(seconds)
    return "rested"


def answers(*texts: str, delay: float = 0.0, calls: bool = False) -> Agent:
    """An Agent that answers each request with the next text (calling add(2, 3) first when `calls`)."""
    script: list[Any] = []
    for text in texts:
        if calls:
            script.append(tool_call("add", a=2, b=3))
        script.append(text)
    return Agent(Streaming(script, delay=delay), tools=[add, nap], reporter=None, human=None)


def _has_results(request: Request) -> bool:
    return any(isinstance(block, ToolResultBlock) for block in request.messages[-1].content)


def chat_reply(request: Request) -> Any:
    """The rule of `chat`: "add" asks for add(2, 3) and then says the sum; "nap" naps 30 s first; "fail" raises;
    anything else is echoed back in twenty words."""
    last = request.messages[-1].text.lower()
    if _has_results(request):
        block = request.messages[-1].content[0]
        return (
            "The sum is 5." if isinstance(block, ToolResultBlock) and result_text(block.content) == "5" else "Rested."
        )
    if "fail" in last:
        return RuntimeError("the model is down")
    if "nap" in last:
        return tool_call("nap", seconds=30)
    if "add" in last:
        return tool_call("add", a=2, b=3)
    return " ".join(f"w{i}" for i in range(20)) + " you said " + last


def chat_agent(delay: float = 0.01) -> Agent:
    """An Agent that answers any number of requests by `chat_reply`, each text word by word `delay` apart."""
    return Agent(Streaming(reply_forever(chat_reply), delay=delay), tools=[add, nap], reporter=None, human=None)


class reply_forever:
    """An endless iterable of the same scripted item (FakeModel takes an iterable)."""

    def __init__(self, item: Any) -> None:
        self.item = item

    def __iter__(self) -> Iterator[Any]:
        for _ in range(100_000):
            yield self.item


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve `app` with uvicorn on a free 127.0.0.1 port in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(WAIT)


def run_sync(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


chat = chat_agent()
slow = chat_agent(delay=0.2)


def approving(delay: float = 0.01) -> Agent:
    """`chat`, whose add calls wait for a person's decision (a permission answering `Deferred`)."""
    from alpineagents.permissions import DecidePermission, Deferred

    class AskBeforeAdding(DecidePermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return Deferred("Add these numbers?") if call.name == "add" else None

    return Agent(
        Streaming(reply_forever(chat_reply), delay=delay),
        tools=[add, nap],
        permissions=[AskBeforeAdding()],
        reporter=None,
        human=None,
    )
