"""The Model role: the adapter boundary between the framework and an LLM provider.

What a model hands back while it answers goes through the two callbacks of `respond`: `on_text` gets each piece of
the reply's text, `on_event` each `ModelEvent`. A caller that also wants the reply's other pieces as they stream
(its thinking, the arguments of its tool calls, as a live `agent.stream(...)` shows them) passes as `on_text` an
`OnStream`: a text callback with two more methods. An adapter that streams those pieces hands them on when its
`on_text` is an `OnStream` (`isinstance(on_text, OnStream)`), and otherwise drops them; a model that knows nothing
of `OnStream` calls it with text only, as any `on_text`. So the signature of `respond` stays as it is, models
written before keep working, and a caller that passes a plain function gets text only.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import TypeVar

from alpineagents._async import run_in_thread
from alpineagents._tokens import context_tokens, estimate_overhead_tokens
from alpineagents.errors import fix_message
from alpineagents.types import Message, ModelEvent, Price, Reply, Request, Usage

__all__ = ["Model", "OnText", "OnEvent", "COMPACT_PROMPT"]  # the role's fixed names; `OnStream` is imported by name

OnText = Callable[[str], None]
"""Receives each streamed text chunk."""

OnEvent = Callable[[ModelEvent], None]
"""Receives each `ModelEvent`."""


class OnStream:
    """An `on_text` that also takes the other pieces of a reply as they stream: its thinking, and the arguments of
    its tool calls as the model writes them.

    Called as a function, it gets text, like any `on_text`. An adapter calls `thinking` and `tool_args` only when
    its `on_text` is an `OnStream`; the methods here drop the piece, so a subclass overrides those it wants. An
    exception a method raises leaves `respond` unchanged, as one `on_text` raises does.
    """

    __slots__ = ()

    def __call__(self, chunk: str) -> None:
        """A piece of the reply's text."""

    def thinking(self, chunk: str) -> None:
        """A piece of the model's thinking (the reasoning text or summary the provider streams)."""

    def tool_args(self, call_id: str, name: str, delta: str) -> None:
        """The next piece of the JSON text of the arguments of the tool call `call_id` (the id its `ToolCall`
        gets in the reply), a call of the tool `name`. The first piece of a call comes as soon as its name is
        known, and may be empty; the pieces of one call, joined, are its arguments' JSON text."""


class ForwardingStream(OnStream):
    """An `OnStream` that hands every piece on to another one, `inner`: what a Model that wraps another passes
    as `on_text` when its own `on_text` is an `OnStream`, so the pieces keep their kind on the way through.

    Each piece goes through `_forward(method, piece)`, which calls `inner`'s method for it; a subclass overrides
    `_forward` to hand on every piece in another way, or one method to do more with its kind of piece.
    """

    __slots__ = ("inner",)

    def __init__(self, inner: OnStream) -> None:
        self.inner = inner

    def _forward(self, method: Callable[[str], None], piece: str) -> None:
        """Hand `piece` to `method`, the method of `inner` for its kind."""
        method(piece)

    def __call__(self, chunk: str) -> None:
        self._forward(self.inner, chunk)

    def thinking(self, chunk: str) -> None:
        self._forward(self.inner.thinking, chunk)

    def tool_args(self, call_id: str, name: str, delta: str) -> None:
        inner = self.inner
        self._forward(lambda piece: inner.tool_args(call_id, name, piece), delta)


COMPACT_PROMPT = (
    "Summarize the conversation so far. It must be possible to continue the work from this summary alone. "
    "Include, without omission, the goal, what has been done so far, facts learned, files changed, and remaining "
    "work. Do not call any tools."
)

_A = TypeVar("_A")


class Model(ABC):
    """Base class of every model adapter.

    A subclass implements `context_window` and `respond`; everything else has a working default. The settings
    are class attributes, so a subclass that never calls `super().__init__()` still has them.
    """

    name: str = ""
    """Model name without provider prefix, e.g. `"claude-sonnet-5"`."""
    provider: str = ""
    """Provider id; `RawBlock`s of this provider are sent back to the model, others are dropped."""
    supports: frozenset[str] = frozenset()
    """Declared features (`"thinking"`, `"cache"`, `"server_compact"`, `"vision"`, ...). Declarative only."""
    max_tokens: int | None = None
    """Output-token cap per reply; `None` = the adapter's default."""
    temperature: float | None = None
    """Sampling temperature; `None` = the provider's default."""
    timeout: float | None = None
    """Request timeout in seconds; `None` = the SDK's default."""
    retries: int = 2
    """Retry count handed to the SDK."""
    price: Price | None = None
    """Prices for `usage.cost`; without it the cost is `None`."""

    @property
    @abstractmethod
    def context_window(self) -> int:
        """The model's context window in tokens."""

    @abstractmethod
    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Send one request to the provider and return one `Reply`.

        `on_text` gets each streamed text chunk; `on_event` gets each `ModelEvent` (a retry, a fallback).
        """

    async def arespond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Async twin of `respond`.

        The default runs `respond` on a new daemon thread with a copy of the caller's contextvars. Each callback
        runs on the event-loop thread while the worker waits for it; an exception it raises is re-raised inside the
        worker unchanged. Cancelling the awaiting task drops the reply, and the worker's next callback raises
        `asyncio.CancelledError` there instead of running.
        """
        relay = _Relay(asyncio.get_running_loop())
        try:
            return await run_in_thread(
                self.respond, request, relay.wrap(on_text), relay.wrap(on_event), name="alpineagents-model"
            )
        except BaseException:
            relay.cancel()
            raise

    def compact(self, request: Request, instructions: str | None = None, on_event: OnEvent | None = None) -> Reply:
        """Summarize the context; the summary is `reply.text`.

        The default sends `request` plus a user message with `COMPACT_PROMPT` (and `instructions`, when given)
        and `tool_choice="none"`, through `respond` without `on_text`. Override it for server-side compaction.
        """
        return self.respond(self._summary_request(request, instructions), None, on_event)

    async def acompact(
        self, request: Request, instructions: str | None = None, on_event: OnEvent | None = None
    ) -> Reply:
        """Async twin of `compact`.

        An overridden `compact` runs on a worker thread with `on_event` relayed to the event loop; otherwise the
        summary request goes through `arespond`.
        """
        if type(self).compact is not Model.compact:
            relay = _Relay(asyncio.get_running_loop())
            try:
                return await run_in_thread(
                    self.compact, request, instructions, relay.wrap(on_event), name="alpineagents-model"
                )
            except BaseException:
                relay.cancel()
                raise
        return await self.arespond(self._summary_request(request, instructions), None, on_event)

    def count_tokens(self, request: Request) -> int:
        """Estimate the size of `request` in tokens with the context-token estimate the State uses.

        A utility only: the framework itself never calls it.
        """
        return context_tokens(request.messages, estimate_overhead_tokens(request.system, request.tools))

    def mark_cache(self, request: Request) -> Request:
        """Return the request with prompt-cache markers placed. The default returns `request` itself."""
        return request

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    # -- protected helpers for adapter authors -------------------------------------------------------------------

    def _cost(self, usage: Usage) -> float | None:
        """The cost of `usage` at `self.price`, or `None` without a price."""
        if self.price is None:
            return None
        return self.price.cost(usage)

    def _check_supported(self, feature: str, setting: str) -> None:
        """Raise the "does not support" `ValueError` when `feature` is not declared in `supports`."""
        if feature in self.supports:
            return
        features = ", ".join(sorted(self.supports)) or "(none)"
        raise ValueError(
            fix_message(
                f"{type(self).__name__}({self.name!r}) does not support {setting} (required feature: {feature!r})",
                f"Features this adapter supports: {features}. Remove the unsupported setting, or declare the "
                "features the server supports with supports=",
            )
        )

    @staticmethod
    def _merge_same_role(messages: Iterable[Message]) -> list[Message]:
        """Merge runs of consecutive messages with the same role into one message (blocks concatenated).

        A merged message keeps the later message's `tokens`; a message with no same-role neighbour is kept as is.
        """
        merged: list[Message] = []
        for message in messages:
            if merged and merged[-1].role == message.role:
                last = merged[-1]
                merged[-1] = Message(last.role, last.content + message.content, message.tokens)
            else:
                merged.append(message)
        return merged

    @staticmethod
    def _summary_request(request: Request, instructions: str | None) -> Request:
        """The summary request of `compact`: `request` plus the compact prompt, with `tool_choice="none"`."""
        prompt = COMPACT_PROMPT
        if instructions:
            prompt += "\n\nBe sure to keep: " + instructions
        return Request(request.system, (*request.messages, Message.user(prompt)), request.tools, "none")


class _Relay:
    """Runs callbacks of a worker thread on the event-loop thread, one at a time, waiting for each."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """From now on a relayed callback raises `asyncio.CancelledError` in the worker instead of running."""
        self._cancelled.set()

    def wrap(self, callback: Callable[[_A], None] | None) -> Callable[[_A], None] | None:
        """The relaying version of `callback` (`None` stays `None`; an `OnStream` stays one, every method
        relayed)."""
        if callback is None:
            return None
        if isinstance(callback, OnStream):
            return _RelayedStream(self, callback)  # type: ignore[return-value]  # an OnStream is an OnText
        fn = callback

        def relayed(value: _A) -> None:
            self.call(fn, value)

        return relayed

    def call(self, fn: Callable[[_A], None], value: _A) -> None:
        """Run `fn(value)` on the event-loop thread and wait for it; what it raises is raised here."""
        if self._cancelled.is_set():
            raise asyncio.CancelledError()
        done = threading.Event()
        outcome: list[BaseException] = []

        def run() -> None:
            try:
                if self._cancelled.is_set():
                    outcome.append(asyncio.CancelledError())
                else:
                    fn(value)
            except BaseException as error:  # noqa: BLE001 - re-raised in the worker unchanged
                outcome.append(error)
            finally:
                done.set()

        try:
            self._loop.call_soon_threadsafe(run)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            raise asyncio.CancelledError() from None
        while not done.wait(0.05):
            if self._loop.is_closed() or (self._cancelled.is_set() and not self._loop.is_running()):
                raise asyncio.CancelledError()
        if outcome:
            raise outcome[0]


class _RelayedStream(ForwardingStream):
    """An `OnStream` whose every piece runs on the event-loop thread (through a `_Relay`)."""

    __slots__ = ("relay",)

    def __init__(self, relay: _Relay, inner: OnStream) -> None:
        super().__init__(inner)
        self.relay = relay

    def _forward(self, method: Callable[[str], None], piece: str) -> None:
        self.relay.call(method, piece)
