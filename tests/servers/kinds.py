"""The model adapters the cross-adapter tests run: one `AdapterKind` per adapter, filled in beside the fake server
that speaks its provider's API.

A test that holds for every adapter (`test_models_contract.py`, `test_models_safety.py`, `test_request_cache.py`)
is parametrized over `KINDS` and asks the kind for what differs between providers: how to make the adapter
(offline, or pointed at the fake server), how the server scripts a reply, where the conversation sits in a request
body. Adding an adapter adds one `AdapterKind` here; the suites then check it like the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anthropic
import openai

from alpineagents.models import Anthropic, OpenAICompatible, OpenAIResponses
from alpineagents.models._adapter import Adapter
from alpineagents.types import Request
from servers.provider import Action, FnCall, ProviderServer, ToolUse, anthropic_stream, openai_stream
from servers.responses import FunctionCallOut, Text, responses_stream

__all__ = ["AdapterKind", "KINDS", "KEY"]

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
    reply: Callable[[Sequence[str]], Action]
    """A streamed reply with these text pieces."""
    tool_reply: Callable[[str, str, str, str | None], Action]
    """`tool_reply(tool, raw_arguments, call_id, stop_reason)`: a streamed reply whose last block is a tool call
    (the stop reason the provider's, or `None` for the usual one)."""
    conversation: Callable[[dict[str, Any]], list[Any]]
    """The conversation items of a request body (the system prompt left out)."""
    create: Callable[[Adapter, Request, ProviderServer], None]
    """Send the adapter's request for `request` through the SDK's own typed call (`messages.stream`,
    `chat.completions.create`, `responses.create`), on a client of its own, and read the stream to its end: what
    the adapter sends through the SDK's raw path must be the same request."""
    options: tuple[dict[str, Any], ...]
    """Settings that change the request (thinking or reasoning, cache, temperature, output limit, ...), one
    adapter each, for the raw-path test."""


def _anthropic_tool_reply(tool: str, raw: str, call_id: str, stop_reason: str | None) -> Action:
    return anthropic_stream([], tools=[ToolUse(tool, [raw], id=call_id)], stop_reason=stop_reason)


def _chat_tool_reply(tool: str, raw: str, call_id: str, stop_reason: str | None) -> Action:
    return openai_stream([], calls=[FnCall(tool, [raw], id=call_id)], finish_reason=stop_reason)


def _responses_tool_reply(tool: str, raw: str, call_id: str, stop_reason: str | None) -> Action:
    call = FunctionCallOut(tool, raw, call_id=call_id)
    if stop_reason is None:
        return responses_stream(call)
    return responses_stream(call, status="incomplete", reason=stop_reason)


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
    reply=lambda texts: anthropic_stream(list(texts)),
    tool_reply=_anthropic_tool_reply,
    conversation=lambda body: body["messages"],
    create=_anthropic_create,
    options=({"thinking": 4096, "max_tokens": 8192}, {"temperature": 0.3, "cache": False}),
)

OPENAI_COMPATIBLE = AdapterKind(
    name="openai_compatible",
    make=OpenAICompatible,
    at=lambda srv, **options: OpenAICompatible(
        "gpt-test", base_url=srv.openai_url, api_key=KEY, **{"retries": 0, **options}
    ),
    key_variable="OPENAI_API_KEY",
    forget_key=_unset("api_key"),
    reply=lambda texts: openai_stream(list(texts)),
    tool_reply=_chat_tool_reply,
    conversation=lambda body: [m for m in body["messages"] if m["role"] != "system"],
    create=_chat_create,
    options=({"max_tokens": 100, "temperature": 0.2}, {"max_tokens": 50}),
)

OPENAI_RESPONSES = AdapterKind(
    name="openai_responses",
    make=OpenAIResponses,
    at=lambda srv, **options: OpenAIResponses(
        "gpt-test", base_url=srv.openai_url, api_key=KEY, **{"retries": 0, **options}
    ),
    key_variable="OPENAI_API_KEY",
    forget_key=_unset("api_key"),
    reply=lambda texts: responses_stream(Text(tuple(texts))),
    tool_reply=_responses_tool_reply,
    conversation=lambda body: body["input"],
    create=_responses_create,
    options=({"reasoning": "low", "max_tokens": 100, "temperature": 0.5}, {"store": True}, {"chain": True}),
)

KINDS: tuple[AdapterKind, ...] = (ANTHROPIC, OPENAI_COMPATIBLE, OPENAI_RESPONSES)
"""Every built-in adapter."""
