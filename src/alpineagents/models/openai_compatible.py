"""`OpenAICompatible`: the adapter for servers speaking the OpenAI Chat Completions API ."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterable
from typing import Any

from alpineagents.errors import ProviderError
from alpineagents.models._arguments import parse_arguments
from alpineagents.models._openai_sdk import OpenAIStreaming, data_url, usage_of
from alpineagents.models._wire import EMPTY_REPLY, TextSink, assistant_reply, plain
from alpineagents.models.base import OnText
from alpineagents.types import Image, Message, Price, RawBlock, Reply, Request, TextBlock, ToolCall, ToolResultBlock

__all__ = ["OpenAICompatible"]

_COMPLETION_TOKENS_NAME = re.compile(r"^o\d")


class OpenAICompatible(OpenAIStreaming["_StreamReader"]):
    """Adapter for any server speaking the OpenAI Chat Completions API (OpenAI, Ollama, vLLM, OpenRouter, ...).

    Construction does no I/O and needs no credentials; the SDK client is created on the first request.
    """

    provider = "openai_compatible"
    cut_off_stop_reasons = frozenset({"length"})

    _WARM_ATTRIBUTES = ("chat.completions",)
    _SERVICE = "OpenAI-compatible API"

    def __init__(
        self,
        name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout: float | None = None,
        retries: int = 2,
        price: Price | None = None,
        context_window: int = 128_000,
        supports: Iterable[str] | None = None,
    ) -> None:
        self._set_up_model(name, context_window, max_tokens, temperature, timeout, retries, price, supports)
        self.base_url = base_url
        self.api_key = api_key

    # -- request mapping ---------------------------------------------------------------------------------------

    def _request_kwargs(self, request: Request) -> dict[str, Any]:
        """The keyword arguments of `client.chat.completions.create(...)` for `request`."""
        messages = self._conversation(request.messages)
        if request.system is not None:
            messages = messages.prefixed({"role": "system", "content": request.system})
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": spec.name,
                        "description": spec.description,
                        "parameters": spec.input_schema,
                    },
                }
                for spec in request.tools
            ]
            if request.tool_choice == "none":
                kwargs["tool_choice"] = "none"
        cap = "max_completion_tokens" if _COMPLETION_TOKENS_NAME.match(self.name) else "max_tokens"
        kwargs.update(self._sampling(cap))
        return kwargs

    def _wire_message(self, message: Message) -> list[dict[str, Any]]:
        """One message (a merged run of same-role messages) as the API's messages. The request's messages are the
        system prompt's, then these, in order, for the messages merged by `_merge_same_role`; the unchanged start of
        a conversation is reused from the previous request (see `_request_cache`)."""
        if message.role == "assistant":
            return [self._assistant_message(message)]
        return _user_messages(message)

    def _assistant_message(self, message: Message) -> dict[str, Any]:
        """One assistant message in the API's shape (text, own RawBlock keys, tool calls)."""
        calls = message.tool_calls
        text = message.text
        result: dict[str, Any] = {
            "role": "assistant",
            "content": text if text else (None if calls else EMPTY_REPLY),
        }
        for block in message.content:
            if isinstance(block, RawBlock) and block.provider == self.provider:
                result.update(plain(block.data))
        if calls:
            result["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.args, ensure_ascii=False)},
                }
                for call in calls
            ]
        return result

    # -- streaming ----------------------------------------------------------------------------------------------

    _PATH = "/chat/completions"

    def _stream_types(self) -> tuple[type, type]:
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        return ChatCompletion, ChatCompletionChunk

    def _prepared(self, request: Request, on_text: OnText | None) -> tuple[dict[str, Any], _StreamReader]:
        return self._request_kwargs(request), _StreamReader(on_text)

    def _finish(self, reader: _StreamReader, real_stream: bool) -> Reply:
        if real_stream and reader.finish_reason is None:
            raise ProviderError(
                "OpenAI-compatible stream ended before its final chunk (the reply has no finish_reason)"
            )
        return reader.reply(self)


class _StreamReader:
    """Accumulates the chunks of one streamed chat completion."""

    __slots__ = ("sink", "text", "reasoning", "calls", "finish_reason", "usage", "model", "response_id")

    def __init__(self, on_text: OnText | None) -> None:
        self.sink = TextSink(on_text)
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, list[Any]] = {}
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.model: str | None = None
        self.response_id: str | None = None

    def add(self, chunk: Any) -> None:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage
        if not self.model:
            self.model = getattr(chunk, "model", None) or None
            self.response_id = getattr(chunk, "id", None) or None
        choices = getattr(chunk, "choices", None)
        if not choices:
            return
        choice = choices[0]
        finish = getattr(choice, "finish_reason", None)
        if finish:
            self.finish_reason = finish
        delta = getattr(choice, "delta", None)
        if delta is None:
            return
        content = getattr(delta, "content", None)
        if content:
            self.text.append(content)
            self.sink(content)
        reasoning = getattr(delta, "reasoning_content", None)
        if reasoning:
            self.reasoning.append(reasoning)
            self.sink.thinking(reasoning)
        for item in getattr(delta, "tool_calls", None) or ():
            self._call_piece(item)

    def _call_piece(self, item: Any) -> None:
        """One streamed piece of a tool call (`index`, maybe its `id`, its function's name and arguments). The
        call's id is fixed when its name is first known: the server's, or a new one when the server gave none;
        from then on its argument pieces go to an `OnStream` as they come."""
        index = getattr(item, "index", None) or 0
        slot = self.calls.get(index)
        if slot is None:
            slot = self.calls[index] = [None, [], []]
        call_id = getattr(item, "id", None)
        if call_id and not slot[1]:
            slot[0] = call_id
        function = getattr(item, "function", None)
        if function is None:
            return
        name = getattr(function, "name", None)
        arguments = getattr(function, "arguments", None) or ""
        named = bool(slot[1])
        if name:
            if not named and slot[0] is None:
                slot[0] = new_call_id()
            slot[1].append(name)
        if arguments:
            slot[2].append(arguments)
        if self.sink.pieces is not None and slot[1]:
            if not named:  # the call's first piece: what came of its arguments so far (maybe nothing)
                self.sink.tool_args(slot[0], "".join(slot[1]), "".join(slot[2]))
            elif arguments:
                self.sink.tool_args(slot[0], "".join(slot[1]), arguments)

    def reply(self, model: OpenAICompatible) -> Reply:
        blocks: list[Any] = []
        if self.reasoning:
            blocks.append(RawBlock(model.provider, {"reasoning_content": "".join(self.reasoning)}))
        text = "".join(self.text)
        if text:
            blocks.append(TextBlock(text))
        for index in sorted(self.calls):
            call_id, name_parts, arg_parts = self.calls[index]
            args = parse_arguments("".join(arg_parts))
            blocks.append(ToolCall("".join(name_parts), args, call_id or new_call_id()))
        model._truncate_if_cut_off(blocks, self.finish_reason)  # pyright: ignore[reportPrivateUsage] - its adapter
        usage, total = usage_of(model, self.usage, ("prompt_tokens", "completion_tokens", "prompt_tokens_details"))
        return assistant_reply(
            model, blocks, usage, total, self.finish_reason, answered_by=self.model, response_id=self.response_id
        )


def new_call_id() -> str:
    """The id of a call the server gave none: `"call_"` and 12 random hex digits."""
    return "call_" + secrets.token_hex(6)


def _image_part(image: Image) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(image)}}


def _own_parts(blocks: Iterable[Any]) -> tuple[list[dict[str, Any]], bool]:
    """The user's own content parts (adjacent texts merged, empty texts dropped) and whether any is an image."""
    parts: list[dict[str, Any]] = []
    pending: list[str] = []
    has_image = False

    def flush() -> None:
        if pending:
            text = "".join(pending)
            pending.clear()
            if text:
                parts.append({"type": "text", "text": text})

    for block in blocks:
        if isinstance(block, TextBlock):
            pending.append(block.text)
        elif isinstance(block, Image):
            flush()
            parts.append(_image_part(block))
            has_image = True
    flush()
    return parts, has_image


def _user_messages(message: Message) -> list[dict[str, Any]]:
    """One user message in the API's shape: a tool message per result, then at most one user message."""
    out: list[dict[str, Any]] = []
    result_images: list[dict[str, Any]] = []
    own: list[Any] = []
    for block in message.content:
        if not isinstance(block, ToolResultBlock):
            own.append(block)
            continue
        content = block.content
        if isinstance(content, str):
            text = content
        else:
            lines = [b.text for b in content if isinstance(b, TextBlock)]
            images = [b for b in content if isinstance(b, Image)]
            count = len(images)
            label = "1 image" if count == 1 else f"{count} images"
            lines.append(f"({label} in the next user message, inside <tool_result> tags)")
            text = "\n".join(lines)
            if images:
                result_images.append(
                    {"type": "text", "text": f'<tool_result tool_name="{block.name}" tool_call_id="{block.call_id}">'}
                )
                result_images.extend(_image_part(image) for image in images)
                result_images.append({"type": "text", "text": "</tool_result>"})
        if block.is_error:
            text = "Error: " + text
        out.append({"role": "tool", "tool_call_id": block.call_id, "content": text})
    parts, has_image = _own_parts(own)
    if result_images or has_image:
        out.append({"role": "user", "content": result_images + parts})
    elif parts:
        out.append({"role": "user", "content": parts[0]["text"]})
    return out
