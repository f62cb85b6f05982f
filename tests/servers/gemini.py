"""The Gemini API's REST stream on the local provider server (`servers.provider`).

The `google-genai` SDK is pointed at the server with `http_options={"base_url": server.url}` and posts to
`/v1beta/models/{model}:streamGenerateContent?alt=sse`. The reply is an SSE stream of `GenerateContentResponse`
chunks (`data: {json}` lines), each holding the parts produced since the previous chunk and the usage so far;
the last one carries the finish reason. A request without `alt=sse` (`:generateContent`) gets one JSON response.

    server.script(gemini_stream(["Hel", "lo"], calls=[Call("search", {"q": "x"})]))
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from servers.provider import Action, Recorded, json_body, sse, status

__all__ = [
    "Call",
    "Thought",
    "SIGNATURE",
    "gemini_chunks",
    "gemini_stream",
    "gemini_error",
    "gemini_blocked",
    "gemini_default",
    "signature_of",
]

SIGNATURE = b"opaque-thought-signature-\x00\xff"
"""The bytes of the thought signatures the server hands out (base64 on the wire)."""


def signature_of(data: bytes) -> str:
    """A signature as it travels in JSON (base64)."""
    return base64.b64encode(data).decode()


@dataclass
class Call:
    """A function call part; `id=None` sends no id (as older models do); `signature` rides on the part."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str | None = "fc_1"
    signature: bytes | None = None


@dataclass
class Thought:
    """A thought summary part with its signature."""

    text: str
    signature: bytes | None = SIGNATURE


def _usage(prompt: int, candidates: int, cached: int | None, thoughts: int | None) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + (thoughts or 0),
    }
    if cached is not None:
        usage["cachedContentTokenCount"] = cached
    if thoughts is not None:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def gemini_chunks(
    text: Iterable[str] = ("Hello",),
    *,
    thoughts: Sequence[Thought] = (),
    calls: Sequence[Call] = (),
    text_signature: bytes | None = None,
    finish_reason: str | None = "STOP",
    model: str = "gemini-test-001",
    prompt_tokens: int = 10,
    candidates_tokens: int = 5,
    cached: int | None = None,
    thoughts_tokens: int | None = None,
    with_usage: bool = True,
) -> list[dict[str, Any]]:
    """The chunks of one streamed reply: thought parts, text parts (one per chunk, the last one carrying
    `text_signature`), function calls, then the finish reason and the final usage on the last chunk."""
    parts: list[dict[str, Any]] = []
    for thought in thoughts:
        part: dict[str, Any] = {"text": thought.text, "thought": True}
        if thought.signature is not None:
            part["thoughtSignature"] = signature_of(thought.signature)
        parts.append(part)
    pieces = list(text)
    for number, piece in enumerate(pieces):
        part = {"text": piece}
        if text_signature is not None and number == len(pieces) - 1:
            part["thoughtSignature"] = signature_of(text_signature)
        parts.append(part)
    for call in calls:
        body: dict[str, Any] = {"name": call.name, "args": call.args}
        if call.id is not None:
            body["id"] = call.id
        part = {"functionCall": body}
        if call.signature is not None:
            part["thoughtSignature"] = signature_of(call.signature)
        parts.append(part)
    chunks: list[dict[str, Any]] = []
    for number, part in enumerate(parts or [None]):
        candidate: dict[str, Any] = {"index": 0}
        if part is not None:
            candidate["content"] = {"role": "model", "parts": [part]}
        last = number == max(len(parts), 1) - 1
        if last and finish_reason is not None:
            candidate["finishReason"] = finish_reason
        chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": model, "responseId": "resp_1"}
        if with_usage:
            produced = candidates_tokens if last else number + 1
            chunk["usageMetadata"] = _usage(prompt_tokens, produced, cached, thoughts_tokens if last else None)
        chunks.append(chunk)
    return chunks


def gemini_stream(
    text: Iterable[str] = ("Hello",),
    *,
    drop_after: int | None = None,
    end_after: int | None = None,
    pause: float = 0.0,
    split: bool = False,
    **kwargs: Any,
) -> Action:
    """A streamed reply (see `gemini_chunks`), optionally dropped or ended early."""
    chunks = gemini_chunks(text, **kwargs)
    return sse(
        [(None, chunk) for chunk in chunks], drop_after=drop_after, end_after=end_after, pause=pause, split=split
    )


def gemini_blocked(reason: str = "SAFETY") -> Action:
    """A stream whose prompt was blocked: `promptFeedback.blockReason` and no candidate."""
    chunk = {
        "promptFeedback": {
            "blockReason": reason,
            "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}],
        },
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        "modelVersion": "gemini-test-001",
    }
    return sse([(None, chunk)])


def gemini_error(
    code: int,
    status_name: str,
    message: str,
    *,
    retry_delay: str | None = None,
    reason: str | None = None,
    headers: dict[str, str] | None = None,
) -> Action:
    """An error in the shape of Google APIs (`{"error": {"code", "message", "status", "details"}}`);
    `retry_delay` adds a `google.rpc.RetryInfo` detail (e.g. `"0.05s"`), `reason` an `ErrorInfo` detail."""
    details: list[dict[str, Any]] = []
    if reason is not None:
        details.append(
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "googleapis.com"}
        )
    if retry_delay is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay})
    error: dict[str, Any] = {"code": code, "message": message, "status": status_name}
    if details:
        error["details"] = details
    return status(code, {"error": error}, headers=headers)


_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
}


def gemini_echo_key(code: int = 400) -> Action:
    """An error echoing the API key the request carried (`x-goog-api-key`)."""

    def act(handler: Any, request: Recorded) -> None:
        key = request.headers.get("x-goog-api-key", "")
        message = f"Incorrect API key provided: {key}. You can find your API key at https://example.test/keys."
        gemini_error(code, _STATUS_NAMES.get(code, "INTERNAL"), message)(handler, request)

    return act


def gemini_default(request: Recorded) -> Action:
    """The default success of a Gemini request: a streamed or a whole `Hello`."""
    if "alt=sse" in request.path:
        return gemini_stream()
    chunks = gemini_chunks()
    return json_body(chunks[-1])
