"""What the two adapters built on the `openai` SDK share: clients and credentials, the streamed request with its
closing, and the mapping of SDK failures to the library's errors.

`OpenAICompatible` (Chat Completions) and `OpenAIResponses` (the Responses API) subclass `OpenAIStreaming`; each
supplies the request's keyword arguments, the SDK call that opens the stream, and a reader that folds the streamed
events into a `Reply`.
"""

from __future__ import annotations

import inspect
import os
from abc import abstractmethod
from typing import Any, Generic, NoReturn, Protocol, TypeVar

from alpineagents.errors import AuthError, ContextTooLongError, ProviderError, RateLimitError
from alpineagents.models._clients import SDKClients
from alpineagents.models._json import encode
from alpineagents.models._wire import TextSink, priced_usage
from alpineagents.models.base import Model, OnEvent, OnText
from alpineagents.types import Image, Reply, Request, Usage

__all__ = [
    "OpenAIStreaming",
    "StreamReader",
    "openai_sdk",
    "map_error",
    "data_url",
    "usage_of",
    "PLACEHOLDER_KEY",
]

PLACEHOLDER_KEY = "not-needed"
"""The key sent to a server given by `base_url` when no key is configured anywhere (what local servers expect)."""

_OVERFLOW_HINTS = ("context length", "maximum context", "context_length_exceeded")
_OPTIONS: dict[str, Any] = {"security": {"bearer_auth": True}}
"""The per-request options `create` passes too: the API key as a bearer token."""


def openai_sdk() -> Any:
    """The `openai` SDK module (imported on first use: it is slow to import)."""
    import openai

    return openai


def _stream_types() -> tuple[type, ...]:
    from openai import AsyncStream, Stream

    return (Stream, AsyncStream)


def data_url(image: Image) -> str:
    """The `data:` URL of an image, as the OpenAI APIs take inline images."""
    return f"data:{image.media_type};base64,{image.base64}"


def usage_of(model: Model, raw: Any, names: tuple[str, str, str]) -> tuple[Usage, int | None]:
    """The priced Usage of a reply and its context tokens (all input plus output), from an OpenAI usage object
    whose (input, output, input details) attributes are `names`; `Usage(requests=1)` and `None` without one.

    The API's input count includes the cached tokens (`cached_tokens` and `cache_write_tokens` of the details,
    each 0 when missing); Usage counts them apart from the uncached input.
    """
    if raw is None:
        return priced_usage(model, 0, 0, 0, 0), None
    total = getattr(raw, names[0], None) or 0
    output = getattr(raw, names[1], None) or 0
    details = getattr(raw, names[2], None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    written = (getattr(details, "cache_write_tokens", None) or 0) if details is not None else 0
    return priced_usage(model, total - cached - written, output, cached, written), total + output


def map_error(error: BaseException) -> ProviderError:
    """The library error for an SDK failure (its message is `str(error)`, with no prefix): a rate limit, an
    authentication failure, a context that is too long (a bad request saying so), or any other provider error."""
    sdk = openai_sdk()
    text = str(error)
    if isinstance(error, sdk.RateLimitError):
        return RateLimitError(text)
    if isinstance(error, (sdk.AuthenticationError, sdk.PermissionDeniedError)):
        return AuthError(text)
    if isinstance(error, sdk.BadRequestError):
        lowered = text.lower()
        if getattr(error, "code", None) == "context_length_exceeded" or any(h in lowered for h in _OVERFLOW_HINTS):
            return ContextTooLongError(text)
    return ProviderError(text)


class StreamReader(Protocol):
    """Folds the events of one streamed reply; its `sink` hands text to `on_text` and remembers what it raised."""

    sink: TextSink

    def add(self, event: Any, /) -> None: ...


_R = TypeVar("_R", bound=StreamReader)


class OpenAIStreaming(SDKClients, Generic[_R]):
    """A streamed request through the `openai` SDK, sync and async, with the errors mapped and no credential in
    their texts. Subclasses set `_SERVICE` (named in the "no credentials" error) and implement the hooks below."""

    _SDK = "openai"
    _SYNC_CLIENT = "OpenAI"
    _ASYNC_CLIENT = "AsyncOpenAI"
    _SERVICE = "OpenAI API"

    base_url: str | None
    """The server URL, or `None` for the SDK's default (its `OPENAI_BASE_URL`, else api.openai.com)."""
    api_key: str | None
    """The API key as given (`None`: the SDK reads `OPENAI_API_KEY`)."""

    # -- hooks ---------------------------------------------------------------------------------------------------

    @abstractmethod
    def _request_kwargs(self, request: Request) -> dict[str, Any]:
        """The keyword arguments of the SDK call for `request`."""

    def _request_body(self, request: Request) -> dict[str, Any]:
        """The JSON body of the request (the SDK call's keyword arguments are the body's fields)."""
        return self._request_kwargs(request)

    _PATH: str
    """The API's path under the client's base URL (`"/chat/completions"`)."""

    @abstractmethod
    def _stream_types(self) -> tuple[type, type]:
        """The SDK's response type and the type of its stream events (`ChatCompletion`, `ChatCompletionChunk`)."""

    def _open(self, client: Any, body: dict[str, Any], stream_cls: Any) -> Any:
        """Send `body` (encoded once) through the SDK's raw path and return the SDK's stream of typed events (sync:
        the stream; async: an awaitable of it; `stream_cls`: the SDK's `Stream` or `AsyncStream`): the same request as the SDK's `create(stream=True, ...)`, with its
        auth, retries, timeouts and errors, but without its walk over every message against its type hints."""
        response, event = self._stream_types()
        return client.post(
            self._PATH,
            cast_to=response,
            content=encode(body),
            stream=True,
            stream_cls=stream_cls[event],
            options=_OPTIONS,
        )

    @abstractmethod
    def _prepared(self, request: Request, on_text: OnText | None) -> tuple[dict[str, Any], _R]:
        """The SDK call's keyword arguments for `request`, and a fresh reader of its stream."""

    @abstractmethod
    def _finish(self, reader: _R, real_stream: bool) -> Reply:
        """The Reply of a stream read to its end (`real_stream`: the SDK's own stream, which must have ended with
        its final event)."""

    # -- clients -------------------------------------------------------------------------------------------------

    def _client_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"max_retries": self.retries}
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        api_key = self.api_key
        if api_key is None and self.base_url is not None and not os.environ.get("OPENAI_API_KEY"):
            api_key = PLACEHOLDER_KEY
        if api_key is not None:
            kwargs["api_key"] = api_key
        if self.timeout is not None:
            kwargs["timeout"] = self.timeout
        return kwargs

    def _configured_secrets(self) -> tuple[str | None, ...]:
        return (self.api_key,)

    # -- errors --------------------------------------------------------------------------------------------------

    def _wrap(self, error: BaseException) -> ProviderError:
        """The library error for an SDK failure, with no credential in its text."""
        return self._provider_error(map_error(error), error)

    def _no_credentials(self, error: BaseException) -> AuthError:
        message = f"{self._SERVICE} authentication failed (no credentials): {error}"
        return self._provider_error(AuthError(message), error)

    def _stream_failed(self, error: BaseException, reader: _R) -> NoReturn:
        """Raise what a failure while reading the stream becomes: `on_text`'s own exception as is, an SDK failure
        wrapped."""
        if error is reader.sink.error:
            raise error
        raise self._wrap(error) from error

    # -- respond -------------------------------------------------------------------------------------------------

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Stream one reply (the SDK's failures are raised as the library's errors)."""
        sdk = openai_sdk()
        try:
            client = self._client()
        except sdk.OpenAIError as error:
            raise self._no_credentials(error) from error
        body, reader = self._prepared(request, on_text)
        stream = None
        try:
            stream = self._open(client, body, sdk.Stream)
            for event in stream:
                reader.add(event)
        except sdk.OpenAIError as error:
            self._stream_failed(error, reader)
        finally:
            close = getattr(stream, "close", None)
            if callable(close):
                close()
        return self._finish(reader, isinstance(stream, _stream_types()))

    async def arespond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Async twin of `respond` on the async SDK client; cancelling it closes the request."""
        await self._aload_sdk()
        sdk = openai_sdk()
        try:
            await self._aprepare_client()
            client = self._async_client()
        except sdk.OpenAIError as error:
            raise self._no_credentials(error) from error
        body, reader = self._prepared(request, on_text)
        stream = None
        try:
            stream = await self._open(client, body, sdk.AsyncStream)
            async for event in stream:
                reader.add(event)
        except sdk.OpenAIError as error:
            self._stream_failed(error, reader)
        finally:
            closing = getattr(stream, "close", None)
            closed = closing() if callable(closing) else None
            if inspect.isawaitable(closed):
                await closed
        return self._finish(reader, isinstance(stream, _stream_types()))
