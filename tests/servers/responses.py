"""The OpenAI Responses API for the fake provider server: streamed (SSE) and plain JSON responses.

A response is built from output items in the order the model produced them:

    responses_stream(Reasoning("rs_1", ["Let me think."]), Text(["Hel", "lo"]),
                     FunctionCallOut("search", '{"q": "x"}', call_id="call_1"))

`status="incomplete"` with `reason=` ends it as `response.incomplete`; `fail=` ends it as `response.failed`;
`error_event=` ends it with an `error` event; `drop_after`/`end_after` cut the stream (see `sse`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from servers.provider import Action, Recorded, json_body, sse

__all__ = [
    "Text",
    "Refusal",
    "Reasoning",
    "FunctionCallOut",
    "responses_events",
    "responses_stream",
    "responses_json",
    "responses_default",
]


@dataclass
class Text:
    """A `message` output item streamed in `parts`."""

    parts: Sequence[str] = ("Hello",)
    id: str = "msg_1"


@dataclass
class Refusal:
    """A `message` output item whose content is a refusal."""

    text: str = "I can't help with that."
    id: str = "msg_r"


@dataclass
class Reasoning:
    """A `reasoning` output item with its summary texts and encrypted content."""

    id: str = "rs_1"
    summary: Sequence[str] = ("Thinking it over.",)
    encrypted_content: str | None = "gAAAAB-encrypted-1"


@dataclass
class FunctionCallOut:
    """A `function_call` output item; its arguments are streamed in `parts` (default: in two halves)."""

    name: str
    arguments: str
    call_id: str = "call_1"
    id: str = "fc_1"
    parts: Sequence[str] | None = field(default=None)


Item = Text | Refusal | Reasoning | FunctionCallOut


def _done_item(item: Item) -> dict[str, Any]:
    if isinstance(item, Text):
        content = [{"type": "output_text", "text": "".join(item.parts), "annotations": [], "logprobs": []}]
        return {"type": "message", "id": item.id, "role": "assistant", "status": "completed", "content": content}
    if isinstance(item, Refusal):
        content = [{"type": "refusal", "refusal": item.text}]
        return {"type": "message", "id": item.id, "role": "assistant", "status": "completed", "content": content}
    if isinstance(item, Reasoning):
        data: dict[str, Any] = {
            "type": "reasoning",
            "id": item.id,
            "summary": [{"type": "summary_text", "text": text} for text in item.summary],
        }
        if item.encrypted_content is not None:
            data["encrypted_content"] = item.encrypted_content
        return data
    return {
        "type": "function_call",
        "id": item.id,
        "call_id": item.call_id,
        "name": item.name,
        "arguments": item.arguments,
        "status": "completed",
    }


class _Sequence:
    """Numbers the events of one stream."""

    def __init__(self) -> None:
        self.events: list[tuple[str | None, Any]] = []

    def add(self, kind: str, **data: Any) -> None:
        self.events.append((kind, {"type": kind, "sequence_number": len(self.events), **data}))


def _stream_item(seq: _Sequence, index: int, item: Item) -> None:
    done = _done_item(item)
    if isinstance(item, Text | Refusal):
        seq.add("response.output_item.added", output_index=index, item={**done, "status": "in_progress", "content": []})
        part = {"type": "output_text", "text": "", "annotations": []} if isinstance(item, Text) else done["content"][0]
        seq.add("response.content_part.added", item_id=item.id, output_index=index, content_index=0, part=part)
        if isinstance(item, Text):
            for piece in item.parts:
                seq.add(
                    "response.output_text.delta",
                    item_id=item.id,
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
        else:
            seq.add("response.refusal.delta", item_id=item.id, output_index=index, content_index=0, delta=item.text)
    elif isinstance(item, Reasoning):
        seq.add("response.output_item.added", output_index=index, item={**done, "summary": []})
        for number, text in enumerate(item.summary):
            seq.add(
                "response.reasoning_summary_text.delta",
                item_id=item.id,
                output_index=index,
                summary_index=number,
                delta=text,
            )
    else:
        seq.add(
            "response.output_item.added", output_index=index, item={**done, "arguments": "", "status": "in_progress"}
        )
        half = len(item.arguments) // 2
        parts = item.parts if item.parts is not None else [item.arguments[:half], item.arguments[half:]]
        for piece in parts:
            seq.add("response.function_call_arguments.delta", item_id=item.id, output_index=index, delta=piece)
        seq.add("response.function_call_arguments.done", item_id=item.id, output_index=index, arguments=item.arguments)
    seq.add("response.output_item.done", output_index=index, item=done)


def _response(
    items: Sequence[Item],
    *,
    response_id: str,
    model: str,
    status: str,
    reason: str | None,
    error: dict[str, Any] | None,
    usage: dict[str, Any] | None,
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1,
        "model": model,
        "status": status,
        "output": [_done_item(item) for item in items],
        "incomplete_details": {"reason": reason} if reason else None,
        "error": error,
        "usage": usage,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def _usage(input_tokens: int, output_tokens: int, cached: int, reasoning: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }


def responses_events(
    *items: Item,
    response_id: str = "resp_1",
    model: str = "gpt-test-2026",
    status: str = "completed",
    reason: str | None = None,
    fail: tuple[str, str] | None = None,
    error_event: tuple[str, str] | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cached_tokens: int = 0,
    reasoning_tokens: int = 0,
    with_usage: bool = True,
) -> list[tuple[str | None, Any]]:
    """The SSE events of one streamed response (by default one text item, "Hello")."""
    if not items:
        items = (Text(),)
    usage = _usage(input_tokens, output_tokens, cached_tokens, reasoning_tokens) if with_usage else None
    seq = _Sequence()
    start = _response(
        (), response_id=response_id, model=model, status="in_progress", reason=None, error=None, usage=None
    )
    seq.add("response.created", response=start)
    seq.add("response.in_progress", response=start)
    for index, item in enumerate(items):
        _stream_item(seq, index, item)
    if error_event is not None:
        seq.add("error", code=error_event[0], message=error_event[1], param=None)
        return seq.events
    if fail is not None:
        error = {"code": fail[0], "message": fail[1]}
        failed = _response(
            items, response_id=response_id, model=model, status="failed", reason=None, error=error, usage=usage
        )
        seq.add("response.failed", response=failed)
        return seq.events
    final = _response(
        items, response_id=response_id, model=model, status=status, reason=reason, error=None, usage=usage
    )
    seq.add("response.incomplete" if status == "incomplete" else "response.completed", response=final)
    return seq.events


def responses_stream(
    *items: Item, drop_after: int | None = None, end_after: int | None = None, pause: float = 0.0, **kwargs: Any
) -> Action:
    """A streamed response (see `responses_events`), optionally dropped or ended early."""
    return sse(responses_events(*items, **kwargs), drop_after=drop_after, end_after=end_after, pause=pause)


def responses_json(*items: Item, **kwargs: Any) -> Action:
    """A response as one JSON body (a request with `stream` off)."""
    events = responses_events(*items, **kwargs)
    return json_body(events[-1][1]["response"])


def responses_default(request: Recorded) -> Action:
    """The server's answer to a Responses request with nothing scripted: "Hello", streamed or as JSON."""
    body = request.body if isinstance(request.body, dict) else {}
    return responses_stream() if body.get("stream") else responses_json()
