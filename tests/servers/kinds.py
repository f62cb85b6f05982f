"""The model adapters the cross-adapter tests run: one `AdapterKind` per adapter, filled in beside the fake server
that speaks its provider's API.

A test that holds for every adapter (`test_models_contract.py`, `test_models_streaming.py`, `test_models_safety.py`,
`test_request_cache.py`) is parametrized over `KINDS` and asks the kind for what differs between providers: how to
make the adapter (offline, or pointed at the fake server), how the server scripts a reply (whole, dropped, ended
early, paced) or a rate limit and what it answers a request nothing was scripted for, what the adapter's errors
say, where the conversation sits in a request body. Adding an adapter adds one `AdapterKind` here; the suites then
check it like the others.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import anthropic
import httpx2
import openai
import urllib3.exceptions

from alpineagents.models import Anthropic, Bedrock, Gemini, OpenAICompatible, OpenAIResponses
from alpineagents.models._adapter import Adapter
from alpineagents.types import RawBlock, Reply, Request
from servers.bedrock import ToolUseOut, bedrock_default, bedrock_error, bedrock_stream
from servers.gemini import Call, Thought, gemini_default, gemini_error, gemini_stream
from servers.provider import (
    Action,
    FnCall,
    ProviderServer,
    Recorded,
    ToolUse,
    anthropic_error,
    anthropic_stream,
    openai_error,
    openai_stream,
)
from servers.responses import FunctionCallOut, Reasoning, Text, responses_default, responses_stream

__all__ = ["AdapterKind", "CallOut", "KINDS", "KEY"]

CallOut = tuple[str, str, str]
"""A tool call a scripted reply holds: its name, its raw JSON arguments, its id."""

KEY = "sk-proj-Zq8c1XvB0mT4yH7nL2pR9sK6wE3uJ5aD"
"""The API key the adapters made by `AdapterKind.at` are given."""


@dataclass(frozen=True)
class AdapterKind:
    """One adapter, as the cross-adapter suites need it."""

    name: str
    """The adapter's provider id (the test id)."""
    make: Callable[..., Adapter]
    """`make(name, **options)`: the adapter, offline (its settings only)."""
    at: Callable[..., Adapter]
    """`at(server, **options)`: the adapter pointed at the fake server, with the key `KEY` and no SDK retries."""
    key_variable: str
    """The environment variable the adapter's SDK reads its key from."""
    forget_key: Callable[[Adapter], None]
    """Unset the key the adapter was given (so its SDK reads `key_variable`)."""
    stream: Callable[..., Action]
    """`stream(texts, drop_after=None, end_after=None, pause=0.0)`: a streamed reply with these text pieces, its
    connection dropped or its body ended after so many events, `pause` seconds between events (the server's
    builder of the provider's stream)."""
    lead: int
    """How many events of `stream` come before the first text piece (so `lead + n` is just after the n-th)."""
    tool_reply: Callable[[Sequence[CallOut], str | None], Action]
    """`tool_reply(calls, stop_reason)`: a streamed reply of these tool calls, `(name, raw arguments, id)` each, in
    order (the stop reason the provider's, or `None` for the usual one)."""
    conversation: Callable[[dict[str, Any]], list[Any]]
    """The conversation items of a request body (the system prompt left out)."""
    create: Callable[[Adapter, Request, ProviderServer], None]
    """Send the adapter's request for `request` through the SDK's own typed call (`messages.stream`,
    `chat.completions.create`, `responses.create`), on a client of its own, and read the stream to its end: what
    the adapter sends through the SDK's raw path must be the same request."""
    options: tuple[dict[str, Any], ...]
    """Settings that change the request (thinking or reasoning, cache, temperature, output limit, ...), one
    adapter each, for the raw-path test."""
    rate_limited: Callable[[], Action]
    """The provider's answer to a request over its rate limit (HTTP 429)."""
    dropped_cause: type[BaseException]
    """What the SDK raises when the connection drops mid-stream (the `__cause__` of the `ProviderError`)."""
    dropped: str
    """Words of that `ProviderError`."""
    unended: str
    """The words of the `ProviderError` for a stream whose body ends before the provider's last event."""
    default: Callable[[Recorded], Action | None]
    """The server's reply to a POST nothing was scripted for, when the request is this provider's (its path);
    `None` for another provider's request."""
    pieces_reply: Callable[[Sequence[str], str, str, Sequence[str], str], Action] | None = None
    """`pieces_reply(thinking, text, tool, argument_pieces, call_id)`: a streamed reply with thinking (in these
    pieces, where the provider streams it in pieces), a text and one tool call whose arguments stream in
    `argument_pieces` (where the provider streams them)."""
    thinking_of: Callable[[Reply], str] | None = None
    """The thinking text a reply keeps (in the provider's own blocks)."""
    streams_arguments: bool = True
    """Whether the provider streams a call's arguments in pieces (Gemini sends a call whole)."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """Other environment variables the SDK needs beside `key_variable` to read its credentials from there."""

    def reply(self, texts: Sequence[str], pause: float = 0.0) -> Action:
        """A whole streamed reply with these text pieces."""
        return self.stream(list(texts), pause=pause)


def _raw_data(reply: Reply) -> list[Mapping[str, Any]]:
    return [block.data for block in reply.message.content if isinstance(block, RawBlock)]


def _anthropic_tool_reply(calls: Sequence[CallOut], stop_reason: str | None) -> Action:
    return anthropic_stream(
        [], tools=[ToolUse(name, [raw], id=id_) for name, raw, id_ in calls], stop_reason=stop_reason
    )


def _chat_tool_reply(calls: Sequence[CallOut], stop_reason: str | None) -> Action:
    streamed = [FnCall(name, [raw], id=id_, index=n) for n, (name, raw, id_) in enumerate(calls)]
    return openai_stream([], calls=streamed, finish_reason=stop_reason)


def _responses_tool_reply(calls: Sequence[CallOut], stop_reason: str | None) -> Action:
    items = [FunctionCallOut(name, raw, call_id=id_, id=f"fc_{n}") for n, (name, raw, id_) in enumerate(calls)]
    if stop_reason is None:
        return responses_stream(*items)
    return responses_stream(*items, status="incomplete", reason=stop_reason)


def _anthropic_create(model: Adapter, request: Request, srv: ProviderServer) -> None:
    assert isinstance(model, Anthropic)
    client = anthropic.Anthropic(api_key=KEY, base_url=srv.url, max_retries=0)
    with client.messages.stream(**model._build_request_kwargs(request)) as stream:
        stream.get_final_message()


def _chat_create(model: Adapter, request: Request, srv: ProviderServer) -> None:
    assert isinstance(model, OpenAICompatible)
    client = openai.OpenAI(api_key=KEY, base_url=srv.openai_url, max_retries=0)
    for _ in client.chat.completions.create(**model._request_kwargs(request)):
        pass


def _responses_create(model: Adapter, request: Request, srv: ProviderServer) -> None:
    assert isinstance(model, OpenAIResponses)
    client = openai.OpenAI(api_key=KEY, base_url=srv.openai_url, max_retries=0)
    for _ in client.responses.create(**model._request_kwargs(request)):
        pass


def _unset(attribute: str) -> Callable[[Adapter], None]:
    def forget(model: Adapter) -> None:
        setattr(model, attribute, None)

    return forget


ANTHROPIC = AdapterKind(
    name="anthropic",
    make=lambda name, **options: Anthropic(name, **{"max_tokens": 1024, **options}),
    at=lambda srv, **options: Anthropic(
        "claude-test", **{"base_url": srv.url, "api_key": KEY, "max_tokens": 1024, "retries": 0, **options}
    ),
    key_variable="ANTHROPIC_API_KEY",
    forget_key=_unset("_api_key"),
    stream=anthropic_stream,
    lead=3,
    tool_reply=_anthropic_tool_reply,
    conversation=lambda body: body["messages"],
    create=_anthropic_create,
    rate_limited=lambda: anthropic_error(429, "rate_limit_error", "Rate limited"),
    dropped_cause=httpx2.RequestError,
    dropped="stream failed mid-reply",
    unended="ended before its final event",
    default=lambda request: anthropic_stream() if request.path.endswith("/messages") else None,
    options=({"thinking": 4096, "max_tokens": 8192}, {"temperature": 0.3, "cache": False}),
    pieces_reply=lambda thinking, text, tool, parts, call_id: anthropic_stream(
        [text], thinking="".join(thinking), tools=[ToolUse(tool, parts, id=call_id)]
    ),
    thinking_of=lambda reply: "".join(d["thinking"] for d in _raw_data(reply) if d.get("type") == "thinking"),
)

OPENAI_COMPATIBLE = AdapterKind(
    name="openai_compatible",
    make=OpenAICompatible,
    at=lambda srv, **options: OpenAICompatible(
        "gpt-test", base_url=srv.openai_url, api_key=KEY, **{"retries": 0, **options}
    ),
    key_variable="OPENAI_API_KEY",
    forget_key=_unset("api_key"),
    stream=openai_stream,
    lead=1,
    tool_reply=_chat_tool_reply,
    conversation=lambda body: [m for m in body["messages"] if m["role"] != "system"],
    create=_chat_create,
    rate_limited=lambda: openai_error(429, "Rate limit reached", kind="rate_limit_error"),
    dropped_cause=openai.APIConnectionError,
    dropped="Connection error",
    unended="ended before its final chunk",
    default=lambda request: openai_stream() if request.path.endswith("/chat/completions") else None,
    options=({"max_tokens": 100, "temperature": 0.2}, {"max_tokens": 50}),
    pieces_reply=lambda thinking, text, tool, parts, call_id: openai_stream(
        [text], reasoning=thinking, calls=[FnCall(tool, parts, id=call_id)]
    ),
    thinking_of=lambda reply: "".join(d.get("reasoning_content", "") for d in _raw_data(reply)),
)

OPENAI_RESPONSES = AdapterKind(
    name="openai_responses",
    make=OpenAIResponses,
    at=lambda srv, **options: OpenAIResponses(
        "gpt-test", base_url=srv.openai_url, api_key=KEY, **{"retries": 0, **options}
    ),
    key_variable="OPENAI_API_KEY",
    forget_key=_unset("api_key"),
    stream=lambda texts, **shape: responses_stream(Text(tuple(texts)), **shape),
    lead=4,
    tool_reply=_responses_tool_reply,
    conversation=lambda body: body["input"],
    create=_responses_create,
    rate_limited=lambda: openai_error(429, "Rate limit reached", kind="rate_limit_error"),
    dropped_cause=openai.APIConnectionError,
    dropped="Connection error",
    unended="ended before its final event",
    default=lambda request: responses_default(request) if request.path.endswith("/responses") else None,
    options=({"reasoning": "low", "max_tokens": 100, "temperature": 0.5}, {"store": True}, {"chain": True}),
    pieces_reply=lambda thinking, text, tool, parts, call_id: responses_stream(
        Reasoning(summary=tuple(thinking)),
        Text((text,)),
        FunctionCallOut(tool, "".join(parts), call_id=call_id, parts=parts),
    ),
    thinking_of=lambda reply: "".join(
        part["text"] for d in _raw_data(reply) if d.get("type") == "reasoning" for part in d["summary"]
    ),
)


def _gemini_tool_reply(calls: Sequence[CallOut], stop_reason: str | None) -> Action:
    parsed = [Call(name, json.loads(raw), id=id_) for name, raw, id_ in calls]
    return gemini_stream([], calls=parsed, finish_reason=stop_reason or "STOP")


def _gemini_create(model: Adapter, request: Request, srv: ProviderServer) -> None:
    from google import genai

    assert isinstance(model, Gemini)
    client = genai.Client(api_key=KEY, http_options={"base_url": srv.url})
    for _ in client.models.generate_content_stream(**model._request_body(request)):
        pass


GEMINI = AdapterKind(
    name="google",
    make=Gemini,
    at=lambda srv, **options: Gemini("gemini-test", base_url=srv.url, api_key=KEY, **{"retries": 0, **options}),
    key_variable="GEMINI_API_KEY",
    forget_key=_unset("_api_key"),
    stream=gemini_stream,
    lead=0,
    tool_reply=_gemini_tool_reply,
    conversation=lambda body: body["contents"],
    create=_gemini_create,
    rate_limited=lambda: gemini_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded"),
    dropped_cause=httpx2.RequestError,
    dropped="stream failed mid-reply",
    unended="ended before its final chunk",
    default=lambda request: (
        gemini_default(request)
        if ":streamGenerateContent" in request.path or ":generateContent" in request.path
        else None
    ),
    options=({"thinking": True, "max_tokens": 500}, {"thinking": "low", "temperature": 0.2}),
    pieces_reply=lambda thinking, text, tool, parts, call_id: gemini_stream(
        [text],
        thoughts=[Thought(piece) for piece in thinking],
        calls=[Call(tool, json.loads("".join(parts)), id=call_id)],
    ),
    thinking_of=lambda reply: "".join(d["text"] for d in _raw_data(reply) if d.get("thought")),
    streams_arguments=False,
)

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
"""The AWS secret key that goes with `KEY` (the access key id of the Bedrock adapters made by `at`)."""


@cache
def _aws_session() -> Any:
    """One boto3 session holding `KEY` (a client is quicker to make from a session that made one before)."""
    import boto3.session

    return boto3.session.Session(aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name="us-east-1")


def _bedrock_client(srv: ProviderServer, retries: int = 0) -> Any:
    from botocore.config import Config

    config = Config(retries={"total_max_attempts": 1 + retries, "mode": "standard"})
    return _aws_session().client("bedrock-runtime", endpoint_url=srv.url, config=config)


def _bedrock_at(srv: ProviderServer, **options: Any) -> Bedrock:
    client = _bedrock_client(srv, options.get("retries", 0))  # a given client keeps its own retries
    settings = {"client": client, "region": "us-east-1", "endpoint_url": srv.url, "retries": 0, **options}
    return Bedrock("anthropic.claude-test-v1:0", **settings)


def _bedrock_create(model: Adapter, request: Request, srv: ProviderServer) -> None:
    assert isinstance(model, Bedrock)
    for _ in _bedrock_client(srv).converse_stream(**model._converse_kwargs(request))["stream"]:
        pass


def _bedrock_forget_key(model: Adapter) -> None:
    """Drop the given client: the adapter makes its own, from the credential chain (the environment here)."""
    model._sdk_client = None  # type: ignore[attr-defined]
    model._given_client = None  # type: ignore[attr-defined]


def _bedrock_tool_reply(calls: Sequence[CallOut], stop_reason: str | None) -> Action:
    return bedrock_stream(
        [], tools=[ToolUseOut(name, [raw], id=id_) for name, raw, id_ in calls], stop_reason=stop_reason
    )


BEDROCK = AdapterKind(
    name="bedrock",
    make=Bedrock,
    at=_bedrock_at,
    key_variable="AWS_ACCESS_KEY_ID",
    forget_key=_bedrock_forget_key,
    stream=bedrock_stream,
    lead=1,
    tool_reply=_bedrock_tool_reply,
    conversation=lambda body: body["messages"],
    create=_bedrock_create,
    rate_limited=lambda: bedrock_error(429, "ThrottlingException", "slow down"),
    dropped_cause=urllib3.exceptions.ProtocolError,
    dropped="stream failed mid-reply",
    unended="ended before its messageStop",
    default=lambda request: (
        bedrock_default(request)
        if request.path.endswith(("/converse-stream", "/invoke-with-response-stream"))
        else None
    ),
    options=({"thinking": 4096, "max_tokens": 8192}, {"cache": True, "temperature": 0.3}),
    pieces_reply=lambda thinking, text, tool, parts, call_id: bedrock_stream(
        [text], reasoning=thinking, tools=[ToolUseOut(tool, parts, id=call_id)]
    ),
    thinking_of=lambda reply: "".join(
        d["reasoningContent"]["reasoningText"]["text"] for d in _raw_data(reply) if "reasoningContent" in d
    ),
    environment={"AWS_SECRET_ACCESS_KEY": SECRET},
)

KINDS: tuple[AdapterKind, ...] = (ANTHROPIC, OPENAI_COMPATIBLE, OPENAI_RESPONSES, GEMINI, BEDROCK)
"""Every built-in adapter."""
