"""`OpenAIResponses`: the adapter for the OpenAI Responses API, streamed, through the official `openai` SDK.

What it sends (`client.responses.create(stream=True, ...)`):

- `instructions` = the system prompt; `input` = the conversation as Responses items: a user message per user
  text (with `input_image` parts for images), a `function_call_output` per tool result (its text, or its text
  and images as `input_text`/`input_image` parts; an error result starts with `Error: `), and for each assistant
  message its items in the order the model produced them: reasoning items exactly as received (id, summary,
  `encrypted_content`), each right before the items that followed it, `message` items for the text and
  `function_call` items for the tool calls, with the ids the API gave them.
- Stateless by default: `store=False` and `include=["reasoning.encrypted_content"]`, the full input every turn.
  `chain=True` (which stores responses) sends `previous_response_id` and only the items after that response, as
  long as everything up to and including that response is what this adapter sent and received; after a
  compaction, a restore, a fork, or in a process that did not make that response, it sends the full input.

What it returns: reasoning items (and any other item type) as `RawBlock("openai_responses", item)`, the text of
each `message` item as a `TextBlock` (a refusal's text too), each `function_call` as a `ToolCall` (id =
`call_id`), and last a `RawBlock("openai_responses", {"type": "response_ids", ...})` holding the response id,
the item ids and the reasoning token count, so a saved State can be continued (and chained) in place. Another
adapter drops these blocks, as it drops other providers' thinking.

`stop_reason` is `"completed"` (`"refusal"` when the model refused), or the reason a response is incomplete
(`"max_output_tokens"`, which counts as cut off, or `"content_filter"`). Errors are mapped as for
`OpenAICompatible`; an `error` event or `response.failed` inside the stream, and a stream that ends without its
final event, are `ProviderError`s.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from alpineagents.errors import ProviderError
from alpineagents.models._arguments import parse_arguments
from alpineagents.models._openai_sdk import OpenAIStreaming, data_url, openai_sdk, usage_of
from alpineagents.models._wire import EMPTY_REPLY, TextSink, assistant_reply, plain
from alpineagents.models.base import OnText
from alpineagents.types import Image, Message, Price, RawBlock, Reply, Request, TextBlock, ToolCall, ToolResultBlock

if TYPE_CHECKING:  # the SDK is imported on first use only (it is slow to import)
    from openai import AsyncOpenAI, OpenAI

__all__ = ["OpenAIResponses", "RESPONSE_IDS"]

RESPONSE_IDS = "response_ids"
"""The `type` of the RawBlock that records a response's id and its items' ids (never sent as an item)."""

_INCLUDE = ["reasoning.encrypted_content"]
_CHAINS_KEPT = 64
"""How many responses a chaining adapter remembers the input of (one per State it is continuing)."""


class OpenAIResponses(OpenAIStreaming["_ResponseReader"]):
    """Adapter for the OpenAI Responses API (reasoning models above all), built on the official `openai` SDK.

    `reasoning`: `None` (the model's default), an effort such as `"low"`/`"medium"`/`"high"` (sent with
    `summary="auto"`), or the API's `reasoning` dict as is. `store`: let the provider keep the responses.
    `chain`: continue from the previous response by id (turns `store` on). `client`: an `openai.OpenAI` (used by
    `respond`) or `openai.AsyncOpenAI` (used by `arespond`) to use instead of making one. Construction does no
    I/O and needs no credentials.
    """

    provider = "openai_responses"
    cut_off_stop_reasons = frozenset({"max_output_tokens"})
    _DEFAULT_SUPPORTS = frozenset({"thinking", "vision"})

    _WARM_ATTRIBUTES = ("responses",)
    _SERVICE = "OpenAI Responses API"

    def __init__(
        self,
        name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: OpenAI | AsyncOpenAI | None = None,
        reasoning: str | Mapping[str, Any] | None = None,
        store: bool = False,
        chain: bool = False,
        price: Price | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout: float | None = None,
        retries: int = 2,
        context_window: int = 400_000,
        supports: Iterable[str] | None = None,
    ) -> None:
        self._set_up_model(name, context_window, max_tokens, temperature, timeout, retries, price, supports)
        self.base_url = base_url
        self.api_key = api_key
        self.chain = bool(chain)
        """Send `previous_response_id` and only the new items while the history allows it."""
        self.store = bool(store) or self.chain
        """Whether the provider keeps the responses (`store=` sent to the API)."""
        self._reasoning: dict[str, Any] | None = None
        if reasoning is not None:
            self._check_supported("thinking", f"reasoning={reasoning!r}")
            self._reasoning = (
                {"effort": reasoning, "summary": "auto"} if isinstance(reasoning, str) else plain(dict(reasoning))
            )
        if client is not None:
            self._adopt(client)
        self._chains: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self._chains_lock = threading.Lock()

    def reasoning_tokens(self, messages: Iterable[Message]) -> int:
        """The reasoning tokens this adapter's replies among `messages` used (for example
        `model.reasoning_tokens(state.messages)`), as the API reported them.

        They are already counted in `Usage.output_tokens` and priced as output (the API bills them so); this gives
        the part of those output tokens the model spent on reasoning. A message from another adapter counts 0.
        """
        return sum(
            count
            for message in messages
            for record in _records(message, self.provider)
            if isinstance(count := record.get("reasoning_tokens"), int)
        )

    def _adopt(self, client: OpenAI | AsyncOpenAI) -> None:
        """Use the caller's SDK client: an async one for `arespond`, otherwise for `respond`."""
        self._given_client = client
        if isinstance(client, openai_sdk().AsyncOpenAI):
            self._async_client = lambda: client  # the fixed seam, replaced on the instance
        else:
            self._sdk_client = client

    # -- request mapping -----------------------------------------------------------------------------------------

    def _request_kwargs(self, request: Request) -> dict[str, Any]:
        """The keyword arguments of `client.responses.create(...)` for `request` (the full input)."""
        return self._kwargs(request, self._input_items(request.messages))

    def _kwargs(self, request: Request, items: list[dict[str, Any]]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.name,
            "input": items,
            "stream": True,
            "store": self.store,
            "include": list(_INCLUDE),
        }
        if request.system is not None:
            kwargs["instructions"] = request.system
        if request.tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": plain(spec.input_schema),
                    "strict": False,
                }
                for spec in request.tools
            ]
            if request.tool_choice == "none":
                kwargs["tool_choice"] = "none"
        kwargs.update(self._sampling("max_output_tokens"))
        if self._reasoning is not None:
            kwargs["reasoning"] = plain(self._reasoning)
        return kwargs

    def _input_items(self, messages: tuple[Message, ...]) -> list[dict[str, Any]]:
        """The conversation as Responses input items: `_wire_message` of each message merged by
        `_merge_same_role`, in order, the unchanged start of a conversation reused from the previous request (see
        `_request_cache`; what an item holds depends on `store` too)."""
        return self._conversation(messages)

    def _wire_settings(self) -> tuple[str, bool]:
        """What an item holds depends on `store` too (a reasoning item without its encrypted content is sent only
        while responses are stored)."""
        return (self.provider, self.store)

    def _wire_message(self, message: Message) -> list[dict[str, Any]]:
        """One message (a merged run of same-role messages) as input items."""
        if message.role == "assistant":
            return self._assistant_items(message)
        return _user_items(message)

    def _assistant_items(self, message: Message) -> list[dict[str, Any]]:
        """One assistant message as items, in the order the model produced them, with the API's item ids."""
        message_ids, call_ids = _recorded_ids(message, self.provider)
        items: list[dict[str, Any]] = []
        dropped = False
        for block in message.content:
            if isinstance(block, TextBlock):
                items.append(_assistant_text(block.text, next(message_ids, None)))
            elif isinstance(block, ToolCall):
                item: dict[str, Any] = {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": json.dumps(block.args, ensure_ascii=False),
                }
                item_id = call_ids.get(block.id)
                if item_id is not None:
                    item["id"] = item_id
                items.append(item)
            elif isinstance(block, RawBlock):
                if block.provider != self.provider or not self._sendable(block.data):
                    dropped = True
                elif block.data.get("type") != RESPONSE_IDS:
                    items.append(plain(block.data))
        if not items and not dropped:
            items.append(_assistant_text(EMPTY_REPLY, None))
        return items

    def _sendable(self, item: Mapping[str, Any]) -> bool:
        """Whether an output item can go back: a reasoning item without its encrypted content can only be found
        by its id in a stored response, so it is dropped while responses are not stored."""
        return self.store or item.get("type") != "reasoning" or bool(item.get("encrypted_content"))

    # -- chaining ------------------------------------------------------------------------------------------------

    def _prepared(self, request: Request, on_text: OnText | None) -> tuple[dict[str, Any], _ResponseReader]:
        items = self._input_items(request.messages)
        kwargs = self._kwargs(request, items)
        if self.chain:
            previous = self._chain_point(request.messages, items)
            if previous is not None:
                response_id, length = previous
                kwargs["previous_response_id"] = response_id
                kwargs["input"] = items[length:]
        return kwargs, _ResponseReader(on_text, items if self.chain else None)

    def _chain_point(self, messages: tuple[Message, ...], items: list[dict[str, Any]]) -> tuple[str, int] | None:
        """The latest response of the conversation and how many leading `items` it already holds, when this
        adapter made it and every item up to it is unchanged; else `None` (send the full input)."""
        for message in reversed(messages):
            if message.role != "assistant":
                continue
            response_id = _response_id(message, self.provider)
            if response_id is None:
                return None
            with self._chains_lock:
                known = self._chains.get(response_id)
            if known is None or items[: len(known)] != known:
                return None
            return response_id, len(known)
        return None

    def _remember(self, reader: _ResponseReader, reply: Reply) -> None:
        """Record what a response holds (its input and its output items), for the next request to chain on."""
        response_id = _response_id(reply.message, self.provider)
        if reader.items is None or response_id is None:
            return
        known = reader.items + self._assistant_items(reply.message)
        with self._chains_lock:
            self._chains[response_id] = known
            while len(self._chains) > _CHAINS_KEPT:
                self._chains.popitem(last=False)

    # -- streaming -----------------------------------------------------------------------------------------------

    _PATH = "/responses"

    def _stream_types(self) -> tuple[type, type]:
        from openai.types.responses import Response, ResponseStreamEvent

        return Response, ResponseStreamEvent  # pyright: ignore[reportReturnType] - a union of event types

    def _finish(self, reader: _ResponseReader, real_stream: bool) -> Reply:
        final = reader.final
        if final is None:
            raise ProviderError(
                "OpenAI Responses stream ended before its final event (no response.completed or "
                "response.incomplete arrived)"
            )
        reply = self._to_reply(final)
        if self.chain:
            self._remember(reader, reply)
        return reply

    # -- response mapping ----------------------------------------------------------------------------------------

    def _to_reply(self, response: Any) -> Reply:
        """The `Reply` for the final `Response` of a stream."""
        blocks: list[Any] = []
        message_ids: list[str] = []
        call_ids: dict[str, str] = {}
        refused = False
        for item in getattr(response, "output", None) or ():
            kind = getattr(item, "type", None)
            if kind == "message":
                text, refusal = _message_text(item)
                refused = refused or refusal
                if text:  # an empty message item has nothing to keep
                    blocks.append(TextBlock(text))
                    message_ids.append(getattr(item, "id", None) or "")
            elif kind == "function_call":
                call = ToolCall(item.name, parse_arguments(item.arguments or ""), item.call_id)
                blocks.append(call)
                if getattr(item, "id", None):
                    call_ids[call.id] = item.id
            else:
                blocks.append(RawBlock(self.provider, item.model_dump(mode="json", exclude_none=True)))
        stop_reason = _stop_reason(response, refused)
        self._truncate_if_cut_off(blocks, stop_reason)
        raw = getattr(response, "usage", None)
        usage, total = usage_of(self, raw, ("input_tokens", "output_tokens", "input_tokens_details"))
        reasoning_tokens = getattr(getattr(raw, "output_tokens_details", None), "reasoning_tokens", None)
        ids: dict[str, Any] = {"type": RESPONSE_IDS, "response_id": getattr(response, "id", None) or ""}
        ids["message_ids"] = message_ids
        ids["call_ids"] = call_ids
        if reasoning_tokens:
            ids["reasoning_tokens"] = reasoning_tokens
        blocks.append(RawBlock(self.provider, ids))
        return assistant_reply(
            self,
            blocks,
            usage,
            total,
            stop_reason,
            answered_by=getattr(response, "model", None),
            response_id=ids["response_id"],
        )


class _ResponseReader:
    """Follows the events of one streamed response: text and refusal deltas go to `on_text`; the final response
    is kept; an `error` event or a failed response raises."""

    __slots__ = ("sink", "final", "items", "calls")

    def __init__(self, on_text: OnText | None, items: list[dict[str, Any]] | None) -> None:
        self.sink = TextSink(on_text)
        self.final: Any = None
        self.items = items
        """The full input sent (kept only when chaining)."""
        self.calls: dict[str, tuple[str, str]] = {}
        """The function calls begun, by item id: their call id and name (for an `OnStream`)."""

    def add(self, event: Any, /) -> None:
        kind = getattr(event, "type", None)
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            delta = getattr(event, "delta", None)
            if delta:
                self.sink(delta)
        elif self.sink.pieces is not None and kind in _PIECES:
            self._piece(kind, event)
        elif kind == "response.completed" or kind == "response.incomplete":
            self.final = event.response
        elif kind == "response.failed":
            error = getattr(getattr(event, "response", None), "error", None)
            raise _stream_error(getattr(error, "message", None), getattr(error, "code", None), "failed")
        elif kind == "error":
            raise _stream_error(getattr(event, "message", None), getattr(event, "code", None), "error event")

    def _piece(self, kind: str, event: Any) -> None:
        """A piece of thinking or of a function call's arguments, for an `OnStream`."""
        if kind == "response.output_item.added":
            item = getattr(event, "item", None)
            if getattr(item, "type", None) == "function_call":
                call_id, name = item.call_id, item.name  # type: ignore[union-attr]  # a function_call item
                self.calls[item.id] = (call_id, name)  # type: ignore[union-attr]
                self.sink.tool_args(call_id, name, "")
            return
        delta = getattr(event, "delta", None)
        if not delta:
            return
        if kind == "response.function_call_arguments.delta":
            call = self.calls.get(getattr(event, "item_id", ""))
            if call is not None:
                self.sink.tool_args(call[0], call[1], delta)
        else:
            self.sink.thinking(delta)


_PIECES = frozenset(
    {
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_text.delta",
    }
)
"""The events that carry the pieces an `OnStream` takes besides text: a function call begun, its arguments, the
reasoning (its summary, or its text where the model gives it)."""


def _stream_error(message: str | None, code: str | None, what: str) -> BaseException:
    """The SDK's base error for a failure reported inside the stream, mapped like any other SDK failure (to a
    `ProviderError`). Not an `APIError`: the SDK builds those only around an HTTP request, which a reader of
    stream events does not hold."""
    text = message or f"the response stream reported an error ({what})"
    return openai_sdk().OpenAIError(f"{text} (code: {code})" if code else text)


def _message_text(item: Any) -> tuple[str, bool]:
    """The text of a `message` output item (its refusal's text, if it refused) and whether it refused."""
    parts: list[str] = []
    refused = False
    for part in getattr(item, "content", None) or ():
        kind = getattr(part, "type", None)
        if kind == "output_text":
            parts.append(getattr(part, "text", None) or "")
        elif kind == "refusal":
            parts.append(getattr(part, "refusal", None) or "")
            refused = True
    return "".join(parts), refused


def _stop_reason(response: Any, refused: bool) -> str:
    status = getattr(response, "status", None)
    if status == "incomplete":
        details = getattr(response, "incomplete_details", None)
        return getattr(details, "reason", None) or "incomplete"
    return "refusal" if refused else "completed"


def _records(message: Message, provider: str) -> list[Mapping[str, Any]]:
    """The response-ids records of an assistant message this adapter produced (a merged message may hold
    several, in order)."""
    return [
        block.data
        for block in message.content
        if isinstance(block, RawBlock) and block.provider == provider and block.data.get("type") == RESPONSE_IDS
    ]


def _response_id(message: Message, provider: str) -> str | None:
    """The id of the (latest) response an assistant message came from, if this adapter recorded one."""
    records = _records(message, provider)
    value = records[-1].get("response_id") if records else None
    return value if isinstance(value, str) and value else None


def _recorded_ids(message: Message, provider: str) -> tuple[Iterator[str], dict[str, str]]:
    """The message item ids in order, and the function-call item id of each call id, recorded in `message`."""
    message_ids: list[str] = []
    call_ids: dict[str, str] = {}
    for record in _records(message, provider):
        message_ids.extend(record.get("message_ids") or ())
        call_ids.update(record.get("call_ids") or {})
    return iter(message_ids), call_ids


def _assistant_text(text: str, item_id: str | None) -> dict[str, Any]:
    """An assistant `message` item: with its API id when known, else the short form."""
    if not item_id:
        return {"role": "assistant", "content": text}
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _image_part(image: Image) -> dict[str, Any]:
    return {"type": "input_image", "image_url": data_url(image), "detail": "auto"}


def _parts(blocks: Iterable[Any]) -> list[dict[str, Any]]:
    """Input parts in block order: one per non-empty text (texts stay apart, so none runs into the next) and one
    per image."""
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            if block.text:
                parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, Image):
            parts.append(_image_part(block))
    return parts


def _result_output(block: ToolResultBlock) -> str | list[dict[str, Any]]:
    """A tool result as a `function_call_output`'s output: its text (texts joined by lines), or input parts when
    it holds images. An error result starts with `Error: `."""
    content = block.content
    prefix = "Error: " if block.is_error else ""
    if isinstance(content, str):
        return prefix + content
    parts = _parts(content)
    if all(part["type"] == "input_text" for part in parts):
        return prefix + "\n".join(part["text"] for part in parts)
    return ([{"type": "input_text", "text": prefix}] if prefix else []) + parts


def _user_items(message: Message) -> list[dict[str, Any]]:
    """One user message as items: a `function_call_output` per tool result, then the user's own message (its
    text as a plain string when it is one text)."""
    items: list[dict[str, Any]] = []
    own: list[Any] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            items.append({"type": "function_call_output", "call_id": block.call_id, "output": _result_output(block)})
        else:
            own.append(block)
    parts = _parts(own)
    if len(parts) == 1 and parts[0]["type"] == "input_text":
        items.append({"role": "user", "content": parts[0]["text"]})
    elif parts:
        items.append({"role": "user", "content": parts})
    elif not items:
        items.append({"role": "user", "content": EMPTY_REPLY})
    return items
