"""`Bedrock`: the adapter for Amazon Bedrock's Converse API, streamed, through boto3's `bedrock-runtime` client.

What it sends (`client.converse_stream(modelId=..., messages=..., ...)`):

- `messages`: one message per run of same-role messages. A user message holds its tool results first
  (`toolResult` with `status` `"success"` or `"error"`, their text and images as content), then its text and
  images. An assistant message holds its blocks in the order the model produced them: reasoning blocks exactly as
  received (text and signature, or redacted content), text, `toolUse` blocks.
- `system`: the system prompt as one text block; `toolConfig`: the tool specs (`inputSchema.json`), or placeholder
  specs for the tools the conversation used when none are given (the API requires them); `inferenceConfig`:
  `maxTokens`, `temperature`; `additionalModelRequestFields`: the model's own fields (`thinking=` gives Claude's
  `{"thinking": {"type": "enabled", "budget_tokens": n}}`).
- With `cache=True`: a `cachePoint` after the system prompt, after the tool specs and at the end of the last
  message, so the provider caches the prefix (models that support prompt caching only).

What it returns: reasoning blocks as `RawBlock("bedrock", {"reasoningContent": ...})` in the form they are sent
back in (a redacted block's bytes in base64), text as `TextBlock`, each `toolUse` as a `ToolCall`. `stop_reason` is
the API's (`"end_turn"`, `"tool_use"`, `"max_tokens"`, `"guardrail_intervened"`, `"content_filtered"`, ...).

boto3 has no async client: `arespond` runs the stream on a worker thread (the event loop is never blocked) and
closes the HTTP response when it is cancelled. Credentials come from boto3's usual chain (environment, profile,
SSO, instance role) at the first request; none of them ever appears in an error text.
"""

from __future__ import annotations

import base64
import contextvars
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from alpineagents._values.numbers import is_whole
from alpineagents.errors import AuthError, ContextTooLongError, ProviderError, RateLimitError, fix_message
from alpineagents.models._adapter import Adapter
from alpineagents.models._arguments import parse_arguments
from alpineagents.models._wire import EMPTY_REPLY, TextSink, plain, priced_usage
from alpineagents.models.base import OnEvent, OnText
from alpineagents.types import Image, Message, Price, RawBlock, Reply, Request, TextBlock, ToolCall, ToolResultBlock

if TYPE_CHECKING:
    from alpineagents.types import ToolResultContent

__all__ = ["Bedrock"]

_CACHE_POINT = {"cachePoint": {"type": "default"}}
_THROTTLED = frozenset({"throttlingexception", "servicequotaexceededexception", "toomanyrequestsexception"})
_DENIED = frozenset(
    {
        "accessdeniedexception",
        "unrecognizedclientexception",
        "expiredtokenexception",
        "invalidsignatureexception",
        "incompletesignature",
        "missingauthenticationtokenexception",
    }
)
_OVERFLOW_HINTS = ("too long", "too many tokens", "context window", "context length", "maximum context")
_STREAM_STATUS = {
    "validationexception": 400,
    "throttlingexception": 429,
    "modelstreamerrorexception": 424,
    "internalserverexception": 500,
    "serviceunavailableexception": 503,
}
"""The HTTP status the API gives each error it can also send inside a stream (where the HTTP status was 200)."""
_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}

_OPEN_STREAMS: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("bedrock_open_streams", default=None)
"""Set by `arespond` for its worker thread: the streams it opens, so that a cancel can close them."""


class Bedrock(Adapter):
    """Adapter for Amazon Bedrock's Converse API (streamed), built on boto3's `bedrock-runtime` client.

    `name` is the model id or inference profile (`"anthropic.claude-sonnet-4-5-v1:0"`,
    `"us.amazon.nova-pro-v1:0"`, an ARN). `region`: the AWS region (else boto3's configuration). `profile`: a
    profile of the AWS configuration files (else boto3's chain: environment, `AWS_PROFILE`, SSO, instance role).
    `client`: a boto3 `bedrock-runtime` client to use instead of making one. `endpoint_url`: another endpoint (a VPC endpoint,
    a local server). `thinking`: a reasoning budget in tokens for Claude models. `additional_fields`: the model's
    own request fields (`additionalModelRequestFields`), merged over the thinking field. `cache`: place cache
    points (models with prompt caching). `retries`: boto3's retries (its standard mode). Construction does no I/O
    and reads no credentials.
    """

    provider = "bedrock"
    cut_off_stop_reasons = frozenset({"max_tokens", "model_context_window_exceeded"})
    _DEFAULT_SUPPORTS = frozenset({"thinking", "cache", "vision"})
    _NAME_PREFIXES = ("bedrock/",)

    def __init__(
        self,
        name: str,
        *,
        region: str | None = None,
        profile: str | None = None,
        client: Any = None,
        endpoint_url: str | None = None,
        thinking: int | None = None,
        additional_fields: Mapping[str, Any] | None = None,
        cache: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout: float | None = None,
        retries: int = 2,
        price: Price | None = None,
        context_window: int = 200_000,
        supports: Iterable[str] | None = None,
    ) -> None:
        self._set_up_model(name, context_window, max_tokens, temperature, timeout, retries, price, supports)
        self.region = region
        self.profile = profile
        self.endpoint_url = endpoint_url
        self._fields: dict[str, Any] = {}
        if thinking is not None:
            self._check_supported("thinking", f"thinking={thinking!r}")
            if not is_whole(thinking) or thinking < 1024:
                raise ValueError(
                    fix_message(
                        f"thinking={thinking!r}, but it must be a budget of at least 1024 tokens",
                        "Give the reasoning budget in tokens (Claude models take 1024 or more), or leave it out",
                        f"Bedrock({self.name!r}, thinking=4096)",
                    )
                )
            self._fields["thinking"] = {"type": "enabled", "budget_tokens": thinking}
        if additional_fields:
            self._fields.update(plain(dict(additional_fields)))
        if cache:
            self._check_supported("cache", "cache=True")
        self.cache = bool(cache)
        self._given_client = client
        self._sdk_client: Any = client
        self._client_lock = threading.Lock()

    # -- client --------------------------------------------------------------------------------------------------

    def _client(self) -> Any:
        """The boto3 `bedrock-runtime` client, made on first use (thread-safe) and reused. It belongs to a session
        of its own, which reads the credential chain when the client is made."""
        client = self._sdk_client
        if client is None:
            with self._client_lock:
                if self._sdk_client is None:
                    import boto3.session
                    from botocore.config import Config

                    config = Config(
                        retries={"total_max_attempts": self.retries + 1, "mode": "standard"},
                        read_timeout=self.timeout if self.timeout is not None else 60,
                        connect_timeout=self.timeout if self.timeout is not None else 60,
                    )
                    kwargs: dict[str, Any] = {"config": config}
                    if self.region is not None:
                        kwargs["region_name"] = self.region
                    if self.endpoint_url is not None:
                        kwargs["endpoint_url"] = self.endpoint_url
                    session = boto3.session.Session(profile_name=self.profile)
                    self._sdk_client = session.client("bedrock-runtime", **kwargs)
                client = self._sdk_client
        return client

    def _known_secrets(self) -> list[str | None]:
        """The credentials of the client (access key, secret key, session token), to keep out of error texts."""
        signer = getattr(self._sdk_client, "_request_signer", None)
        credentials = getattr(signer, "_credentials", None)
        if credentials is None:
            return []
        try:
            frozen = credentials.get_frozen_credentials()
        except Exception:  # noqa: BLE001 - credentials that cannot be read hold nothing to redact
            return []
        return [frozen.access_key, frozen.secret_key, frozen.token]

    # -- request mapping -----------------------------------------------------------------------------------------

    def _request_body(self, request: Request) -> dict[str, Any]:
        """The request as the JSON body of Converse, with the model id (boto3 puts it in the path): bytes in
        base64, as boto3 sends them (`_converse_kwargs` gives what boto3 takes)."""
        messages = self._conversation(request.messages)
        kwargs: dict[str, Any] = {"modelId": self.name, "messages": messages}
        if request.system is not None:
            kwargs["system"] = [{"text": request.system}, *([_CACHE_POINT] if self.cache else [])]
        tools = self._tool_specs(request)
        if tools:
            kwargs["toolConfig"] = {"tools": [*tools, *([_CACHE_POINT] if self.cache else [])]}
        if self.cache and messages:
            last = messages[-1]
            messages[-1] = {**last, "content": [*last["content"], _CACHE_POINT]}
        inference = self._sampling("maxTokens")
        if inference:
            kwargs["inferenceConfig"] = inference
        if self._fields:
            kwargs["additionalModelRequestFields"] = plain(self._fields)
        return kwargs

    def _converse_kwargs(self, request: Request) -> dict[str, Any]:
        """The keyword arguments of `client.converse_stream(...)` for `request`: the body with its bytes decoded."""
        return _with_bytes(self._request_body(request))

    def _tool_specs(self, request: Request) -> list[dict[str, Any]]:
        """The tool specs (with no tools, placeholders for the tools the conversation used: the API refuses tool
        blocks without a tool config; it has no "none" choice, so `tool_choice="none"` relies on the prompt)."""
        if request.tools:
            return [
                {
                    "toolSpec": {
                        "name": spec.name,
                        "description": spec.description or spec.name,
                        "inputSchema": {"json": plain(spec.input_schema)},
                    }
                }
                for spec in request.tools
            ]
        names = sorted(
            {
                block.name
                for message in request.messages
                for block in message.content
                if isinstance(block, ToolCall | ToolResultBlock) and block.name
            }
        )
        return [{"toolSpec": {"name": n, "description": n, "inputSchema": {"json": {"type": "object"}}}} for n in names]

    def _wire_message(self, message: Message) -> list[dict[str, Any]]:
        """One message (a merged run of same-role messages) as one Converse message."""
        if message.role == "assistant":
            content = self._assistant_content(message)
        else:
            content = _user_content(message)
        if not content and all(isinstance(block, TextBlock) for block in message.content):
            content = [{"text": EMPTY_REPLY}]
        return [{"role": message.role, "content": content}]

    def _assistant_content(self, message: Message) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, TextBlock):
                if block.text.strip():
                    content.append({"text": block.text})
            elif isinstance(block, ToolCall):
                content.append({"toolUse": {"toolUseId": block.id, "name": block.name, "input": plain(block.args)}})
            elif isinstance(block, RawBlock) and block.provider == self.provider:
                content.append(plain(block.data))
        return content

    # -- respond -------------------------------------------------------------------------------------------------

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Stream one reply from the Converse API; a failure of boto3 is raised as the library's error."""
        from botocore.exceptions import BotoCoreError, ClientError
        from urllib3.exceptions import HTTPError

        reader = self._reader(on_text)
        sink = reader.sink
        try:
            client = self._client()
            kwargs = self._converse_kwargs(request)
            stream = client.converse_stream(**kwargs)["stream"]
            opened = _OPEN_STREAMS.get()
            if opened is not None:
                opened.append(stream)
            sink.opened = True
            try:
                for item in stream:
                    reader.add(item)
            finally:
                stream.close()
        except (ClientError, BotoCoreError, HTTPError) as error:  # HTTPError: the body broke off mid-stream
            raise self._wrap(error, sink.opened) from error
        except (ValueError, TypeError) as error:  # an unreadable stream or body
            if error is sink.error:
                raise
            raise self._wrap(error, sink.opened) from error
        return reader.reply()

    def _reader(self, on_text: OnText | None) -> _Reader:
        """What gathers one streamed reply (`add(event)` per event, then `reply()`)."""
        return _Reader(self, TextSink(on_text))

    async def arespond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Async twin of `respond`: the stream is read on a worker thread (boto3 has no async client), each text
        chunk handed to `on_text` on the event loop; cancelling it closes the HTTP response."""
        opened: list[Any] = []
        token = _OPEN_STREAMS.set(opened)
        try:
            return await super().arespond(request, on_text, on_event)
        except BaseException:
            for stream in opened:
                try:
                    stream.close()
                except Exception:  # noqa: BLE001 - closing a stream that already broke is fine
                    pass
            raise
        finally:
            _OPEN_STREAMS.reset(token)

    # -- errors -------------------------------------------------------------------------------------------------

    def _wrap(self, error: BaseException, opened: bool) -> ProviderError:
        """The library error for a boto3 failure (`opened`: the stream had begun), with no credential in its
        text."""
        return self._provider_error(self._map_error(error, opened), error)

    def _map_error(self, error: BaseException, opened: bool) -> ProviderError:
        from botocore.exceptions import (
            ClientError,
            NoCredentialsError,
            ParamValidationError,
            PartialCredentialsError,
            ProfileNotFound,
        )

        if isinstance(error, NoCredentialsError | PartialCredentialsError | ProfileNotFound):
            return AuthError(
                fix_message(
                    f"Bedrock authentication failed (no credentials): {error}",
                    "Give boto3 credentials the usual way: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile "
                    "(AWS_PROFILE), SSO, or an instance role; or pass client=boto3.client('bedrock-runtime', ...)",
                )
            )
        if isinstance(error, ParamValidationError | TypeError):
            return ProviderError(f"Error while building the Bedrock request: {error}")
        if not isinstance(error, ClientError):
            if isinstance(error, ValueError):
                return ProviderError(f"Bedrock sent a stream that could not be read: {error}")
            if opened:
                return ProviderError(f"Bedrock stream failed mid-reply ({type(error).__name__}): {error}")
            return ProviderError(f"Bedrock request failed ({type(error).__name__}): {error}")
        info = error.response.get("Error", {})
        code = str(info.get("Code", ""))
        message = str(info.get("Message", "")) or str(error)
        kind = code.lower()
        status = _status(error, kind)
        if kind in _THROTTLED:
            return RateLimitError(f"Bedrock throttled the request ({code}): {message}", status_code=status)
        if kind in _DENIED:
            return AuthError(f"Bedrock authentication failed ({code}): {message}", status_code=status)
        if kind == "validationexception":
            if any(hint in message.lower() for hint in _OVERFLOW_HINTS):
                text = f"The context exceeds the model's context window: {message}"
                return ContextTooLongError(text, status_code=status)
            return ProviderError(f"Bedrock rejected the request ({code}): {message}", status_code=status)
        return ProviderError(f"Bedrock API error ({code}): {message}", status_code=status)


class _Reader:
    """Gathers the events of one streamed reply: blocks by index, the stop reason, the usage."""

    __slots__ = ("model", "sink", "blocks", "stop", "usage")

    def __init__(self, model: Bedrock, sink: TextSink) -> None:
        self.model = model
        self.sink = sink
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stop: str | None = None
        self.usage: dict[str, Any] | None = None

    def _block(self, index: int, kind: str) -> dict[str, Any]:
        block = self.blocks.get(index)
        if block is None:
            block = self.blocks[index] = {"kind": kind}
        return block

    def add(self, item: dict[str, Any]) -> None:
        if "contentBlockStart" in item:
            event = item["contentBlockStart"]
            tool = event.get("start", {}).get("toolUse")
            if tool is not None:
                block = self._block(event.get("contentBlockIndex", 0), "tool")
                block.update(id=tool.get("toolUseId", ""), name=tool.get("name", ""), input=[])
                self.sink.tool_args(block["id"], block["name"], "")
        elif "contentBlockDelta" in item:
            event = item["contentBlockDelta"]
            self._delta(event.get("contentBlockIndex", 0), event.get("delta", {}))
        elif "messageStop" in item:
            self.stop = item["messageStop"].get("stopReason")
        elif "metadata" in item:
            self.usage = item["metadata"].get("usage")

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        if "text" in delta:
            self._block(index, "text").setdefault("text", []).append(delta["text"])
            self.sink(delta["text"])
        elif "toolUse" in delta:
            block = self._block(index, "tool")
            piece = delta["toolUse"].get("input", "")
            block.setdefault("input", []).append(piece)
            if piece:
                self.sink.tool_args(block.get("id", ""), block.get("name", ""), piece)
        elif "reasoningContent" in delta:
            block = self._block(index, "reasoning")
            part = delta["reasoningContent"]
            if "text" in part:
                block.setdefault("text", []).append(part["text"])
                self.sink.thinking(part["text"])
            if "signature" in part:
                block["signature"] = part["signature"]
            if "redactedContent" in part:
                block["redacted"] = block.get("redacted", b"") + part["redactedContent"]

    def reply(self) -> Reply:
        if self.stop is None:
            raise ProviderError("Bedrock stream ended before its messageStop event (the reply has no stop reason)")
        model = self.model
        blocks: list[Any] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block["kind"] == "text":
                text = "".join(block.get("text", ()))
                if text:
                    blocks.append(TextBlock(text))
            elif block["kind"] == "tool":
                args = parse_arguments("".join(block.get("input", ())))
                blocks.append(ToolCall(block.get("name", ""), args, block.get("id", "")))
            else:
                blocks.append(RawBlock(model.provider, _reasoning(block)))
        model._truncate_if_cut_off(blocks, self.stop)
        counts = (0, 0, 0, 0)
        total: int | None = None
        if self.usage is not None:
            usage = self.usage
            counts = (
                usage.get("inputTokens") or 0,
                usage.get("outputTokens") or 0,
                usage.get("cacheReadInputTokens") or 0,
                usage.get("cacheWriteInputTokens") or 0,
            )
            total = sum(counts)
        return Reply(
            Message("assistant", tuple(blocks)),
            priced_usage(model, *counts),
            context_tokens=total,
            stop_reason=self.stop,
            model=model.name,
        )


def _status(error: Any, kind: str) -> int | None:
    """The HTTP status of a boto3 error: the response's, or for an error sent inside the stream (after a 200) the
    one the API gives that error."""
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if isinstance(status, int) and status != 200:
        return status
    return _STREAM_STATUS.get(kind)


def _reasoning(block: dict[str, Any]) -> dict[str, Any]:
    """A reasoning block in the form it is sent back in (redacted bytes kept in base64, as JSON can hold them)."""
    if "redacted" in block:
        return {"reasoningContent": {"redactedContent": base64.b64encode(block["redacted"]).decode()}}
    text: dict[str, Any] = {"text": "".join(block.get("text", ()))}
    if "signature" in block:
        text["signature"] = block["signature"]
    return {"reasoningContent": {"reasoningText": text}}


def _with_bytes(body: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of `client.converse_stream` for a request body: boto3 takes bytes where the JSON holds
    base64 (images, redacted reasoning), so the blocks holding them are copied with their bytes decoded (the kept
    wire form is left as it is)."""
    messages = []
    for message in body["messages"]:
        content = message["content"]
        if any(_has_bytes(block) for block in content):
            message = {**message, "content": [_decoded(block) for block in content]}
        messages.append(message)
    return {**body, "messages": messages}


def _has_bytes(block: dict[str, Any]) -> bool:
    if "image" in block:
        return True
    if "toolResult" in block:
        return any("image" in part for part in block["toolResult"]["content"])
    reasoning = block.get("reasoningContent")
    return isinstance(reasoning, dict) and "redactedContent" in reasoning


def _decoded(block: dict[str, Any]) -> dict[str, Any]:
    """A block with the base64 text of its image or redacted reasoning decoded to bytes (a copy)."""
    if "image" in block:
        image = block["image"]
        return {"image": {**image, "source": {"bytes": base64.b64decode(image["source"]["bytes"])}}}
    if "toolResult" in block:
        result = block["toolResult"]
        return {"toolResult": {**result, "content": [_decoded(part) for part in result["content"]]}}
    reasoning = block.get("reasoningContent")
    if isinstance(reasoning, dict) and "redactedContent" in reasoning:
        return {"reasoningContent": {"redactedContent": base64.b64decode(reasoning["redactedContent"])}}
    return block


def _user_content(message: Message) -> list[dict[str, Any]]:
    """A user message's content: tool results first, then text and images."""
    results: list[dict[str, Any]] = []
    own: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            results.append(
                {
                    "toolResult": {
                        "toolUseId": block.call_id,
                        "content": _result_content(block.content),
                        "status": "error" if block.is_error else "success",
                    }
                }
            )
        elif isinstance(block, TextBlock):
            if block.text.strip():
                own.append({"text": block.text})
        elif isinstance(block, Image):
            own.append(_image(block))
    return results + own


def _result_content(content: ToolResultContent) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content or EMPTY_REPLY}]
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextBlock) and block.text.strip():
            parts.append({"text": block.text})
        elif isinstance(block, Image):
            parts.append(_image(block))
    return parts or [{"text": EMPTY_REPLY}]


def _image(image: Image) -> dict[str, Any]:
    return {"image": {"format": _FORMATS.get(image.media_type or "", "png"), "source": {"bytes": image.base64}}}
