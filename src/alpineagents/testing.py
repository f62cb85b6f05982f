"""Test doubles that need no API key and no network: `tool_call`, `FakeModel` and `FakeHuman`; and `Replay`, a
model that answers from a stored run (checking each request against it), with `Recorder`, which records what
`Replay` checks, and `ReplayMismatch`, what it raises.

Typical use::

    fake = FakeModel([tool_call("read_file", path="main.py"), "Line 1 is wrong"])
    agent.copy(model=fake, reporter=None).run(state)
    assert fake.remaining == 0
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from alpineagents._frozen import JSON
from alpineagents._replay.model import Recorder, Replay, ReplayMismatch
from alpineagents._tokens import context_tokens, estimate_overhead_tokens, estimate_text_tokens
from alpineagents._values.construct import maker
from alpineagents.errors import ContextTooLongError
from alpineagents.human import Human, parse_answer
from alpineagents.models.base import Model, OnEvent, OnStream, OnText
from alpineagents.types import Message, Price, RawBlock, Reply, Request, TextBlock, ToolCall, ToolResultBlock, Usage

if TYPE_CHECKING:
    from alpineagents.state import State

make_message = maker(Message)
make_reply = maker(Reply)
make_usage = maker(Usage)

__all__ = ["FakeModel", "FakeHuman", "tool_call", "Replay", "Recorder", "ReplayMismatch"]


def tool_call(name: str, /, **args: JSON) -> ToolCall:
    """Return `ToolCall(name, args, id="call_" + 12 random lowercase hex digits)`, a fresh id on every call."""
    return ToolCall(name=name, args=dict(args), id="call_" + os.urandom(6).hex())


def _last_said(request: Request) -> str:
    """`Last message: '...'`: the text of the request's latest message that has one (the person's, most often),
    and what came after it (tool results), so the request the script has no reply for can be recognised."""
    after: list[str] = []
    for message in reversed(request.messages):
        if message.text:
            tail = f" (then {', '.join(reversed(after))})" if after else ""
            return f"Last message: {message.text!r} from the {message.role}{tail}"
        results = [block.name or block.call_id for block in message.content if isinstance(block, ToolResultBlock)]
        if results:
            after.append("the results of " + ", ".join(results))
        elif message.tool_calls:
            after.append("a call of " + ", ".join(call.name for call in message.tool_calls))
        else:
            after.append(f"a message of the {message.role} with no text")
    return "Last message: '' (the request has no message with text)"


def _stream_call(pieces: OnStream, call: ToolCall) -> None:
    """A call's arguments, for an `OnStream`: the call begun (an empty piece), then its arguments' JSON text."""
    pieces.tool_args(call.id, call.name, "")
    pieces.tool_args(call.id, call.name, json.dumps(call.args, ensure_ascii=False))


class FakeModel(Model):
    """A Model that answers each request with the next prepared item, in order (thread-safe).

    Items: an exception instance is raised; a `Reply` is returned as is; a `ToolCall` becomes a reply with that
    call; a list or tuple becomes a reply with those blocks (each `str` a `TextBlock`); a `str` a text reply; a
    callable is called with the `Request` and its return value converted by the same rules.

    What it streams (a `Reply` item streams nothing): each text to `on_text`; when `on_text` is an `OnStream`
    (as a live `agent.stream(...)` passes), also the text of each `RawBlock` whose data holds a `"thinking"`
    string, as thinking (`RawBlock("fake", {"thinking": "..."})`), and each tool call's arguments as their JSON
    text (an empty piece when the call begins, then the whole text), all in block order.
    """

    provider = "fake"

    def __init__(
        self,
        replies: Iterable[Any],
        *,
        name: str = "fake",
        context_window: int = 200_000,
        price: Price | None = None,
    ) -> None:
        self.name = name
        self.price = price
        self._context_window = context_window
        self._items: deque[Any] = deque(replies)
        self._count = len(self._items)
        self._lock = threading.Lock()
        self.requests: list[Request] = []
        self._overhead: tuple[Any, Any, int] | None = None

    @property
    def context_window(self) -> int:
        """The context window given to the constructor."""
        return self._context_window

    @property
    def remaining(self) -> int:
        """The number of prepared items not used yet."""
        return len(self._items)

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Answer `request` with the next prepared item (a text, blocks, tool calls, a Reply, an exception to
        raise, or a function of the request that gives one of these)."""
        with self._lock:
            self.requests.append(request)
            size = self._size(request)
            if size > self._context_window:
                raise ContextTooLongError(
                    f"FakeModel({self.name!r}): estimated input of {size} tokens is larger than "
                    f"context_window={self._context_window}"
                )
            if not self._items:
                raise RuntimeError(
                    f"FakeModel: ran out of prepared replies (all {self._count} used). {_last_said(request)}; add "
                    "a reply for this request to the FakeModel's list"
                )
            item = self._items.popleft()
        if callable(item) and not isinstance(item, (BaseException, Reply, ToolCall)):
            item = item(request)
        return self._convert(item, size, on_text)

    def _size(self, request: Request) -> int:
        """The default `count_tokens(request)`, estimating the overhead (system prompt and tools) once for all the
        requests that share them (every request of a run does)."""
        if type(self).count_tokens is not Model.count_tokens:
            return self.count_tokens(request)
        system, tools = request.system, request.tools
        known = self._overhead
        if known is None or known[0] is not system or known[1] is not tools:
            # one tuple: a reader on another thread sees all three fields or none
            known = self._overhead = (system, tools, estimate_overhead_tokens(system, tools))
        return context_tokens(request.messages, known[2])

    def _convert(self, item: Any, input_tokens: int, on_text: OnText | None) -> Reply:
        # The common items (a ToolCall, a str) are tested first, by exact type: one check each on the hot path.
        kind = type(item)
        if kind is ToolCall:
            if on_text is not None and isinstance(on_text, OnStream):
                _stream_call(on_text, item)
            return self._reply((item,), input_tokens, 0, "tool_use")
        if kind is str:
            if on_text is not None:
                on_text(item)
            return self._reply((TextBlock(item),), input_tokens, estimate_text_tokens(item), "end_turn")
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, Reply):
            return item
        if isinstance(item, ToolCall):
            blocks: tuple[Any, ...] = (item,)
        elif isinstance(item, str):
            blocks = (TextBlock(item),)
        elif isinstance(item, (list, tuple)):
            converted: list[Any] = []
            for part in item:
                if isinstance(part, str):
                    converted.append(TextBlock(part))
                elif isinstance(part, (ToolCall, RawBlock, TextBlock)):
                    converted.append(part)
                else:
                    raise TypeError(f"FakeModel: unsupported reply item {part!r}")
            blocks = tuple(converted)
        else:
            raise TypeError(f"FakeModel: unsupported reply item {item!r}")
        output_tokens = 0
        has_call = False
        pieces = on_text if isinstance(on_text, OnStream) else None
        for block in blocks:
            if isinstance(block, TextBlock):
                output_tokens += estimate_text_tokens(block.text)
                if on_text is not None:
                    on_text(block.text)
            elif isinstance(block, ToolCall):
                has_call = True
                if pieces is not None:
                    _stream_call(pieces, block)
            elif pieces is not None and isinstance(block, RawBlock):
                thinking = block.data.get("thinking")
                if isinstance(thinking, str) and thinking:
                    pieces.thinking(thinking)
        return self._reply(blocks, input_tokens, output_tokens, "tool_use" if has_call else "end_turn")

    def _reply(self, blocks: tuple[Any, ...], input_tokens: int, output_tokens: int, stop_reason: str) -> Reply:
        # `blocks` is a tuple of blocks and every other value is already in normal form, so the trusted makers
        # build the same values as the constructors, without their checks (one reply per turn of every test).
        usage = make_usage(input_tokens, output_tokens, 0, 0, 1, None)
        if self.price is not None:
            usage = make_usage(input_tokens, output_tokens, 0, 0, 1, self.price.cost(usage))
        message = make_message("assistant", blocks, None, None)
        return make_reply(message, usage, input_tokens + output_tokens, stop_reason, self.name)


class FakeHuman(Human):
    """A Human that answers with prepared answers, in order; answers that do not fit `returns` are skipped."""

    def __init__(self, answers: Iterable[Any]) -> None:
        self._answers: deque[Any] = deque(answers)
        self._lock = threading.Lock()
        self.questions: list[str] = []

    @property
    def remaining(self) -> int:
        """The number of prepared answers not used yet."""
        return len(self._answers)

    def ask(self, state: State, prompt: str, returns: Any = str) -> Any:
        """Answer `prompt` with the next prepared answer that fits `returns` (answers that do not fit are
        skipped)."""
        with self._lock:
            self.questions.append(prompt)
            while True:
                if not self._answers:
                    raise RuntimeError(f"FakeHuman: ran out of prepared answers. Last question: {prompt!r}")
                answer = self._answers.popleft()
                try:
                    return parse_answer(answer, returns)
                except ValueError:
                    continue

    def __repr__(self) -> str:
        return "FakeHuman()"
