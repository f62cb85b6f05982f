"""`Gemini`: the adapter for Google's Gemini API (and Vertex AI), streamed, through the official `google-genai` SDK.

What it sends (`client.models.generate_content_stream(model=..., contents=..., config=...)`):

- `contents`: one `Content` per run of same-role messages (`"user"` or `"model"`). A user turn holds the function
  responses first (`{"output": text}`, or `{"error": text}` for an error result; the images of a result follow as
  inline data parts, announced in its text), then its text and images. A model turn holds its parts in the order
  the model produced them: thought parts, text, function calls (with their ids), each with the thought signature
  it came with, so multi-turn tool use with thinking works. Bytes (images, signatures) are kept in base64, which the
  SDK reads, so the kept wire form is plain JSON.
- `config`: `system_instruction`, the function declarations (`parameters_json_schema`), `tool_config` mode `NONE`
  for `tool_choice="none"`, `max_output_tokens`, `temperature`, `thinking_config`, and automatic function calling
  off (the agent loop runs the tools).

What it returns: thought parts as `RawBlock("google", {"thought": True, "text": ..., "thought_signature": ...})`;
each text and function call as a `TextBlock`/`ToolCall`, preceded by `RawBlock("google", {"thought_signature":
...})` when the part carried a signature (the signature is kept in base64, as on the wire); any other part kind as
a `RawBlock` of the part. Another adapter drops these blocks. `stop_reason` is the finish reason as the API names
it (`"STOP"`, `"MAX_TOKENS"`, `"SAFETY"`, ...). A prompt the API blocked is an error (`ProviderError`) naming the
block reason: nothing was generated.
"""

from __future__ import annotations

import base64
import re
import ssl
import uuid
from collections.abc import Iterable
from typing import Any

from alpineagents import _observe as observe
from alpineagents._async import run_in_thread
from alpineagents.errors import AuthError, ContextTooLongError, ProviderError, RateLimitError, fix_message
from alpineagents.models._arguments import checked_arguments
from alpineagents.models._clients import SDKClients
from alpineagents.models._wire import EMPTY_REPLY, TextSink, plain, priced_usage
from alpineagents.models.base import Model, OnEvent, OnText
from alpineagents.types import Image, Message, Price, RawBlock, Reply, Request, TextBlock, ToolCall, ToolResultBlock

__all__ = ["Gemini", "KEY_VARIABLES"]

KEY_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
"""The environment variables the SDK reads the API key from (the first one wins when both are set)."""

SIGNATURE = "thought_signature"
"""The key of a part's thought signature (base64 in a RawBlock, bytes for the SDK)."""

SKIP_SIGNATURE = base64.b64encode(b"skip_thought_signature_validator").decode()
"""What Google documents to send for a function call that has no signature (one made by another model or by the
program), so that a model that requires signatures accepts the history."""

_OVERFLOW_HINTS = ("input token count", "exceeds the maximum number of tokens", "context window", "too many tokens")
_AUTH_STATUS = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED"})
_AUTH_HINTS = ("api key not valid", "api_key_invalid", "api key expired")
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def _caught() -> tuple[type[BaseException], ...]:
    """What a streamed attempt catches: the SDK's errors, its unreadable-response error, and the transport errors
    it lets through while reading a streaming body."""
    import anyio
    import httpx2
    from google.genai import errors

    return (errors.APIError, errors.UnknownApiResponseError, httpx2.HTTPError, ssl.SSLError, anyio.EndOfStream)


class Gemini(SDKClients):
    """Adapter for the Gemini API (streamed), built on the official `google-genai` SDK.

    `api_key`: the Gemini API key; without it the SDK reads `GOOGLE_API_KEY` or `GEMINI_API_KEY`. Vertex AI:
    `vertexai=True` with `project=` and `location=` (or the SDK's `GOOGLE_GENAI_USE_VERTEXAI`,
    `GOOGLE_CLOUD_PROJECT`, `GOOGLE_CLOUD_LOCATION` variables and Application Default Credentials). `client`: a
    `google.genai.Client` to use instead of making one (its `.aio` serves `arespond`). `thinking`: `None` leaves the
    model's default; `False` turns thinking off (budget 0); `True` asks for thought summaries; an `int` is a
    thinking budget in tokens (`-1`: dynamic); a `str` is a thinking level (`"low"`, `"high"`). `retries` is the
    SDK's number of retries (of 408, 429 and 5xx). Construction does no I/O and needs no credentials.
    """

    provider = "google"
    cut_off_stop_reasons = frozenset({"MAX_TOKENS"})
    _DEFAULT_SUPPORTS = frozenset({"thinking", "vision"})
    _NAME_PREFIXES = ("google/", "gemini/")

    _SDK = "google.genai"
    _SYNC_CLIENT = "Client"
    _ASYNC_CLIENT = "Client"
    _WARM_ATTRIBUTES = ("models", "aio.models")

    def __init__(
        self,
        name: str,
        *,
        api_key: str | None = None,
        client: Any = None,
        vertexai: bool | None = None,
        project: str | None = None,
        location: str | None = None,
        base_url: str | None = None,
        thinking: bool | int | str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout: float | None = None,
        retries: int = 2,
        price: Price | None = None,
        context_window: int = 1_048_576,
        supports: Iterable[str] | None = None,
    ) -> None:
        self._set_up_model(name, context_window, max_tokens, temperature, timeout, retries, price, supports)
        self._api_key = api_key
        self._vertex = {"vertexai": vertexai, "project": project, "location": location}
        self._base_url = base_url
        self._thinking: dict[str, Any] | None = None
        if thinking is not None:
            self._thinking = _thinking_config(self.name, thinking)
            if self._thinking != _OFF:
                self._check_supported("thinking", f"thinking={thinking!r}")
        if client is not None:
            self._given_client = client
            self._sdk_client = client

    # -- clients -------------------------------------------------------------------------------------------------

    def _client_kwargs(self) -> dict[str, Any]:
        http: dict[str, Any] = {"retry_options": {"attempts": self.retries + 1}}
        if self._base_url is not None:
            http["base_url"] = self._base_url
        if self.timeout is not None:
            http["timeout"] = int(self.timeout * 1000)  # the SDK takes milliseconds
        kwargs: dict[str, Any] = {"http_options": http}
        if self._api_key is not None:
            kwargs["api_key"] = self._api_key
        kwargs.update({key: value for key, value in self._vertex.items() if value is not None})
        return kwargs

    def _async_client(self) -> Any:
        """The SDK's async client (`.aio` of the sync one: the SDK keeps one connection pool per event loop)."""
        return self._client().aio

    def _open(self) -> Any:
        try:
            return self._client()
        except (ValueError, TypeError) as error:  # the SDK found no key (or no Vertex project) in its settings
            raise self._no_credentials(error) from error

    def _no_credentials(self, error: BaseException) -> ProviderError:
        return self._provider_error(
            AuthError(
                fix_message(
                    f"Gemini authentication failed (no credentials): {error}",
                    f"Pass api_key=, or set {' or '.join(KEY_VARIABLES)}; for Vertex AI pass vertexai=True, project= "
                    "and location= (with Application Default Credentials)",
                    f"Gemini({self.name!r}, api_key=os.environ['GEMINI_API_KEY'])",
                )
            ),
            error,
        )

    def _configured_secrets(self) -> tuple[str | None, ...]:
        return (self._api_key,)

    def _known_secrets(self) -> list[str | None]:
        """The configured key and that of the SDK client (read from the environment, or handed in)."""
        keys = super()._known_secrets()
        for client in (self._sdk_client, self._given_client):
            keys.append(getattr(getattr(client, "_api_client", None), "api_key", None))
        return keys

    # -- request mapping ---------------------------------------------------------------------------------------

    def _request_body(self, request: Request) -> dict[str, Any]:
        """The keyword arguments of `client.models.generate_content_stream(...)` for `request`: plain JSON, which
        the SDK sends with its keys in camelCase."""
        config: dict[str, Any] = {"automatic_function_calling": {"disable": True}}
        if request.system is not None:
            config["system_instruction"] = request.system
        declarations, mode_none = self._declarations(request)
        if declarations:
            config["tools"] = [{"function_declarations": declarations}]
        if mode_none:
            config["tool_config"] = {"function_calling_config": {"mode": "NONE"}}
        config.update(self._sampling("max_output_tokens"))
        if self._thinking is not None:
            config["thinking_config"] = dict(self._thinking)
        return {"model": self.name, "contents": self._conversation(request.messages), "config": config}

    def _declarations(self, request: Request) -> tuple[list[dict[str, Any]], bool]:
        """The function declarations to send (placeholders for the tools the context uses when none are given)
        and whether calling is turned off."""
        if request.tools:
            declarations = [
                {"name": s.name, "description": s.description, "parameters_json_schema": plain(s.input_schema)}
                for s in request.tools
            ]
            return declarations, request.tool_choice == "none"
        names = sorted(
            {
                block.name
                for message in request.messages
                for block in message.content
                if isinstance(block, ToolCall | ToolResultBlock) and block.name
            }
        )
        placeholders = [{"name": n, "description": "", "parameters_json_schema": {"type": "object"}} for n in names]
        return placeholders, bool(placeholders) or request.tool_choice == "none"

    def _wire_message(self, message: Message) -> list[dict[str, Any]]:
        """One message (a merged run of same-role messages) as one `Content`."""
        if message.role == "assistant":
            parts = self._model_parts(message)
            role = "model"
        else:
            parts = _user_parts(message)
            role = "user"
        if not parts and all(isinstance(block, TextBlock) for block in message.content):
            parts = [{"text": EMPTY_REPLY}]
        return [{"role": role, "parts": parts}]

    def _model_parts(self, message: Message) -> list[dict[str, Any]]:
        """A model turn's parts in the order produced, each with the signature recorded before it; the first
        function call of a turn that has no signature gets the documented placeholder."""
        parts: list[dict[str, Any]] = []
        pending: str | None = None
        signed_call = False
        for block in message.content:
            if isinstance(block, RawBlock):
                if block.provider != self.provider:
                    continue
                if set(block.data) == {SIGNATURE}:
                    pending = block.data[SIGNATURE]
                    continue
                parts.append(plain(block.data))
                continue
            if isinstance(block, TextBlock):
                if not block.text and pending is None:
                    continue
                part: dict[str, Any] = {"text": block.text}
            elif isinstance(block, ToolCall):
                part = {"function_call": {"id": block.id, "name": block.name, "args": plain(block.args)}}
                if pending is None and not signed_call:
                    part[SIGNATURE] = SKIP_SIGNATURE
                signed_call = True
            else:
                continue  # an image in an assistant message is not sent
            if pending is not None:
                part[SIGNATURE] = pending
                pending = None
            parts.append(part)
        if pending is not None:  # a signature whose part was empty: it still goes back
            parts.append({"text": "", SIGNATURE: pending})
        return parts

    # -- respond -------------------------------------------------------------------------------------------------

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Stream one reply from the Gemini API; a failure of the SDK is raised as the library's error."""
        client = self._open()
        kwargs = self._request_body(request)
        reader = self._reader(on_text)
        try:
            stream = client.models.generate_content_stream(**kwargs)
            reader.sink.opened = True
            for chunk in stream:
                reader.add(chunk)
        except _caught() as error:
            self._failed(error, reader.sink)
        return reader.reply()

    async def arespond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Async twin of `respond` on the SDK's async client; cancelling it closes the request."""
        if self._sdk_client is None and "_async_client" not in self.__dict__:
            await self._aload_sdk()
            try:
                await run_in_thread(lambda: self._warm(self._open()))
            except ProviderError as error:
                raise error from error.__cause__
        client = self._async_client()
        kwargs = self._request_body(request)
        reader = self._reader(on_text)
        try:
            stream = await client.models.generate_content_stream(**kwargs)
            reader.sink.opened = True
            try:
                async for chunk in stream:
                    reader.add(chunk)
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
        except _caught() as error:
            self._failed(error, reader.sink)
        return reader.reply()

    def _reader(self, on_text: OnText | None) -> _Reader:
        """What gathers one streamed reply (`add(chunk)` per chunk, then `reply()`)."""
        return _Reader(self, TextSink(on_text))

    def _failed(self, error: BaseException, sink: TextSink) -> Any:
        """Raise what a failed attempt becomes: `on_text`'s own exception as is, the rest as the library's error."""
        if error is sink.error:
            raise error
        raise self._provider_error(self._map_error(error), error) from error

    # -- errors -------------------------------------------------------------------------------------------------

    def _map_error(self, error: BaseException) -> ProviderError:
        """The library error for an SDK or transport failure."""
        from google.genai import errors

        if not isinstance(error, errors.APIError):
            if isinstance(error, errors.UnknownApiResponseError):
                return ProviderError(f"Gemini API sent a response that could not be read: {error}")
            return ProviderError(f"Gemini stream failed mid-reply ({type(error).__name__}): {error}")
        code = error.code  # also that of an error sent inside a stream whose HTTP status was 200
        state = error.status or ""
        text = f"{error.message or error}"
        lowered = text.lower()
        if code == 429 or state == "RESOURCE_EXHAUSTED":
            delay = _retry_delay(error)
            after = f", retry after {delay:g}s" if delay is not None else ""
            return RateLimitError(f"Gemini API rate limit ({code} {state}{after}): {text}", status_code=code)
        auth = code in (401, 403) or state in _AUTH_STATUS or _reason(error) == "API_KEY_INVALID"
        if auth or any(hint in lowered for hint in _AUTH_HINTS):
            return AuthError(f"Gemini authentication failed ({code} {state}): {text}", status_code=code)
        if code == 400 and any(hint in lowered for hint in _OVERFLOW_HINTS):
            return ContextTooLongError(f"The context exceeds the model's context window: {text}", status_code=code)
        if isinstance(error, errors.ClientError):
            return ProviderError(f"Gemini bad request ({code} {state}): {text}", status_code=code)
        return ProviderError(f"Gemini API error ({code} {state}): {text}", status_code=code)


class _Reader:
    """Gathers the streamed chunks of one reply: parts in order (streamed text parts merged), the last usage, the
    finish reason, the model version."""

    __slots__ = ("model", "sink", "blocks", "text", "thought", "usage", "finish", "version", "blocked", "response")

    def __init__(self, model: Gemini, sink: TextSink) -> None:
        self.model = model
        self.sink = sink
        self.blocks: list[Any] = []
        self.text: list[str] | None = None  # the text part being streamed
        self.thought: dict[str, Any] | None = None  # the thought part being streamed
        self.usage: Any = None
        self.finish: str | None = None
        self.version: str | None = None
        self.blocked: str | None = None
        self.response: str | None = None

    def add(self, chunk: Any) -> None:
        self.version = self.version or getattr(chunk, "model_version", None)
        self.response = self.response or getattr(chunk, "response_id", None)
        usage = getattr(chunk, "usage_metadata", None)
        if usage is not None:
            self.usage = usage
        feedback = getattr(chunk, "prompt_feedback", None)
        if feedback is not None and getattr(feedback, "block_reason", None) is not None:
            self.blocked = _name(feedback.block_reason)
        candidates = getattr(chunk, "candidates", None)
        if not candidates:
            return
        candidate = candidates[0]
        if getattr(candidate, "finish_reason", None) is not None:
            self.finish = _name(candidate.finish_reason)
        content = getattr(candidate, "content", None)
        for part in getattr(content, "parts", None) or ():
            self._part(part)

    def _part(self, part: Any) -> None:
        signature = getattr(part, "thought_signature", None)
        text = getattr(part, "text", None)
        if getattr(part, "thought", None) and text is not None:
            self._end_text()
            if self.thought is None:
                self.thought = {"thought": True, "text": ""}
            self.thought["text"] += text
            if text:
                self.sink.thinking(text)
            if signature:
                self.thought[SIGNATURE] = _b64(signature)
            return
        self._end_thought()
        if text is not None:
            if self.text is None:
                self.text = []
            if signature:
                self.blocks.append(RawBlock(self.model.provider, {SIGNATURE: _b64(signature)}))
            if text:
                self.text.append(text)
                self.sink(text)
            return
        self._end_text()
        if signature:
            self.blocks.append(RawBlock(self.model.provider, {SIGNATURE: _b64(signature)}))
        call = getattr(part, "function_call", None)
        if call is not None:
            call_id = getattr(call, "id", None) or "call_" + uuid.uuid4().hex[:12]
            self.blocks.append(ToolCall(call.name or "", checked_arguments(call.args or {}), call_id))
            return
        data = part.model_dump(mode="json", exclude_none=True)
        data.pop(SIGNATURE, None)
        self.blocks.append(RawBlock(self.model.provider, data))

    def _end_text(self) -> None:
        if self.text is not None:
            text = "".join(self.text)
            if text:
                self.blocks.append(TextBlock(text))
            self.text = None

    def _end_thought(self) -> None:
        if self.thought is not None:
            self.blocks.append(RawBlock(self.model.provider, self.thought))
            self.thought = None

    def reply(self) -> Reply:
        self._end_thought()
        self._end_text()
        model = self.model
        if self.blocked is not None:
            raise ProviderError(
                fix_message(
                    f"Gemini blocked the prompt (block reason {self.blocked}); nothing was generated",
                    "Change the request that was blocked, or the safety settings of the project",
                )
            )
        if self.finish is None:
            raise ProviderError("Gemini stream ended before its final chunk (the reply has no finish reason)")
        blocks = self.blocks
        model._truncate_if_cut_off(blocks, self.finish)
        usage, total = _usage(model, self.usage)
        observe.response_id(self.response)
        return Reply(
            Message("assistant", tuple(blocks)),
            usage,
            context_tokens=total,
            stop_reason=self.finish,
            model=self.version or model.name,
        )


def _usage(model: Model, metadata: Any) -> tuple[Any, int | None]:
    """The Usage of a reply (the prompt's cached part read from the cache; thoughts counted as output) and all
    its tokens."""
    if metadata is None:
        return priced_usage(model, 0, 0, 0, 0), None
    prompt = (getattr(metadata, "prompt_token_count", None) or 0) + (
        getattr(metadata, "tool_use_prompt_token_count", None) or 0
    )
    cached = getattr(metadata, "cached_content_token_count", None) or 0
    output = (getattr(metadata, "candidates_token_count", None) or 0) + (
        getattr(metadata, "thoughts_token_count", None) or 0
    )
    return priced_usage(model, prompt - cached, output, cached, 0), prompt + output


def _user_parts(message: Message) -> list[dict[str, Any]]:
    """A user turn's parts: function responses first (their images after them), then text and images."""
    responses: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    own: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            text, attached = _result_text(block)
            images.extend(attached)
            key = "error" if block.is_error else "output"
            responses.append(
                {"function_response": {"id": block.call_id, "name": block.name or "tool", "response": {key: text}}}
            )
        elif isinstance(block, TextBlock):
            if block.text.strip():
                own.append({"text": block.text})
        elif isinstance(block, Image):
            own.append(_image(block))
    return responses + images + own


def _result_text(block: ToolResultBlock) -> tuple[str, list[dict[str, Any]]]:
    """A tool result's text, and its images as parts (announced in the text)."""
    if isinstance(block.content, str):
        return block.content, []
    texts = [b.text for b in block.content if isinstance(b, TextBlock)]
    images = [_image(b) for b in block.content if isinstance(b, Image)]
    if images:
        count = "1 image" if len(images) == 1 else f"{len(images)} images"
        texts.append(f"({count} of this result in the parts after the function responses)")
    return "\n".join(texts), images


def _image(image: Image) -> dict[str, Any]:
    return {"inline_data": {"mime_type": image.media_type, "data": image.base64}}


def _b64(signature: Any) -> str:
    return base64.b64encode(signature).decode() if isinstance(signature, bytes) else str(signature)


def _name(value: Any) -> str:
    """An SDK enum member's name as the API spells it (`FinishReason.STOP` gives `"STOP"`)."""
    return str(getattr(value, "value", value))


_OFF = {"thinking_budget": 0}
"""The thinking config that turns thinking off."""


def _thinking_config(name: str, thinking: bool | int | str) -> dict[str, Any]:
    if thinking is False or (type(thinking) is int and thinking == 0):  # a budget of 0 turns thinking off too
        return dict(_OFF)
    if thinking is True:
        return {"include_thoughts": True}
    if isinstance(thinking, str):
        return {"thinking_level": thinking, "include_thoughts": True}
    if isinstance(thinking, int) and thinking >= -1:
        return {"thinking_budget": thinking, "include_thoughts": True}
    raise ValueError(
        fix_message(
            f"thinking={thinking!r} is not a thinking setting",
            "Pass True (thought summaries), False (off), a budget in tokens (-1: dynamic) or a level such as 'low'",
            f"Gemini({name!r}, thinking=4096)",
        )
    )


def _details(error: Any) -> list[Any]:
    body = getattr(error, "details", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        found = inner.get("details") if isinstance(inner, dict) else None
        if isinstance(found, list):
            return found
    return []


def _reason(error: Any) -> str | None:
    for detail in _details(error):
        if isinstance(detail, dict) and isinstance(detail.get("reason"), str):
            return detail["reason"]
    return None


def _retry_delay(error: Any) -> float | None:
    """The wait the API asked for, in seconds: its `RetryInfo` detail, else a `Retry-After` header."""
    for detail in _details(error):
        if isinstance(detail, dict) and isinstance(detail.get("retryDelay"), str):
            match = _DELAY.match(detail["retryDelay"])
            if match:
                return float(match.group(1))
    headers = getattr(getattr(error, "response", None), "headers", None)
    try:
        value = headers.get("retry-after") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None
