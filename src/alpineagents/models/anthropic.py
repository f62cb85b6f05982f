"""`Anthropic`: the adapter for the Anthropic Messages API, streamed, through the official `anthropic` SDK."""

from __future__ import annotations

import asyncio
import inspect
import re
import ssl
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn

from alpineagents._values.numbers import is_whole
from alpineagents.errors import AuthError, ContextTooLongError, ProviderError, RateLimitError, fix_message
from alpineagents.models._arguments import checked_arguments
from alpineagents.models._clients import SDKClients
from alpineagents.models._json import encode
from alpineagents.models._wire import EMPTY_REPLY, TextSink, assistant_reply, plain, priced_usage
from alpineagents.models.base import OnEvent, OnText
from alpineagents.types import Image, Message, Price, RawBlock, Reply, Request, TextBlock, ToolCall, ToolResultBlock

if TYPE_CHECKING:
    from alpineagents.types import ToolResultContent

__all__ = ["Anthropic", "DEFAULT_MAX_TOKENS"]

DEFAULT_MAX_TOKENS = 64_000
"""The output limit sent when the model's own limit is unknown (and the most ever sent automatically)."""

_OUTPUT_LIMITS: dict[tuple[str | None, str], int | None] = {}
"""Process-wide cache of looked-up output limits, keyed `(base_url, name)`; `None` = the lookup failed."""

_LIMITS_LOCK = threading.Lock()
_KEY_LOCKS: dict[tuple[str | None, str], threading.Lock] = {}
_INFLIGHT: dict[tuple[int, tuple[str | None, str]], asyncio.Future[int | None]] = {}

_TOO_HIGH = re.compile(r"max_tokens:\s*(\d+)\s*>\s*(\d+)")
_OVERFLOW_HINTS = (
    "prompt is too long",
    "context length",
    "maximum context",
    "too many tokens",
    "exceeds the model",
    "exceeds context",
)
_AUTH_HINTS = ("authentication method", "api_key", "auth_token", "credentials")
_BAD_TOOL_JSON = "Unable to parse tool parameter JSON"


def _sdk() -> Any:
    """The `anthropic` SDK module (imported on first use: it is slow to import)."""
    import anthropic

    return anthropic


def _looks_like_context_overflow(text: str) -> bool:
    """True when an error text says the prompt is larger than the model's context window."""
    lowered = text.lower()
    return any(hint in lowered for hint in _OVERFLOW_HINTS)


def _caught() -> tuple[type[BaseException], ...]:
    """What a streamed attempt catches: SDK errors, `TypeError`/`ValueError` (request building, unreadable tool
    input), and the transport errors the SDK lets through while reading a streaming body."""
    import anyio
    import httpx2

    return (_sdk().AnthropicError, TypeError, ValueError, httpx2.RequestError, ssl.SSLError, anyio.EndOfStream)


_CLOUD_CLIENTS = (
    "AnthropicBedrock",
    "AsyncAnthropicBedrock",
    "AnthropicBedrockMantle",
    "AsyncAnthropicBedrockMantle",
    "AnthropicVertex",
    "AsyncAnthropicVertex",
)


def _cloud_clients() -> tuple[type, ...]:
    """The SDK's clients for Claude on Bedrock and Vertex AI: they move the model into the URL when they prepare a
    request, from the body as a dict, so they get the typed call (`messages.stream`) rather than prebuilt bytes."""
    sdk = _sdk()
    return tuple(cls for name in _CLOUD_CLIENTS if isinstance(cls := getattr(sdk, name, None), type))


def _raw_post(body: dict[str, Any], stream_cls: Any) -> dict[str, Any]:
    """The arguments of the SDK's raw `post` for a streamed message, sync or async (`stream_cls` is the SDK's
    `Stream` or `AsyncStream`): the body encoded once, read back as the SDK's typed stream events."""
    sdk = _sdk()
    return {
        "cast_to": sdk.types.Message,
        "content": encode(body),
        "stream": True,
        "stream_cls": stream_cls[sdk.types.RawMessageStreamEvent],
    }


def _stream_kwargs(body: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of `client.messages.stream(...)` that send `body`."""
    return {key: value for key, value in body.items() if key != "stream"}


class _Rejected(Exception):
    """Carries a bad-request error of the API up to the too-high retry of `respond`."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def _message_stream_types() -> tuple[type, ...]:
    from anthropic.lib.streaming import AsyncMessageStream, MessageStream

    return (MessageStream, AsyncMessageStream)


def _check_complete(stream: Any, final: Any) -> tuple[Any, bool]:
    real = isinstance(stream, _message_stream_types())
    return final, not real or getattr(final, "stop_reason", None) is not None


def _final_message_sync(stream: Any) -> tuple[Any, bool]:
    """The final message, and whether the stream was complete (a real SDK stream ends with a stop reason)."""
    try:
        final = stream.get_final_message()
    except AssertionError:  # the SDK's stream had no message_start: it ended before the reply began
        if not isinstance(stream, _message_stream_types()):
            raise
        return None, False
    return _check_complete(stream, final)


async def _final_message_async(stream: Any) -> tuple[Any, bool]:
    try:
        final = await stream.get_final_message()
    except AssertionError:
        if not isinstance(stream, _message_stream_types()):
            raise
        return None, False
    return _check_complete(stream, final)


class _Pieces:
    """Hands the pieces of one streamed reply to its sink as the stream's events come: the text; for an `OnStream`
    also the thinking and each tool_use block's input JSON (named by the id and name its block started with)."""

    __slots__ = ("sink", "calls")

    def __init__(self, sink: TextSink) -> None:
        self.sink = sink
        self.calls: dict[int, tuple[str, str]] = {}  # the tool_use blocks started, by index: id and name

    def add(self, event: Any) -> None:
        kind = event.type
        if kind == "content_block_delta":
            delta = event.delta
            piece = delta.type
            if piece == "text_delta":
                self.sink(delta.text)
            elif self.sink.pieces is None:
                return
            elif piece == "thinking_delta":
                self.sink.thinking(delta.thinking)
            elif piece == "input_json_delta":
                call = self.calls.get(event.index)
                if call is not None and delta.partial_json:
                    self.sink.tool_args(call[0], call[1], delta.partial_json)
        elif kind == "content_block_start" and self.sink.pieces is not None:
            block = event.content_block
            if block.type == "tool_use":
                self.calls[event.index] = (block.id, block.name)
                self.sink.tool_args(block.id, block.name, "")


class Anthropic(SDKClients):
    """Adapter for the Anthropic Messages API (streamed), built on the official `anthropic` SDK.

    Construction does no I/O and needs no credentials; the SDK client is created on the first request.
    `client`: an SDK client to use instead of making one, for Claude on Amazon Bedrock or Google Vertex AI
    (`anthropic.AnthropicBedrock(...)`, `anthropic.AnthropicVertex(...)`, or any `anthropic.Anthropic`); an async one
    (`AsyncAnthropicBedrock`, ...) serves `arespond`, a sync one `respond`.
    """

    provider = "anthropic"
    cut_off_stop_reasons = frozenset({"max_tokens", "model_context_window_exceeded"})
    _DEFAULT_SUPPORTS = frozenset({"thinking", "cache", "vision"})
    _NAME_PREFIXES = ("anthropic/",)

    _SDK = "anthropic"
    _SYNC_CLIENT = "Anthropic"
    _ASYNC_CLIENT = "AsyncAnthropic"
    _WARM_ATTRIBUTES = ("messages", "models")

    def __init__(
        self,
        name: str,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout: float | None = None,
        retries: int = 2,
        price: Price | None = None,
        thinking: bool | int = False,
        cache: bool | None = None,
        context_window: int = 200_000,
        api_key: str | None = None,
        base_url: str | None = None,
        supports: Iterable[str] | None = None,
        client: Any = None,
    ) -> None:
        self._set_up_model(name, context_window, max_tokens, temperature, timeout, retries, price, supports)
        self._api_key = api_key
        self._base_url = base_url

        self._thinking: dict[str, Any] | None = None
        self._budget: int | None = None
        if thinking is not False:
            self._check_supported("thinking", f"thinking={thinking!r}")
            if temperature is not None:
                raise ValueError(
                    fix_message(
                        "thinking is on, but temperature was also given",
                        "The API takes no temperature while thinking is on: remove temperature=, "
                        "or turn thinking off with thinking=False",
                        f"Anthropic({self.name!r}, thinking=True)",
                    )
                )
            if thinking is True:
                self._thinking = {"type": "adaptive"}
            else:
                budget = int(thinking)
                if budget < 1024:
                    raise ValueError(
                        fix_message(
                            f"thinking={budget}, but it must be at least 1024",
                            "Give a thinking budget of 1024 tokens or more, or thinking=True for adaptive "
                            "thinking. thinking=False turns thinking off (0 does not)",
                            f"Anthropic({self.name!r}, thinking=4096)",
                        )
                    )
                limit = max_tokens if max_tokens is not None else DEFAULT_MAX_TOKENS
                if budget >= limit:
                    raise ValueError(
                        fix_message(
                            f"thinking={budget}, but max_tokens={limit}",
                            "The thinking budget is part of the output and must be below max_tokens: lower "
                            "thinking, or raise max_tokens",
                            f"Anthropic({self.name!r}, thinking={budget}, max_tokens={budget * 2})",
                        )
                    )
                self._budget = budget
                self._thinking = {"type": "enabled", "budget_tokens": budget}
        if cache is True:
            self._check_supported("cache", "cache=True")
        self.cache: bool = ("cache" in self.supports) if cache is None else bool(cache)
        if client is not None:
            self._adopt(client)

    def _adopt(self, client: Any) -> None:
        """Use the caller's SDK client: an async one (its `close` is a coroutine function) for `arespond`,
        otherwise for `respond`."""
        self._given_client = client
        if inspect.iscoroutinefunction(getattr(client, "close", None)):
            self._async_client = lambda: client  # the fixed seam, replaced on the instance
        else:
            self._sdk_client = client

    # -- clients -------------------------------------------------------------------------------------------------

    def _client_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"max_retries": self.retries}
        if self._api_key is not None:
            kwargs["api_key"] = self._api_key
        if self._base_url is not None:
            kwargs["base_url"] = self._base_url
        if self.timeout is not None:
            kwargs["timeout"] = self.timeout
        return kwargs

    # -- output limit ---------------------------------------------------------------------------------------------

    @property
    def _limit_key(self) -> tuple[str | None, str]:
        return (self._base_url, self.name)

    def _cached_limit(self) -> tuple[bool, int | None]:
        limits = _OUTPUT_LIMITS
        key = self._limit_key
        if key in limits:
            return True, limits[key]
        return False, None

    @staticmethod
    def _limit_of(info: Any) -> int | None:
        value = getattr(info, "max_tokens", None)
        if is_whole(value) and value > 0:
            return value
        return None

    def _send_value(self, limit: int | None) -> int:
        return DEFAULT_MAX_TOKENS if limit is None else min(DEFAULT_MAX_TOKENS, limit)

    def _resolve_max_tokens(self, client: Any) -> int:
        if self.max_tokens is not None:
            return self.max_tokens
        known, limit = self._cached_limit()
        if not known:
            key = self._limit_key
            with _LIMITS_LOCK:
                lock = _KEY_LOCKS.setdefault(key, threading.Lock())
            with lock:  # one lookup per key, even with requests on several threads
                known, limit = self._cached_limit()
                if not known:
                    try:
                        info = client.with_options(max_retries=0, timeout=10.0).models.retrieve(self.name)
                        limit = self._limit_of(info)
                    except Exception:  # noqa: BLE001 - any failure makes the limit unknown
                        limit = None
                    _OUTPUT_LIMITS[key] = limit
        value = self._send_value(limit)
        self._check_budget(value)
        return value

    async def _aresolve_max_tokens(self, client: Any) -> int:
        if self.max_tokens is not None:
            return self.max_tokens
        known, limit = self._cached_limit()
        if not known:
            loop = asyncio.get_running_loop()
            marker = (id(loop), self._limit_key)
            pending = _INFLIGHT.get(marker)
            if pending is not None:  # another request on this loop is looking it up: wait for its answer
                limit = await asyncio.shield(pending)
            else:
                future: asyncio.Future[int | None] = loop.create_future()
                _INFLIGHT[marker] = future
                try:
                    try:
                        info = await client.with_options(max_retries=0, timeout=10.0).models.retrieve(self.name)
                        limit = self._limit_of(info)
                    except Exception:  # noqa: BLE001 - any failure makes the limit unknown
                        limit = None
                    known, cached = self._cached_limit()
                    if known:
                        limit = cached
                    else:
                        _OUTPUT_LIMITS[self._limit_key] = limit
                finally:
                    _INFLIGHT.pop(marker, None)
                    if not future.done():
                        future.set_result(limit)
        value = self._send_value(limit)
        self._check_budget(value)
        return value

    def _check_budget(self, value: int) -> None:
        budget = self._budget
        if budget is not None and budget >= value:
            raise ValueError(
                fix_message(
                    f"thinking={budget}, but {self.name} allows at most {value} output tokens",
                    "Set thinking below the model's output limit",
                    f"Anthropic({self.name!r}, thinking={max(1024, value // 2)})",
                )
            )

    def _lower_limit(self, error: BaseException, sent: int) -> int | None:
        """The model's limit named by a "max_tokens too high" rejection, when the automatic value may retry."""
        if self.max_tokens is not None:
            return None
        match = _TOO_HIGH.search(str(error))
        if match is None or int(match.group(1)) != sent:
            return None
        limit = int(match.group(2))
        if not 0 < limit < sent:
            return None
        _OUTPUT_LIMITS[self._limit_key] = limit
        self._check_budget(limit)
        return limit

    # -- request mapping ---------------------------------------------------------------------------------------

    def _build_request_kwargs(self, request: Request, max_tokens: int | None = None) -> dict[str, Any]:
        """The keyword arguments of `client.messages.stream(...)` for `request`."""
        if max_tokens is None:
            max_tokens = self.max_tokens if self.max_tokens is not None else DEFAULT_MAX_TOKENS
        kwargs: dict[str, Any] = {
            "model": self.name,
            "max_tokens": max_tokens,
            "messages": self._to_anthropic_messages(request.messages),
        }
        if request.system is not None:
            kwargs["system"] = request.system
        tools, choice = self._tool_defs_and_choice(request)
        if tools:
            kwargs["tools"] = tools
        if choice is not None:
            kwargs["tool_choice"] = choice
        if self.temperature is not None:
            kwargs["extra_body"] = {"temperature": self.temperature}
        if self._thinking is not None:
            kwargs["thinking"] = dict(self._thinking)
        if self.cache:
            kwargs["cache_control"] = {"type": "ephemeral"}
        return kwargs

    def _request_body(self, request: Request, max_tokens: int | None = None) -> dict[str, Any]:
        """The JSON body of the streamed Messages request for `request`: the keyword arguments of
        `_build_request_kwargs` with `extra_body` merged in, and `stream`."""
        return _body_of(self._build_request_kwargs(request, max_tokens))

    def _tool_defs_and_choice(self, request: Request) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """The tool definitions to send (placeholders when the context uses tools but none are given) and the
        `tool_choice` (`{"type": "none"}` or `None` for the default)."""
        none = {"type": "none"}
        if request.tools:
            defs = [
                {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}
                for spec in request.tools
            ]
            return defs, (none if request.tool_choice == "none" else None)
        names: set[str] = set()
        for message in request.messages:
            for block in message.content:
                if isinstance(block, ToolCall):
                    names.add(block.name)
                elif isinstance(block, ToolResultBlock) and block.name:
                    names.add(block.name)
        if names:
            placeholders = [
                {"name": name, "description": "", "input_schema": {"type": "object"}} for name in sorted(names)
            ]
            return placeholders, none
        return [], (none if request.tool_choice == "none" else None)

    def _to_anthropic_messages(self, messages: Iterable[Message]) -> list[dict[str, Any]]:
        """The request messages in the API's shape: same-role runs merged, blocks converted (`_wire_message` of
        each merged message, in order); the unchanged start of a conversation is reused from the previous request
        (see `_request_cache`)."""
        return self._conversation(messages)

    def _wire_message(self, message: Message) -> list[dict[str, Any]]:
        """One message (a merged run of same-role messages) in the API's shape."""
        return [{"role": message.role, "content": self._to_anthropic_content(message)}]

    def _to_anthropic_content(self, message: Message) -> list[Any]:
        """The API content blocks of one message (tool results first in a user message)."""
        blocks: tuple[Any, ...] = message.content
        user = message.role == "user"
        if user and len(blocks) > 1 and any(isinstance(b, ToolResultBlock) for b in blocks):
            blocks = tuple(b for b in blocks if isinstance(b, ToolResultBlock)) + tuple(
                b for b in blocks if not isinstance(b, ToolResultBlock)
            )
        out: list[Any] = []
        only_text = True
        for block in blocks:
            if isinstance(block, TextBlock):
                if block.text.strip():
                    out.append({"type": "text", "text": block.text})
                continue
            only_text = False
            if isinstance(block, ToolCall):
                out.append({"type": "tool_use", "id": block.id, "name": block.name, "input": plain(block.args)})
            elif isinstance(block, ToolResultBlock):
                out.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": block.call_id,
                        "content": _result_content(block.content),
                        "is_error": block.is_error,
                    }
                )
            elif isinstance(block, Image):
                if user:
                    out.append(_image(block))
            elif isinstance(block, RawBlock):
                if block.provider == self.provider:
                    out.append(plain(block.data))
        if not out and only_text:
            out.append({"type": "text", "text": EMPTY_REPLY})
        return out

    # -- response mapping --------------------------------------------------------------------------------------

    def _to_reply(self, final_message: Any) -> Reply:
        """The `Reply` for the SDK's final message."""
        blocks: list[Any] = []
        for block in getattr(final_message, "content", None) or ():
            kind = getattr(block, "type", None)
            if kind == "text":
                blocks.append(TextBlock(block.text))
            elif kind == "tool_use":
                blocks.append(ToolCall(block.name, checked_arguments(block.input), block.id))
            else:
                blocks.append(RawBlock(self.provider, block.model_dump(mode="json", exclude_none=True)))
        stop_reason = getattr(final_message, "stop_reason", None)
        self._truncate_if_cut_off(blocks, stop_reason)
        raw_usage = getattr(final_message, "usage", None)
        total: int | None = None
        counts = (0, 0, 0, 0)
        if raw_usage is not None:
            counts = (
                getattr(raw_usage, "input_tokens", None) or 0,
                getattr(raw_usage, "output_tokens", None) or 0,
                getattr(raw_usage, "cache_read_input_tokens", None) or 0,
                getattr(raw_usage, "cache_creation_input_tokens", None) or 0,
            )
            total = sum(counts)
        return assistant_reply(
            self,
            blocks,
            priced_usage(self, *counts),
            total,
            stop_reason,
            answered_by=getattr(final_message, "model", None),
            response_id=getattr(final_message, "id", None),
        )

    # -- respond -------------------------------------------------------------------------------------------------

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Stream one reply from the Messages API; a failure of the SDK is raised as the library's error."""
        try:
            client = self._client()
        except (_sdk().AnthropicError, TypeError) as error:
            raise self._wrap(error) from error
        max_tokens = self._resolve_max_tokens(client)
        body = self._request_body(request, max_tokens)
        while True:
            try:
                return self._stream(client, body, on_text)
            except _Rejected as rejected:
                self._lower_or_raise(rejected, body)

    @staticmethod
    def _open(client: Any, body: dict[str, Any]) -> Any:
        """Send `body` (encoded once) through the SDK's raw path and return the SDK's message stream on its typed
        events: the same request as `client.messages.stream(...)`, without the SDK's copy of the body."""
        sdk = _sdk()
        from anthropic.lib.streaming import MessageStream

        if isinstance(client, _cloud_clients()):
            return client.messages.stream(**_stream_kwargs(body))
        raw = client.post("/v1/messages", **_raw_post(body, sdk.Stream))
        return MessageStream(raw, output_format=sdk.NOT_GIVEN)

    @staticmethod
    async def _aopen(client: Any, body: dict[str, Any]) -> Any:
        sdk = _sdk()
        from anthropic.lib.streaming import AsyncMessageStream

        if isinstance(client, _cloud_clients()):
            return client.messages.stream(**_stream_kwargs(body))
        raw = await client.post("/v1/messages", **_raw_post(body, sdk.AsyncStream))
        return AsyncMessageStream(raw, output_format=sdk.NOT_GIVEN)

    def _stream(self, client: Any, body: dict[str, Any], on_text: OnText | None) -> Reply:
        """One streamed attempt; a bad request of the API comes up as `_Rejected` (for the too-high retry)."""
        sink = TextSink(on_text)
        try:
            with self._open(client, body) as stream:
                sink.opened = True
                pieces = _Pieces(sink)
                for event in stream:
                    pieces.add(event)
                final, complete = _final_message_sync(stream)
        except _caught() as error:
            self._attempt_failed(error, sink)
        return self._finished(final, complete)

    async def arespond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Async twin of `respond` on the async SDK client; cancelling it closes the stream."""
        await self._aload_sdk()
        try:
            await self._aprepare_client()
            client = self._async_client()
        except (_sdk().AnthropicError, TypeError) as error:
            raise self._wrap(error) from error
        max_tokens = await self._aresolve_max_tokens(client)
        body = self._request_body(request, max_tokens)
        while True:
            try:
                return await self._astream(client, body, on_text)
            except _Rejected as rejected:
                self._lower_or_raise(rejected, body)

    async def _astream(self, client: Any, body: dict[str, Any], on_text: OnText | None) -> Reply:
        sink = TextSink(on_text)
        try:
            async with await self._aopen(client, body) as stream:
                sink.opened = True
                pieces = _Pieces(sink)
                async for event in stream:
                    pieces.add(event)
                final, complete = await _final_message_async(stream)
        except _caught() as error:
            self._attempt_failed(error, sink)
        return self._finished(final, complete)

    def _lower_or_raise(self, rejected: _Rejected, body: dict[str, Any]) -> None:
        """After a rejected attempt: lower `body["max_tokens"]` to the limit the rejection names (the too-high
        retry), or raise the rejection as the library's error."""
        error = rejected.error
        lower = self._lower_limit(error, body["max_tokens"])
        if lower is None:
            raise self._wrap(error) from error
        body["max_tokens"] = lower

    def _attempt_failed(self, error: BaseException, sink: TextSink) -> NoReturn:
        """Raise what a failure of a streamed attempt becomes: `on_text`'s own exception and a `ValueError` that is
        not the SDK's unreadable-tool-input error as they are, a bad request as `_Rejected`, the rest wrapped."""
        if error is sink.error:
            raise error
        if isinstance(error, _sdk().BadRequestError):
            raise _Rejected(error) from None
        if isinstance(error, ValueError) and _BAD_TOOL_JSON not in str(error):
            raise error
        if sink.opened and isinstance(error, _sdk().APIConnectionError) and error.__cause__ is not None:
            error = error.__cause__  # newer SDKs wrap a transport error of a started stream: it failed mid-reply
        raise self._wrap(error) from error

    def _finished(self, final: Any, complete: bool) -> Reply:
        if not complete:
            raise ProviderError("Anthropic stream ended before its final event (the reply has no stop reason)")
        return self._to_reply(final)

    # -- errors -------------------------------------------------------------------------------------------------

    def _configured_secrets(self) -> tuple[str | None, ...]:
        return (self._api_key,)

    def _wrap(self, error: BaseException) -> ProviderError:
        """The library error for an SDK, request-building or transport failure, with no credential in its text."""
        return self._provider_error(self._map_error(error), error)

    def _map_error(self, error: BaseException) -> ProviderError:
        """The library error for an SDK, request-building or transport failure."""
        sdk = _sdk()
        if isinstance(error, sdk.RateLimitError):
            return RateLimitError(f"Anthropic API rate limit (429): {error}")
        if isinstance(error, (sdk.AuthenticationError, sdk.PermissionDeniedError)):
            return AuthError(f"Anthropic authentication failed: {error}")
        if isinstance(error, sdk.RequestTooLargeError):
            return ContextTooLongError(f"Anthropic request too large (413): {error}")
        if isinstance(error, sdk.BadRequestError):
            if _looks_like_context_overflow(str(error)):
                return ContextTooLongError(f"The context exceeds the model's context window: {error}")
            return ProviderError(f"Anthropic bad request (400): {error}")
        if isinstance(error, TypeError):
            lowered = str(error).lower()
            if any(hint in lowered for hint in _AUTH_HINTS):
                return AuthError(
                    "Anthropic authentication failed (no credentials): set the ANTHROPIC_API_KEY environment "
                    "variable, or pass Anthropic(..., api_key=...)"
                )  # the SDK's own text, in the cause, names neither
            return ProviderError(f"Error while building the Anthropic request: {error}")
        if isinstance(error, sdk.AnthropicError):
            return ProviderError(f"Anthropic API error: {error}")
        return ProviderError(f"Anthropic stream failed mid-reply ({type(error).__name__}): {error}")


def _body_of(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The JSON body the SDK sends for the keyword arguments `kwargs` of a streamed request."""
    body = {key: value for key, value in kwargs.items() if key != "extra_body"}
    body.update(kwargs.get("extra_body") or {})
    body["stream"] = True
    return body


def _image(image: Image) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.base64}}


def _result_content(content: ToolResultContent) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextBlock):
            if block.text.strip():
                parts.append({"type": "text", "text": block.text})
        elif isinstance(block, Image):
            parts.append(_image(block))
    return parts
