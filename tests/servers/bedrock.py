"""Amazon Bedrock's Converse stream on the local provider server (`servers.provider`), in the AWS event-stream
binary framing.

boto3's `bedrock-runtime` client is pointed at the server with `endpoint_url=server.url` and posts to
`/model/{model id}/converse-stream` (signed with SigV4; the server does not check signatures). The reply is a
body of event-stream messages, each framed as

    [total length u32][headers length u32][CRC32 of the 8 bytes before][headers][payload][CRC32 of all before]

(big-endian), whose headers name the event (`:event-type`, `:message-type=event`) and whose payload is the
event's JSON. An error inside the stream is a message with `:message-type=exception` and `:exception-type`. botocore
checks both CRCs, so a frame written wrong fails the client, and the tests read every frame through its decoder.

    server.script(bedrock_stream(["Hel", "lo"], tools=[ToolUseOut("search", ['{"q":', '"x"}'])]))

Claude's own Messages stream over Bedrock (`/model/{id}/invoke-with-response-stream`, used by
`anthropic.AnthropicBedrock`) is served too, in the same framing (`claude_stream`).
"""

from __future__ import annotations

import base64
import json
import struct
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from servers.provider import Action, Recorded

__all__ = [
    "ToolUseOut",
    "frame",
    "event",
    "exception",
    "bedrock_events",
    "bedrock_stream",
    "bedrock_error",
    "bedrock_default",
    "bedrock_echo_credentials",
    "claude_stream",
]


def _header(name: str, value: str) -> bytes:
    raw_name = name.encode()
    raw_value = value.encode()
    return bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: the prelude with its CRC, string headers, the payload, the message CRC."""
    head = b"".join(_header(name, value) for name, value in headers.items())
    prelude = struct.pack(">II", 12 + len(head) + len(payload) + 4, len(head))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + head + payload
    return message + struct.pack(">I", zlib.crc32(message))


def event(kind: str, data: dict[str, Any]) -> bytes:
    """An event message (`contentBlockDelta`, `messageStop`, ...) with its JSON payload."""
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(data).encode())


def exception(code: str, message: str) -> bytes:
    """An error inside the stream (`throttlingException`, `modelStreamErrorException`, ...)."""
    headers = {":exception-type": code, ":content-type": "application/json", ":message-type": "exception"}
    return frame(headers, json.dumps({"message": message}).encode())


@dataclass
class ToolUseOut:
    """A toolUse block to stream: `parts` are the pieces of its input JSON."""

    name: str
    parts: Sequence[str]
    id: str = "tooluse_1"


def bedrock_events(
    text: Iterable[str] = ("Hello",),
    *,
    reasoning: Sequence[str] = (),
    signature: str | None = "reasoning-signature",
    redacted: bytes | None = None,
    tools: Sequence[ToolUseOut] = (),
    stop_reason: str | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int | None = None,
    cache_write: int | None = None,
    with_metadata: bool = True,
) -> list[bytes]:
    """The frames of one streamed Converse reply: [reasoning], text, tool uses, the stop, the usage."""
    frames = [event("messageStart", {"role": "assistant"})]
    index = 0
    if reasoning or redacted is not None:
        for piece in reasoning:
            frames.append(
                event("contentBlockDelta", {"delta": {"reasoningContent": {"text": piece}}, "contentBlockIndex": index})
            )
        if signature is not None and reasoning:
            frames.append(
                event(
                    "contentBlockDelta",
                    {"delta": {"reasoningContent": {"signature": signature}}, "contentBlockIndex": index},
                )
            )
        frames.append(event("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
        if redacted is not None:
            data = base64.b64encode(redacted).decode()
            frames.append(
                event(
                    "contentBlockDelta",
                    {"delta": {"reasoningContent": {"redactedContent": data}}, "contentBlockIndex": index},
                )
            )
            frames.append(event("contentBlockStop", {"contentBlockIndex": index}))
            index += 1
    pieces = list(text)
    if pieces:
        for piece in pieces:
            frames.append(event("contentBlockDelta", {"delta": {"text": piece}, "contentBlockIndex": index}))
        frames.append(event("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    for tool in tools:
        start = {"toolUse": {"toolUseId": tool.id, "name": tool.name}}
        frames.append(event("contentBlockStart", {"start": start, "contentBlockIndex": index}))
        for part in tool.parts:
            delta = {"toolUse": {"input": part}}
            frames.append(event("contentBlockDelta", {"delta": delta, "contentBlockIndex": index}))
        frames.append(event("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    if stop_reason is None:
        stop_reason = "tool_use" if tools else "end_turn"
    frames.append(event("messageStop", {"stopReason": stop_reason}))
    if with_metadata:
        usage: dict[str, Any] = {
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "totalTokens": input_tokens + output_tokens + (cache_read or 0) + (cache_write or 0),
        }
        if cache_read is not None:
            usage["cacheReadInputTokens"] = cache_read
        if cache_write is not None:
            usage["cacheWriteInputTokens"] = cache_write
        frames.append(event("metadata", {"usage": usage, "metrics": {"latencyMs": 42}}))
    return frames


def _send_frames(
    frames: Sequence[bytes],
    *,
    drop_after: int | None = None,
    end_after: int | None = None,
    pause: float = 0.0,
    split: bool = False,
) -> Action:
    def act(handler: Any, request: Recorded) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "application/vnd.amazon.eventstream")
        handler.send_header("x-amzn-requestid", "req-1")
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        for number, data in enumerate(frames):
            if drop_after is not None and number >= drop_after:
                handler.drop()
                return
            if end_after is not None and number >= end_after:
                break
            if split and len(data) > 2:
                handler.write_chunk(data[: len(data) // 2])
                handler.write_chunk(data[len(data) // 2 :])
            else:
                handler.write_chunk(data)
            if pause:
                time.sleep(pause)
        handler.write_chunk(b"")

    return act


def bedrock_stream(
    text: Iterable[str] = ("Hello",),
    *,
    drop_after: int | None = None,
    end_after: int | None = None,
    error_after: tuple[int, str, str] | None = None,
    pause: float = 0.0,
    split: bool = False,
    **kwargs: Any,
) -> Action:
    """A streamed Converse reply (see `bedrock_events`); `error_after=(n, code, message)` puts an exception
    message after the first n frames and ends the stream there."""
    frames = bedrock_events(text, **kwargs)
    if error_after is not None:
        count, code, message = error_after
        frames = [*frames[:count], exception(code, message)]
    return _send_frames(frames, drop_after=drop_after, end_after=end_after, pause=pause, split=split)


def bedrock_error(code: int, kind: str, message: str) -> Action:
    """An error before the stream starts, as the service sends it (`x-amzn-ErrorType` and a JSON body)."""

    def act(handler: Any, request: Recorded) -> None:
        payload = json.dumps({"message": message}).encode()
        handler.send_response(code)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        handler.send_header("x-amzn-errortype", f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/")
        handler.send_header("x-amzn-requestid", "req-err")
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()

    return act


_EXCEPTIONS = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    409: "ConflictException",
    429: "ThrottlingException",
}


def bedrock_echo_credentials(code: int = 403) -> Action:
    """An error echoing the signature header the request carried (access key id included) and its session token,
    as a proxy might."""

    def act(handler: Any, request: Recorded) -> None:
        header = request.headers.get("authorization", "")
        token = request.headers.get("x-amz-security-token", "")
        kind = _EXCEPTIONS.get(code, "InternalServerException")
        bedrock_error(code, kind, f"Incorrect API key provided: {header} {token}")(handler, request)

    return act


def claude_stream(text: Iterable[str] = ("Hello",), *, drop_after: int | None = None, **kwargs: Any) -> Action:
    """Claude's Messages stream as Bedrock's InvokeModelWithResponseStream sends it (what `anthropic.AnthropicBedrock`
    reads): each event of `anthropic_events` in a `chunk` frame whose `bytes` is the event's JSON in base64."""
    from servers.provider import anthropic_events

    frames = [
        event("chunk", {"bytes": base64.b64encode(json.dumps(data).encode()).decode()})
        for _, data in anthropic_events(text, **kwargs)
    ]
    return _send_frames(frames, drop_after=drop_after)


def bedrock_default(request: Recorded) -> Action:
    """The default success of a Bedrock request: a streamed `Hello` (Converse, or Claude's own stream)."""
    if request.path.endswith("/invoke-with-response-stream"):
        return claude_stream()
    return _send_frames(bedrock_events())
