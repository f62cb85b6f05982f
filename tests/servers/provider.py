"""A real HTTP server on 127.0.0.1 that speaks the Anthropic Messages API, OpenAI Chat Completions and (with
`servers.responses`) the OpenAI Responses API.

The real SDK clients are pointed at it with `base_url`. Each POST takes the next scripted action (or the default
success reply of its API, which the provider's `AdapterKind.default` in `servers/kinds.py` gives); the server can be told to misbehave: an error status with `retry-after`, a stream cut
in the middle (connection dropped), a stream that ends without its final event, a slow first byte, and so on.

    server = ProviderServer().start()
    server.script(status(429), anthropic_stream(text=["Hi"]))
    Anthropic("claude-x", base_url=server.url, api_key="k").respond(request)
    server.requests[-1].body  # the JSON the SDK sent
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "ProviderServer",
    "Recorded",
    "Action",
    "anthropic_events",
    "anthropic_stream",
    "openai_chunks",
    "openai_stream",
    "status",
    "json_body",
    "slow",
    "sse",
    "anthropic_error",
    "openai_error",
    "echo_key",
]


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


Action = Callable[["_Handler", Recorded], None]


# -- building responses ------------------------------------------------------------------------------------------


def _sse_event(event: str | None, data: Any) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def sse(
    events: Sequence[tuple[str | None, Any]],
    *,
    drop_after: int | None = None,
    end_after: int | None = None,
    pause: float = 0.0,
    split: bool = False,
) -> Action:
    """An SSE stream of `(event name, data)` pairs.

    `drop_after=n`: after n events the connection is closed without ending the body (a transport error for the
    client). `end_after=n`: after n events the body ends cleanly (a stream without its final event). `pause`:
    seconds to wait between events. `split`: send each event in two pieces (exercises the SSE decoder).
    """

    def act(handler: _Handler, request: Recorded) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        for number, (event, data) in enumerate(events):
            if drop_after is not None and number >= drop_after:
                handler.drop()
                return
            if end_after is not None and number >= end_after:
                break
            payload = _sse_event(event, data)
            if split and len(payload) > 2:
                half = len(payload) // 2
                handler.write_chunk(payload[:half])
                handler.write_chunk(payload[half:])
            else:
                handler.write_chunk(payload)
            if pause:
                time.sleep(pause)
        if drop_after is not None and drop_after >= len(events):
            handler.drop()
            return
        handler.write_chunk(b"")

    return act


def status(code: int, body: Any = None, *, headers: dict[str, str] | None = None, retry_after_ms: int = 5) -> Action:
    """An error response with a JSON body; `retry-after-ms` keeps the SDK's retry waits short."""

    def act(handler: _Handler, request: Recorded) -> None:
        payload = json.dumps(body if body is not None else {"error": {"message": f"status {code}"}}).encode()
        handler.send_response(code)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        handler.send_header("retry-after-ms", str(retry_after_ms))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()

    return act


def json_body(body: Any, code: int = 200) -> Action:
    """A plain JSON response."""
    return status(code, body)


def slow(delay: float, then: Action) -> Action:
    """Wait `delay` seconds before the first byte, then act like `then` (unless the client has gone)."""

    def act(handler: _Handler, request: Recorded) -> None:
        time.sleep(delay)
        try:
            then(handler, request)
        except OSError:
            handler.close_connection = True

    return act


def anthropic_error(code: int, kind: str, message: str, **kwargs: Any) -> Action:
    """An Anthropic API error response (`{"type": "error", "error": {...}}`)."""
    return status(code, {"type": "error", "error": {"type": kind, "message": message}}, **kwargs)


def openai_error(
    code: int, message: str, *, kind: str = "invalid_request_error", err_code: str | None = None
) -> Action:
    """An OpenAI API error response (`{"error": {...}}`)."""
    return status(code, {"error": {"message": message, "type": kind, "param": None, "code": err_code}})


def echo_key(code: int = 401) -> Action:
    """An error whose body echoes the credential the request carried (as some providers and proxies do):
    `Incorrect API key provided: <key>`, in the error shape of the API the request was sent to."""

    def act(handler: _Handler, request: Recorded) -> None:
        if ":streamGenerateContent" in request.path or ":generateContent" in request.path:
            from servers.gemini import gemini_echo_key  # the Gemini and Bedrock modules build on this one

            return gemini_echo_key(code)(handler, request)
        if request.path.endswith("/converse-stream"):
            from servers.bedrock import bedrock_echo_credentials

            return bedrock_echo_credentials(code)(handler, request)
        header = request.headers.get("authorization") or request.headers.get("x-api-key") or ""
        key = header.split(" ", 1)[1] if header.lower().startswith("bearer ") else header
        message = f"Incorrect API key provided: {key}. You can find your API key at https://example.test/keys."
        if request.path.endswith("/messages"):
            anthropic_error(code, "authentication_error", message)(handler, request)
        else:
            openai_error(code, message, err_code="invalid_api_key")(handler, request)

    return act


# -- Anthropic Messages stream -----------------------------------------------------------------------------------


@dataclass
class ToolUse:
    """A tool_use block to stream: `json_parts` are the `input_json_delta` pieces."""

    name: str
    json_parts: Sequence[str]
    id: str = "toolu_1"


def anthropic_events(
    text: Iterable[str] = ("Hello",),
    *,
    tools: Sequence[ToolUse] = (),
    thinking: str | None = None,
    stop_reason: str | None = None,
    model: str = "claude-test-20260101",
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int | None = None,
    cache_write: int | None = None,
) -> list[tuple[str | None, Any]]:
    """The SSE events of one streamed Messages reply: [thinking], text, tool uses, then the stop."""
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": 1}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    events: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    index = 0
    if thinking is not None:
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            )
        )
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "thinking_delta", "thinking": thinking},
                },
            )
        )
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": "sig=="},
                },
            )
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    chunks = list(text)
    if chunks:
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
            )
        )
        for chunk in chunks:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": chunk}},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for tool in tools:
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": tool.id, "name": tool.name, "input": {}},
                },
            )
        )
        for part in tool.json_parts:
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": part},
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    if stop_reason is None:
        stop_reason = "tool_use" if tools else "end_turn"
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def anthropic_stream(
    text: Iterable[str] = ("Hello",),
    *,
    drop_after: int | None = None,
    end_after: int | None = None,
    pause: float = 0.0,
    **kwargs: Any,
) -> Action:
    """A streamed Messages reply (see `anthropic_events`), optionally dropped or ended early."""
    return sse(anthropic_events(text, **kwargs), drop_after=drop_after, end_after=end_after, pause=pause)


# -- OpenAI Chat Completions stream -------------------------------------------------------------------------------


@dataclass
class FnCall:
    """A streamed tool call: `parts` are the argument pieces; `id=None` sends no id."""

    name: str
    parts: Sequence[str]
    id: str | None = "call_1"
    index: int = 0


def openai_chunks(
    text: Iterable[str] = ("Hello",),
    *,
    calls: Sequence[FnCall] = (),
    reasoning: Iterable[str] = (),
    finish_reason: str | None = None,
    model: str = "gpt-test",
    usage: dict[str, Any] | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    cached_tokens: int | None = None,
    with_usage: bool = True,
) -> list[tuple[str | None, Any]]:
    """The SSE chunks of one streamed chat completion, ending with a usage chunk and `[DONE]`."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, Any]:
        return (
            None,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            },
        )

    out: list[tuple[str | None, Any]] = [chunk({"role": "assistant", "content": ""})]
    out.extend(chunk({"reasoning_content": piece}) for piece in reasoning)
    out.extend(chunk({"content": piece}) for piece in text)
    for call in calls:
        first: dict[str, Any] = {
            "index": call.index,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        if call.id is not None:
            first["id"] = call.id
        out.append(chunk({"tool_calls": [first]}))
        out.extend(
            chunk({"tool_calls": [{"index": call.index, "function": {"arguments": part}}]}) for part in call.parts
        )
    if finish_reason is None:
        finish_reason = "tool_calls" if calls else "stop"
    out.append(chunk({}, finish_reason))
    if with_usage:
        data: dict[str, Any] = usage or {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if cached_tokens is not None:
            data["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
        out.append(
            (
                None,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": model,
                    "choices": [],
                    "usage": data,
                },
            )
        )
    out.append((None, "[DONE]"))
    return out


def openai_stream(
    text: Iterable[str] = ("Hello",),
    *,
    drop_after: int | None = None,
    end_after: int | None = None,
    pause: float = 0.0,
    **kwargs: Any,
) -> Action:
    """A streamed chat completion (see `openai_chunks`), optionally dropped or ended early."""
    return sse(openai_chunks(text, **kwargs), drop_after=drop_after, end_after=end_after, pause=pause)


# -- the server ---------------------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Send each small write at once (TCP_NODELAY). With Nagle's algorithm on, the second request of a kept-alive
    # connection waits ~40 ms for the client's delayed ACK before the server's small writes leave.
    disable_nagle_algorithm = True
    server: _Server  # pyright: ignore[reportIncompatibleVariableOverride] - this server is always a _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the access log
        return

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def drop(self) -> None:
        """Close the connection at once, in the middle of the body."""
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _read_body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def _handle(self, method: str) -> None:
        request = Recorded(method, self.path, {k.lower(): v for k, v in self.headers.items()}, self._read_body())
        owner = self.server.owner
        action = owner.next_action(request)
        try:
            action(self, request)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self._handle("POST")

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: ProviderServer

    def handle_error(self, request: Any, client_address: Any) -> None:  # a client that went away is fine
        return


class ProviderServer:
    """The fake provider: `url` for Anthropic clients, `openai_url` for OpenAI clients.

    `script(*actions)` queues the actions for the next POSTs; with none left, a POST gets the default success of
    its API. `model_limit` is what `GET /v1/models/{id}` reports as `max_tokens` (an int), or an `Action`, or
    `None` for a 404. `requests` records everything received.
    """

    def __init__(self, *, record: bool = True) -> None:
        self._record = record
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._script: deque[Action] = deque()
        self.requests: list[Recorded] = []
        self.model_limit: int | Action | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    def start(self) -> ProviderServer:
        self._thread = threading.Thread(target=self._server.serve_forever, name="provider-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.model_limit = None

    def script(self, *actions: Action) -> None:
        with self._lock:
            self._script.extend(actions)

    @property
    def posts(self) -> list[Recorded]:
        """The POST requests received (the model calls)."""
        return [r for r in self.requests if r.method == "POST"]

    @property
    def lookups(self) -> list[Recorded]:
        """The GET requests received (Models API lookups)."""
        return [r for r in self.requests if r.method == "GET"]

    def next_action(self, request: Recorded) -> Action:
        with self._lock:
            if self._record:
                self.requests.append(request)
            if request.method == "GET":
                limit = self.model_limit
                if limit is None:
                    return anthropic_error(404, "not_found_error", "model not found")
                if isinstance(limit, int):
                    model_id = request.path.rsplit("/", 1)[-1]
                    return json_body(
                        {
                            "type": "model",
                            "id": model_id,
                            "display_name": model_id,
                            "created_at": "2026-01-01T00:00:00Z",
                            "lifecycle": "active",
                            "max_tokens": limit,
                        }
                    )
                return limit
            if self._script:
                return self._script.popleft()
        from servers.kinds import KINDS  # each provider's default reply is its kind's: a new one adds no branch here

        for kind in KINDS:
            if (action := kind.default(request)) is not None:
                return action
        return anthropic_stream()


def start_in_subprocess() -> tuple[subprocess.Popen[str], str]:
    """This server in a process of its own (so that its work is not the measured process's), and its URL; it
    stops when its stdin is closed. For benchmarks."""
    tests = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=tests,
        env={"PYTHONPATH": f"{tests}:{tests.parent / 'src'}", "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _serve_until_stdin_closes() -> None:
    """`python tests/servers/provider.py`: serve on a free port, print the URL, stop when stdin closes."""
    srv = ProviderServer(record=False).start()
    print(srv.url, flush=True)
    sys.stdin.read()
    srv.stop()


if __name__ == "__main__":
    _serve_until_stdin_closes()
