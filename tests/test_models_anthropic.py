"""`Anthropic`: construction, request mapping, streaming, reply mapping, output limit, errors.

Most tests drive the real `anthropic` SDK against the fake provider server on 127.0.0.1 (`tests/servers/`);
some replace the SDK client through the fixed seams (`_client()`, `_async_client()`).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import anthropic as sdk
import httpx2
import pytest

import alpineagents.models.anthropic as adapter
from alpineagents.errors import AuthError, ContextTooLongError, ProviderError, RateLimitError
from alpineagents.models import Anthropic
from alpineagents.models.anthropic import DEFAULT_MAX_TOKENS, _looks_like_context_overflow
from alpineagents.types import (
    INVALID_ARGS_KEY,
    TRUNCATED_ARGS_MESSAGE,
    Image,
    Message,
    Price,
    RawBlock,
    Request,
    TextBlock,
    ToolCall,
    ToolResultBlock,
    ToolSpec,
    Usage,
)
from servers.provider import (
    ProviderServer,
    ToolUse,
    anthropic_error,
    anthropic_events,
    anthropic_stream,
    json_body,
    slow,
    sse,
    status,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(100)
GIF = b"GIF89a" + bytes(100)
SPEC = ToolSpec("search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}})


def req(
    *messages: Message, system: str | None = None, tools: tuple[ToolSpec, ...] = (), choice: str = "auto"
) -> Request:
    return Request(system, messages or (Message.user("hi"),), tools, choice)  # type: ignore[arg-type]


def model(srv: ProviderServer, name: str = "claude-test", **kwargs: Any) -> Anthropic:
    kwargs.setdefault("api_key", "sk-test")
    kwargs.setdefault("retries", 0)
    return Anthropic(name, base_url=srv.url, **kwargs)


# -- fakes for the seams -------------------------------------------------------------------------------------------


def typed_events(chunks: list[Any], final_message: Any) -> Iterator[Any]:
    """The SDK's typed stream events of a text reply streamed in `chunks` (an exception among them is raised in
    its place), ending as `final_message` says (its `model` and `stop_reason`)."""
    types = sdk.types
    model_name = getattr(final_message, "model", None) or "claude-fake"
    usage = types.Usage(input_tokens=1, output_tokens=1)
    start = types.Message(
        id="msg_fake", type="message", role="assistant", content=[], model=model_name, stop_reason=None, usage=usage
    )
    yield types.RawMessageStartEvent(type="message_start", message=start)
    yield types.RawContentBlockStartEvent(
        type="content_block_start", index=0, content_block=types.TextBlock(type="text", text="")
    )
    for chunk in chunks:
        if isinstance(chunk, BaseException):
            raise chunk
        delta = types.TextDelta(type="text_delta", text=chunk)
        yield types.RawContentBlockDeltaEvent(type="content_block_delta", index=0, delta=delta)
    yield types.RawContentBlockStopEvent(type="content_block_stop", index=0)
    from anthropic.types.raw_message_delta_event import Delta

    delta = Delta.model_construct(stop_reason=getattr(final_message, "stop_reason", "end_turn"))  # fields default
    yield types.RawMessageDeltaEvent.model_construct(
        type="message_delta", delta=delta, usage=types.MessageDeltaUsage(output_tokens=1)
    )
    yield types.RawMessageStopEvent(type="message_stop")


class FakeStream:
    """What the fake client's `post` returns: the SDK's raw stream of typed events, closed by the adapter."""

    def __init__(self, chunks: list[Any], final: Any) -> None:
        self.chunks = chunks
        self.final = final
        self.exited = False

    def __iter__(self) -> Iterator[Any]:
        return typed_events(self.chunks, self.final)

    def close(self) -> None:
        self.exited = True


class FakeClient:
    """Stands in for the SDK client behind `_client()`: `post` records the JSON body it was given."""

    def __init__(self, stream: FakeStream) -> None:
        self.stream_obj = stream
        self.kwargs: list[dict[str, Any]] = []

    def post(self, path: str, *, content: bytes, **options: Any) -> FakeStream:
        assert path == "/v1/messages" and options["stream"] is True
        self.kwargs.append(json.loads(content))
        return self.stream_obj


class Block(SimpleNamespace):
    def model_dump(self, mode: str = "python", exclude_none: bool = False) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if not (exclude_none and v is None)}


def final(*blocks: Any, stop_reason: str = "end_turn", usage: Any = None, **extra: Any) -> SimpleNamespace:
    if usage is None:
        usage = SimpleNamespace(
            input_tokens=1, output_tokens=1, cache_read_input_tokens=None, cache_creation_input_tokens=None
        )
    return SimpleNamespace(content=list(blocks), usage=usage, stop_reason=stop_reason, **extra)


def with_fake(m: Anthropic, chunks: list[Any], final_message: Any) -> tuple[FakeClient, FakeStream]:
    stream = FakeStream(chunks, final_message)
    client = FakeClient(stream)
    m._client = lambda: client  # type: ignore[method-assign]
    return client, stream


@pytest.fixture(autouse=True)
def _empty_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adapter, "_OUTPUT_LIMITS", {})


# -- construction ----------------------------------------------------------------------------------------------------


def test_anthropic_defaults_strip_the_prefix_and_declare_thinking_cache_vision() -> None:
    m = Anthropic("anthropic/claude-x")
    assert m.name == "claude-x"
    assert m.provider == "anthropic"
    assert m.context_window == 200_000
    assert m.supports == {"thinking", "cache", "vision"}
    assert m.cache is True
    assert m.max_tokens is None
    assert m.retries == 2 and m.timeout is None and m.temperature is None and m.price is None
    assert Anthropic("anthropic/anthropic/x").name == "anthropic/x"
    assert Anthropic("c", context_window=1000).context_window == 1000


def test_anthropic_constructs_without_credentials_or_a_client(no_credentials: None) -> None:
    from alpineagents.models import OpenAICompatible

    m = Anthropic("claude-sonnet-5")
    OpenAICompatible("gpt-5")
    assert m._sdk_client is None


def test_thinking_with_a_temperature_is_refused() -> None:
    with pytest.raises(ValueError, match="temperature") as info:
        Anthropic("c", thinking=True, temperature=0.5)
    assert "thinking is on, but temperature was also given" in str(info.value)
    assert "\nFix: " in str(info.value)


def test_a_thinking_budget_must_be_at_least_1024_and_below_max_tokens() -> None:
    for budget in (0, 1023):
        with pytest.raises(ValueError, match="at least 1024") as info:
            Anthropic("c", thinking=budget)
        assert f"thinking={budget}, but it must be at least 1024" in str(info.value)
        assert "thinking=False" in str(info.value)
    with pytest.raises(ValueError, match="max_tokens=64000") as info:
        Anthropic("c", thinking=64_000)
    assert "thinking=64000, but max_tokens=64000" in str(info.value)
    assert Anthropic("c", thinking=63_999)._thinking == {"type": "enabled", "budget_tokens": 63_999}
    Anthropic("c", thinking=100_000, max_tokens=128_000)
    with pytest.raises(ValueError, match="at least 1024"):
        Anthropic("c", thinking=1)  # 1 is a budget, not True


def test_thinking_or_cache_without_the_declared_feature_is_refused() -> None:
    with pytest.raises(ValueError) as info:
        Anthropic("c", supports=[], thinking=True)
    assert "does not support" in str(info.value) and "(none)" in str(info.value)
    assert str(info.value).startswith("Anthropic('c') does not support thinking=True (required feature: 'thinking')")
    with pytest.raises(ValueError, match="Features this adapter supports: vision"):
        Anthropic("c", supports={"vision"}, cache=True)
    with pytest.raises(ValueError, match="thinking=4096"):
        Anthropic("c", supports=[], thinking=4096)


def test_the_feature_check_comes_before_the_temperature_check() -> None:
    with pytest.raises(ValueError, match="does not support"):
        Anthropic("c", supports=[], thinking=True, temperature=0.1)


def test_cache_follows_the_declared_features_unless_given() -> None:
    assert Anthropic("c", supports=[]).cache is False
    assert "cache_control" not in Anthropic("c", cache=False)._build_request_kwargs(req())
    assert Anthropic("c")._build_request_kwargs(req())["cache_control"] == {"type": "ephemeral"}
    assert Anthropic("c", supports={"cache"}, cache=True).cache is True


def test_temperature_goes_in_extra_body() -> None:
    kwargs = Anthropic("c", temperature=0.2)._build_request_kwargs(req())
    assert "temperature" not in kwargs
    assert kwargs["extra_body"] == {"temperature": 0.2}
    assert "extra_body" not in Anthropic("c")._build_request_kwargs(req())


# -- request mapping ----------------------------------------------------------------------------------------------


def test_request_kwargs_carry_thinking_system_and_tools_only_when_set() -> None:
    assert Anthropic("c", thinking=True)._build_request_kwargs(req())["thinking"] == {"type": "adaptive"}
    assert Anthropic("c", thinking=4096)._build_request_kwargs(req())["thinking"] == {
        "type": "enabled",
        "budget_tokens": 4096,
    }
    assert Anthropic("c", thinking=True)._thinking == {"type": "adaptive"}
    assert Anthropic("c")._thinking is None
    kwargs = Anthropic("c")._build_request_kwargs(req(system="sys"))
    assert kwargs["system"] == "sys"
    assert kwargs["model"] == "c"
    assert kwargs["max_tokens"] == DEFAULT_MAX_TOKENS
    assert "tools" not in kwargs and "tool_choice" not in kwargs and "thinking" not in kwargs
    assert "system" not in Anthropic("c")._build_request_kwargs(req())
    assert Anthropic("c", max_tokens=5)._build_request_kwargs(req())["max_tokens"] == 5
    assert Anthropic("c")._build_request_kwargs(req(), 77)["max_tokens"] == 77


def test_tools_and_choice() -> None:
    m = Anthropic("c")
    kwargs = m._build_request_kwargs(req(tools=(SPEC,)))
    assert kwargs["tools"] == [{"name": "search", "description": "Search the web", "input_schema": SPEC.input_schema}]
    assert "tool_choice" not in kwargs
    assert m._build_request_kwargs(req(tools=(SPEC,), choice="none"))["tool_choice"] == {"type": "none"}
    assert m._build_request_kwargs(req(choice="none"))["tool_choice"] == {"type": "none"}
    assert m._tool_defs_and_choice(req()) == ([], None)


def test_tool_blocks_without_tools_get_placeholder_definitions_and_no_tool_choice() -> None:
    messages = (
        Message.user("go"),
        Message("assistant", (ToolCall("search", {"q": "x"}, "c1"), ToolCall("read", {}, "c2"))),
        Message("user", (ToolResultBlock("c1", "found", "search"), ToolResultBlock("c2", "x", "zip"))),
    )
    kwargs = Anthropic("c")._build_request_kwargs(req(*messages))
    assert kwargs["tools"] == [
        {"name": n, "description": "", "input_schema": {"type": "object"}} for n in ("read", "search", "zip")
    ]
    assert kwargs["tool_choice"] == {"type": "none"}
    only_call = Anthropic("c")._build_request_kwargs(req(Message("assistant", (ToolCall("search", {}, "c1"),))))
    assert only_call["tools"] == [{"name": "search", "description": "", "input_schema": {"type": "object"}}]
    assert only_call["tool_choice"] == {"type": "none"}


def test_tool_results_go_first_and_same_role_messages_merge() -> None:
    m = Anthropic("c")
    content = m._to_anthropic_content(Message("user", (TextBlock("t"), ToolResultBlock("c1", "(done)", "x"))))
    assert [b["type"] for b in content] == ["tool_result", "text"]
    assert content[0] == {"type": "tool_result", "tool_use_id": "c1", "content": "(done)", "is_error": False}
    sent = m._to_anthropic_messages([Message.user("a"), Message.user("b"), Message.assistant("c")])
    assert sent == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "c"}]},
    ]
    merged = m._to_anthropic_messages([Message.user("t"), Message("user", (ToolResultBlock("c1", "r", "x", True),))])
    assert [b["type"] for b in merged[0]["content"]] == ["tool_result", "text"]
    assert merged[0]["content"][0]["is_error"] is True


def test_empty_content_gets_a_placeholder_and_raw_blocks_of_other_providers_drop() -> None:
    m = Anthropic("c")
    sent = m._to_anthropic_messages([Message("assistant", ()), Message.user("next")])
    assert sent[0]["content"] == [{"type": "text", "text": "(empty reply)"}]
    assert m._to_anthropic_content(Message("assistant", (TextBlock("  "),))) == [
        {"type": "text", "text": "(empty reply)"}
    ]
    assert m._to_anthropic_content(Message.user("")) == [{"type": "text", "text": "(empty reply)"}]
    other = Message("assistant", (RawBlock("openai_compatible", {"reasoning_content": "x"}),))
    assert m._to_anthropic_content(other) == []
    data = {"type": "thinking", "thinking": "hm", "signature": "s", "nested": {"a": [1]}}
    own = m._to_anthropic_content(Message("assistant", (RawBlock("anthropic", data),)))
    assert own == [data]
    assert type(own[0]) is dict and type(own[0]["nested"]) is dict and type(own[0]["nested"]["a"]) is list
    own[0]["nested"]["a"].append(2)  # a plain copy: the recorded block does not change


def test_a_user_image_is_one_base64_image_block() -> None:
    import base64

    image = Image(PNG)
    for m in (Anthropic("c"), Anthropic("c", supports=[])):
        content = m._to_anthropic_content(Message.user("", image))
        assert content == [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()},
            }
        ]
    assistant = Message("assistant", (TextBlock("x"), image))
    assert Anthropic("c")._to_anthropic_content(assistant) == [{"type": "text", "text": "x"}]
    assert Anthropic("c")._to_anthropic_content(Message("assistant", (image,))) == []


def test_tool_result_with_images_and_tool_use_args_are_plain() -> None:
    m = Anthropic("c")
    call = ToolCall("edit", {"path": "a", "lines": [1, 2]}, "c1")
    sent = m._to_anthropic_content(Message("assistant", (TextBlock("doing"), call)))
    assert sent[1] == {"type": "tool_use", "id": "c1", "name": "edit", "input": {"path": "a", "lines": [1, 2]}}
    assert type(sent[1]["input"]) is dict and type(sent[1]["input"]["lines"]) is list
    sent[1]["input"]["lines"].append(3)
    assert call.args["lines"] == [1, 2]
    result = ToolResultBlock("c1", (TextBlock("Loaded"), TextBlock(" "), Image(GIF)), "shot")
    content = m._to_anthropic_content(Message("user", (result,)))
    assert content[0]["content"] == [
        {"type": "text", "text": "Loaded"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": Image(GIF).base64}},
    ]


# -- reply mapping -----------------------------------------------------------------------------------------------


def test_reply_blocks_and_usage_from_the_final_message() -> None:
    m = Anthropic("claude-sonnet-5")
    thinking = Block(type="thinking", thinking="hmm", signature="sig", extra=None)
    usage = SimpleNamespace(
        input_tokens=100, output_tokens=20, cache_read_input_tokens=30, cache_creation_input_tokens=5
    )
    reply = m._to_reply(
        final(
            Block(type="text", text="Hi"),
            Block(type="tool_use", name="search", input={"q": "x"}, id="t1"),
            thinking,
            usage=usage,
            stop_reason="tool_use",
        )
    )
    assert reply.message.content == (
        TextBlock("Hi"),
        ToolCall("search", {"q": "x"}, "t1"),
        RawBlock("anthropic", {"type": "thinking", "thinking": "hmm", "signature": "sig"}),
    )
    assert reply.usage == Usage(100, 20, 30, 5, 1, None)
    assert reply.usage.requests == 1 and reply.usage.cost is None
    assert reply.context_tokens == 155
    assert reply.stop_reason == "tool_use"
    assert reply.message.tokens is None and reply.message.stop_reason is None
    priced = Anthropic("c", price=Price(input=3, output=15))._to_reply(final(Block(type="text", text="x"), usage=usage))
    assert priced.usage.cost == Price(input=3, output=15).cost(priced.usage)


def test_reply_model_is_the_reported_one_or_the_adapters_name() -> None:
    m = Anthropic("claude-sonnet-5")
    assert m._to_reply(final()).model == "claude-sonnet-5"
    assert m._to_reply(final(model="")).model == "claude-sonnet-5"
    assert m._to_reply(final(model=None)).model == "claude-sonnet-5"
    assert m._to_reply(final(model="claude-sonnet-5-20260101")).model == "claude-sonnet-5-20260101"


def test_a_cut_off_reply_truncates_its_last_tool_call() -> None:
    m = Anthropic("c")
    blocks = (
        Block(type="tool_use", name="a", input={"x": 1}, id="t1"),
        Block(type="tool_use", name="b", input={"y": 2}, id="t2"),
    )
    for reason in ("max_tokens", "model_context_window_exceeded"):
        reply = m._to_reply(final(*blocks, stop_reason=reason))
        assert reply.tool_calls == (
            ToolCall("a", {"x": 1}, "t1"),
            ToolCall("b", {INVALID_ARGS_KEY: TRUNCATED_ARGS_MESSAGE}, "t2"),
        )
        assert reply.cut_off
    intact = m._to_reply(final(*blocks, stop_reason="tool_use"))
    assert intact.tool_calls == (ToolCall("a", {"x": 1}, "t1"), ToolCall("b", {"y": 2}, "t2"))
    text_last = m._to_reply(final(blocks[0], Block(type="text", text="x"), stop_reason="max_tokens"))
    assert text_last.tool_calls == (ToolCall("a", {"x": 1}, "t1"),)


def test_no_usage_reported() -> None:
    reply = Anthropic("c")._to_reply(SimpleNamespace(content=[], usage=None, stop_reason="end_turn"))
    assert reply.usage == Usage(requests=1)
    assert reply.context_tokens is None


# -- errors through the seams ------------------------------------------------------------------------------------


def _status_error(cls: type[sdk.APIStatusError], code: int, message: str) -> sdk.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    return cls(message, response=httpx2.Response(code, request=request), body=None)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (lambda: _status_error(sdk.RateLimitError, 429, "slow down"), RateLimitError),
        (lambda: _status_error(sdk.AuthenticationError, 401, "bad key"), AuthError),
        (lambda: _status_error(sdk.PermissionDeniedError, 403, "no"), AuthError),
        (lambda: _status_error(sdk.RequestTooLargeError, 413, "too big"), ContextTooLongError),
        (
            lambda: _status_error(sdk.BadRequestError, 400, "prompt is too long: 300000 tokens > 200000"),
            ContextTooLongError,
        ),
        (lambda: _status_error(sdk.BadRequestError, 400, "messages: bad role"), ProviderError),
        (lambda: sdk.APIConnectionError(request=httpx2.Request("POST", "http://x")), ProviderError),
    ],
)
def test_sdk_errors_map_to_the_library_errors(error: Any, expected: type[Exception]) -> None:
    m = Anthropic("c", max_tokens=10)
    original = error()
    with_fake(m, [original], final())
    with pytest.raises(ProviderError) as info:
        m.respond(req())
    assert type(info.value) is expected
    assert info.value.__cause__ is original


def test_wrapped_error_messages_name_the_failure() -> None:
    m = Anthropic("c", max_tokens=10)
    with_fake(m, [_status_error(sdk.RateLimitError, 429, "slow down")], final())
    with pytest.raises(RateLimitError, match=r"^Anthropic API rate limit \(429\): slow down"):
        m.respond(req())
    with_fake(m, [_status_error(sdk.BadRequestError, 400, "bad role")], final())
    with pytest.raises(ProviderError, match=r"^Anthropic bad request \(400\): bad role"):
        m.respond(req())
    with_fake(m, [_status_error(sdk.BadRequestError, 400, "Exceeds Context of model")], final())
    with pytest.raises(ContextTooLongError, match=r"^The context exceeds the model's context window: "):
        m.respond(req())
    with_fake(m, [TypeError("takes no keyword foo")], final())
    with pytest.raises(ProviderError, match=r"^Error while building the Anthropic request: ") as info:
        m.respond(req())
    assert type(info.value) is ProviderError
    with_fake(m, [TypeError("Could not resolve authentication method. Expected either api_key or auth_token")], final())
    with pytest.raises(AuthError, match=r"^Anthropic authentication failed \(no credentials\): "):
        m.respond(req())


def test_looks_like_context_overflow() -> None:
    for text in (
        "prompt is too long: 1 > 0",
        "Context Length exceeded",
        "maximum context",
        "too many tokens",
        "input exceeds the model limit",
        "exceeds context",
    ):
        assert _looks_like_context_overflow(text)
    assert not _looks_like_context_overflow("messages.0: bad role")


def test_a_transport_error_mid_stream_is_a_provider_error() -> None:
    m = Anthropic("c", max_tokens=10)
    error = httpx2.ReadError("connection reset")
    _, stream = with_fake(m, ["Hel", "lo", error], final())
    got: list[str] = []
    with pytest.raises(ProviderError) as info:
        m.respond(req(), got.append)
    assert type(info.value) is ProviderError
    assert info.value.__cause__ is error
    assert "ReadError" in str(info.value)
    assert str(info.value).startswith("Anthropic stream failed mid-reply (ReadError): ")
    assert got == ["Hel", "lo"]
    assert stream.exited


def test_callback_errors_propagate_unchanged() -> None:
    m = Anthropic("c", max_tokens=10)
    for error in (
        TypeError("reporter bug"),
        httpx2.ReadError("in the reporter"),
        _status_error(sdk.AuthenticationError, 401, "x"),
        _status_error(sdk.BadRequestError, 400, "max_tokens: 10 > 5"),
    ):
        _, stream = with_fake(m, ["a", "b"], final())

        def boom(_chunk: str, error: BaseException = error) -> None:
            raise error

        with pytest.raises(BaseException) as info:
            m.respond(req(), boom)
        assert info.value is error
        assert stream.exited
    interrupt = KeyboardInterrupt()
    _, stream = with_fake(m, ["a", interrupt], final())
    with pytest.raises(KeyboardInterrupt) as kinfo:
        m.respond(req())
    assert kinfo.value is interrupt
    assert stream.exited


def test_other_exceptions_propagate_unchanged() -> None:
    m = Anthropic("c", max_tokens=10)
    error = ValueError("something else")
    with_fake(m, ["a", error], final())
    with pytest.raises(ValueError) as info:
        m.respond(req())
    assert info.value is error


def test_no_credentials_is_an_auth_error(no_credentials: None) -> None:
    m = Anthropic("claude-sonnet-5", base_url="http://127.0.0.1:9", retries=0)
    with pytest.raises(AuthError) as info:
        m.respond(req())
    assert isinstance(info.value.__cause__, TypeError)
    with pytest.raises(AuthError) as info:
        asyncio.run(Anthropic("claude-sonnet-5", retries=0).arespond(req()))
    assert isinstance(info.value.__cause__, TypeError)


# -- clients --------------------------------------------------------------------------------------------------------


def test_one_async_client_per_event_loop() -> None:
    m = Anthropic("c", api_key="k")

    async def twice() -> tuple[Any, Any]:
        return m._async_client(), m._async_client()

    a1, a2 = asyncio.run(twice())
    b1, _ = asyncio.run(twice())
    assert a1 is a2
    assert b1 is not a1
    assert m._sdk_client is None
    assert isinstance(a1, sdk.AsyncAnthropic)


def test_client_kwargs_and_lazy_lookup_of_sdk_class(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[dict[str, Any]] = []

    class Capture:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)

    monkeypatch.setattr(sdk, "Anthropic", Capture)
    m = Anthropic("c")
    assert m._sdk_client is None
    client = m._client()
    assert m._client() is client and m._sdk_client is client
    assert made == [{"max_retries": 2}]
    Anthropic("c", retries=5, api_key="k", base_url="http://h", timeout=3.0)._client()
    assert made[-1] == {"max_retries": 5, "api_key": "k", "base_url": "http://h", "timeout": 3.0}


# -- against the fake server: streaming, mapping on the wire ---------------------------------------------------------


def test_stream_and_wire_request(server: ProviderServer) -> None:
    server.script(
        anthropic_stream(
            ["Hel", "lo"],
            thinking="let me think",
            tools=[ToolUse("search", ['{"q": ', '"weather"}'], id="toolu_9")],
            input_tokens=100,
            output_tokens=20,
            cache_read=30,
            cache_write=5,
        )
    )
    m = model(server, max_tokens=1000, temperature=0.3, supports={"cache", "vision"})
    got: list[str] = []
    request = req(Message.user("look", Image(PNG)), system="be brief", tools=(SPEC,))
    reply = m.respond(request, got.append)
    assert got == ["Hel", "lo"]
    assert reply.text == "Hello"
    assert reply.tool_calls == (ToolCall("search", {"q": "weather"}, "toolu_9"),)
    raw = reply.message.content[0]
    assert isinstance(raw, RawBlock) and raw.provider == "anthropic"
    assert raw.data == {"type": "thinking", "thinking": "let me think", "signature": "sig=="}
    assert reply.usage == Usage(100, 20, 30, 5, 1)
    assert reply.context_tokens == 155
    assert reply.stop_reason == "tool_use"
    assert reply.model == "claude-test-20260101"
    body = server.posts[-1].body
    assert server.posts[-1].path == "/v1/messages"
    headers = server.posts[-1].headers
    assert headers.get("x-api-key") == "sk-test" or headers.get("authorization") == "Bearer sk-test"
    assert body["model"] == "claude-test" and body["max_tokens"] == 1000 and body["stream"] is True
    assert body["system"] == "be brief"
    assert body["temperature"] == 0.3
    assert body["cache_control"] == {"type": "ephemeral"}
    assert body["tools"] == [{"name": "search", "description": "Search the web", "input_schema": SPEC.input_schema}]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": Image(PNG).base64}},
            ],
        }
    ]
    assert server.lookups == []


def test_thinking_raw_block_sent_back_as_received(server: ProviderServer) -> None:
    server.script(anthropic_stream(["Done"], thinking="deep thought", tools=[ToolUse("search", ['{"q": "x"}'])]))
    m = model(server, max_tokens=5000, thinking=2048)
    first = m.respond(req(Message.user("q")))
    result = Message("user", (ToolResultBlock("toolu_1", (TextBlock("found it"), Image(PNG)), "search"),))
    foreign = Message("assistant", (RawBlock("openai_compatible", {"reasoning_content": "x"}), TextBlock("y")))
    m.respond(req(Message.user("q"), first.message, result, Message.user("and?"), foreign, Message.user("z")))
    body = server.posts[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assistant = body["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"type": "thinking", "thinking": "deep thought", "signature": "sig=="}
    assert assistant["content"][1] == {"type": "text", "text": "Done"}
    assert assistant["content"][2] == {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "x"}}
    user = body["messages"][2]
    assert [b["type"] for b in user["content"]] == ["tool_result", "text"]
    assert user["content"][0]["content"] == [
        {"type": "text", "text": "found it"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": Image(PNG).base64}},
    ]
    assert body["messages"][3] == {"role": "assistant", "content": [{"type": "text", "text": "y"}]}


def test_arespond_against_server(server: ProviderServer) -> None:
    server.script(anthropic_stream(["As", "ync"]))
    m = model(server, max_tokens=100)
    got: list[str] = []

    async def main() -> Any:
        return await m.arespond(req(), got.append)

    reply = asyncio.run(main())
    assert reply.text == "Async" and got == ["As", "ync"]
    assert m._sdk_client is None


# -- against the fake server: failures ---------------------------------------------------------------------------


def test_429_with_retry_after_then_success_through_sdk_retries(server: ProviderServer) -> None:
    server.script(
        anthropic_error(429, "rate_limit_error", "slow down", headers={"retry-after": "0"}), anthropic_stream(["ok"])
    )
    reply = model(server, max_tokens=100, retries=2).respond(req())
    assert reply.text == "ok"
    assert len(server.posts) == 2


def test_429_outlasting_sdk_retries(server: ProviderServer) -> None:
    server.script(*[anthropic_error(429, "rate_limit_error", "slow down")] * 2)
    with pytest.raises(RateLimitError) as info:
        model(server, max_tokens=100, retries=1).respond(req())
    assert isinstance(info.value.__cause__, sdk.RateLimitError)
    assert len(server.posts) == 2


@pytest.mark.parametrize(
    ("code", "kind", "cause"),
    [
        (500, "api_error", sdk.InternalServerError),
        (503, "api_error", sdk.ServiceUnavailableError),
        (529, "overloaded_error", sdk.OverloadedError),
    ],
)
def test_server_errors_outlasting_retries(server: ProviderServer, code: int, kind: str, cause: type) -> None:
    server.script(*[anthropic_error(code, kind, "trouble")] * 2)
    with pytest.raises(ProviderError) as info:
        model(server, max_tokens=100, retries=1).respond(req())
    assert type(info.value) is ProviderError
    assert isinstance(info.value.__cause__, cause)
    assert str(info.value).startswith("Anthropic API error: ")
    assert len(server.posts) == 2


def test_529_then_success_through_sdk_retries(server: ProviderServer) -> None:
    server.script(anthropic_error(529, "overloaded_error", "Overloaded"), anthropic_stream(["fine"]))
    assert model(server, max_tokens=100, retries=1).respond(req()).text == "fine"


@pytest.mark.parametrize("cut", [0, 1])
def test_stream_ending_before_the_reply_began(server: ProviderServer, cut: int) -> None:
    server.script(sse(anthropic_events(["x"]), end_after=cut))
    with pytest.raises(ProviderError, match="ended before its final event"):
        model(server, max_tokens=100).respond(req())
    server.script(sse(anthropic_events(["x"]), end_after=cut))
    with pytest.raises(ProviderError, match="ended before its final event"):
        asyncio.run(model(server, max_tokens=100).arespond(req()))


def test_malformed_tool_json_is_provider_error(server: ProviderServer) -> None:
    server.script(anthropic_stream(["x"], tools=[ToolUse("search", ['{"q": wea', "ther}"])]))
    with pytest.raises(ProviderError) as info:
        model(server, max_tokens=100).respond(req())
    assert type(info.value) is ProviderError
    assert isinstance(info.value.__cause__, ValueError)


def test_error_event_inside_stream(server: ProviderServer) -> None:
    events = anthropic_events(["Hel"])[:4] + [
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    ]
    server.script(sse(events))
    with pytest.raises(ProviderError, match="Anthropic API error") as info:
        model(server, max_tokens=100).respond(req())
    assert isinstance(info.value.__cause__, sdk.APIStatusError)


@pytest.mark.parametrize("code", [401, 403])
def test_auth_errors(server: ProviderServer, code: int) -> None:
    kind = "authentication_error" if code == 401 else "permission_error"
    server.script(anthropic_error(code, kind, "invalid x-api-key"))
    with pytest.raises(AuthError, match="Anthropic authentication failed") as info:
        model(server, max_tokens=100, retries=2).respond(req())
    assert isinstance(info.value.__cause__, sdk.APIStatusError)
    assert len(server.posts) == 1


def test_prompt_too_long(server: ProviderServer) -> None:
    server.script(anthropic_error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))
    with pytest.raises(ContextTooLongError) as info:
        model(server, max_tokens=100).respond(req())
    assert isinstance(info.value.__cause__, sdk.BadRequestError)
    server.script(anthropic_error(413, "request_too_large", "Request exceeds the maximum size"))
    with pytest.raises(ContextTooLongError, match=r"request too large \(413\)"):
        model(server, max_tokens=100).respond(req())


def test_other_bad_request(server: ProviderServer) -> None:
    server.script(anthropic_error(400, "invalid_request_error", "messages.0.role: bad"))
    with pytest.raises(ProviderError) as info:
        model(server, max_tokens=100).respond(req())
    assert type(info.value) is ProviderError


def test_slow_first_byte_past_timeout(server: ProviderServer) -> None:
    server.script(slow(60.0, anthropic_stream(["late"])))
    start = time.monotonic()
    with pytest.raises(ProviderError) as info:
        model(server, max_tokens=100, timeout=1.0, retries=0).respond(req())
    assert time.monotonic() - start < 30  # given up at the timeout, long before the answer
    assert type(info.value) is ProviderError
    assert isinstance(info.value.__cause__, sdk.APITimeoutError)


def test_stream_stalling_past_timeout(server: ProviderServer) -> None:
    server.script(sse(anthropic_events(["never"]), pause=60))
    with pytest.raises(ProviderError, match="stream failed mid-reply") as info:
        model(server, max_tokens=100, timeout=2.0).respond(req())
    assert type(info.value) is ProviderError
    assert isinstance(info.value.__cause__, httpx2.ReadTimeout)


def test_connection_refused_is_provider_error() -> None:
    m = Anthropic("c", api_key="k", base_url="http://127.0.0.1:9", retries=0, max_tokens=10)
    with pytest.raises(ProviderError) as info:
        m.respond(req())
    assert type(info.value) is ProviderError
    assert isinstance(info.value.__cause__, sdk.APIConnectionError)


# -- output limit ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("limit", "sent"), [(128_000, 64_000), (64_000, 64_000), (32_000, 32_000), (8192, 8192)])
def test_the_output_limit_is_looked_up_once_and_capped(server: ProviderServer, limit: int, sent: int) -> None:
    server.model_limit = limit
    m = model(server)
    m.respond(req())
    m.respond(req())
    model(server).respond(req())
    assert [p.body["max_tokens"] for p in server.posts] == [sent] * 3
    assert len(server.lookups) == 1
    assert server.lookups[0].path == "/v1/models/claude-test"
    assert adapter._OUTPUT_LIMITS == {(server.url, "claude-test"): limit}


def test_the_async_lookup_shares_the_cache_with_sync(server: ProviderServer) -> None:
    server.model_limit = 32_000
    m = model(server)
    asyncio.run(m.arespond(req()))
    m.respond(req())
    assert [p.body["max_tokens"] for p in server.posts] == [32_000, 32_000]
    assert len(server.lookups) == 1


def _slow_limit(limit: int) -> Any:
    info = {"type": "model", "id": "claude-test", "display_name": "x", "created_at": "2026-01-01T00:00:00Z"}
    return slow(0.3, json_body({**info, "lifecycle": "active", "max_tokens": limit}))


def test_one_lookup_for_concurrent_requests_on_threads(server: ProviderServer) -> None:
    import threading

    server.model_limit = _slow_limit(8192)
    m = model(server)
    threads = [threading.Thread(target=m.respond, args=(req(),)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(server.lookups) == 1
    assert [p.body["max_tokens"] for p in server.posts] == [8192] * 3


def test_one_lookup_for_concurrent_requests_on_a_loop(server: ProviderServer) -> None:
    server.model_limit = _slow_limit(16_000)
    m = model(server)

    async def main() -> None:
        await asyncio.gather(*(m.arespond(req()) for _ in range(3)))

    asyncio.run(main())
    assert len(server.lookups) == 1
    assert [p.body["max_tokens"] for p in server.posts] == [16_000] * 3


@pytest.mark.parametrize("lookup", [None, status(500), status(200, {"type": "model", "id": "x"})])
def test_a_failed_lookup_sends_the_default_and_is_not_repeated(server: ProviderServer, lookup: Any) -> None:
    server.model_limit = lookup
    m = model(server)
    m.respond(req())
    m.respond(req())
    assert [p.body["max_tokens"] for p in server.posts] == [64_000, 64_000]
    assert len(server.lookups) == 1
    assert adapter._OUTPUT_LIMITS[(server.url, "claude-test")] is None


def test_a_fake_client_without_with_options_sends_the_default() -> None:
    m = Anthropic("c")
    client, _ = with_fake(m, ["x"], final(Block(type="text", text="x")))
    m.respond(req())
    assert client.kwargs[0]["max_tokens"] == 64_000
    assert adapter._OUTPUT_LIMITS == {(None, "c"): None}


def test_a_given_max_tokens_is_sent_without_a_lookup(server: ProviderServer) -> None:
    server.model_limit = 8192
    model(server, max_tokens=100_000).respond(req())
    assert server.posts[0].body["max_tokens"] == 100_000
    assert server.lookups == []


def test_a_too_high_max_tokens_is_retried_with_the_named_limit(server: ProviderServer) -> None:
    too_high = "max_tokens: 64000 > 8192, which is the maximum allowed number of output tokens for claude-test"
    server.script(anthropic_error(400, "invalid_request_error", too_high), anthropic_stream(["ok"]))
    m = model(server)
    assert m.respond(req()).text == "ok"
    m.respond(req())
    assert [p.body["max_tokens"] for p in server.posts] == [64_000, 8192, 8192]
    assert len(server.lookups) == 1
    server.reset()
    server.script(anthropic_error(400, "invalid_request_error", too_high))
    with pytest.raises(ProviderError, match="max_tokens: 64000 > 8192") as info:
        model(server, max_tokens=64_000).respond(req())
    assert type(info.value) is ProviderError
    assert len(server.posts) == 1


def test_a_too_high_max_tokens_is_retried_with_the_named_limit_async(server: ProviderServer) -> None:
    too_high = "max_tokens: 64000 > 8192, which is the maximum"
    server.script(anthropic_error(400, "invalid_request_error", too_high), anthropic_stream(["ok"]))
    assert asyncio.run(model(server).arespond(req())).text == "ok"
    assert [p.body["max_tokens"] for p in server.posts] == [64_000, 8192]


def test_too_high_retry_only_for_lower_limits(server: ProviderServer) -> None:
    server.script(anthropic_error(400, "invalid_request_error", "max_tokens: 9999 > 8192"))
    with pytest.raises(ProviderError, match="9999 > 8192"):
        model(server).respond(req())
    assert len(server.posts) == 1


def test_a_thinking_budget_over_the_model_limit_is_refused_before_sending(server: ProviderServer) -> None:
    server.model_limit = 32_000
    m = model(server, thinking=40_000)
    for call in (lambda: m.respond(req()), lambda: asyncio.run(m.arespond(req()))):
        with pytest.raises(ValueError, match="allows at most 32000 output tokens") as info:
            call()
        assert "thinking=40000, but claude-test allows at most 32000 output tokens" in str(info.value)
        assert "Set thinking below the model's output limit" in str(info.value)
        assert "Anthropic('claude-test', thinking=16000)" in str(info.value)
    assert server.posts == []


# -- real provider (only with a key) ------------------------------------------------------------------------------


@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY")
def test_real_provider_smoke() -> None:
    m = Anthropic(os.environ.get("ALPINEAGENTS_ANTHROPIC_MODEL", "claude-haiku-4-5"), max_tokens=64)
    got: list[str] = []
    reply = m.respond(Request(None, (Message.user("Say just: ok"),)), got.append)
    assert reply.text and "".join(got) == reply.text
    assert reply.usage.requests == 1 and reply.usage.output_tokens > 0


class FakeAsyncStream(FakeStream):
    def __aiter__(self) -> Any:
        async def events() -> Any:
            for event in typed_events(self.chunks, self.final):
                yield event

        return events()

    async def close(self) -> None:  # type: ignore[override]
        self.exited = True


class FakeAsyncClient(FakeClient):
    async def post(self, path: str, *, content: bytes, **options: Any) -> FakeStream:  # type: ignore[override]
        return super().post(path, content=content, **options)


def test_arespond_through_the_async_client_seam() -> None:
    m = Anthropic("claude-sonnet-5")
    stream = FakeAsyncStream(["Hel", "lo"], final(Block(type="text", text="Hello"), model="claude-sonnet-5-x"))
    client = FakeAsyncClient(stream)  # no with_options: the lookup fails, 64000 is sent
    m._async_client = lambda: client  # type: ignore[method-assign]
    got: list[str] = []
    reply = asyncio.run(m.arespond(req(), got.append))
    assert got == ["Hel", "lo"] and reply.text == "Hello" and reply.model == "claude-sonnet-5-x"
    assert client.kwargs[0]["max_tokens"] == 64_000 and stream.exited
    error = httpx2.RemoteProtocolError("peer closed")
    failing = FakeAsyncStream(["a", error], final())
    m._async_client = lambda: FakeAsyncClient(failing)  # type: ignore[method-assign]
    with pytest.raises(ProviderError) as info:
        asyncio.run(m.arespond(req()))
    assert type(info.value) is ProviderError and info.value.__cause__ is error and failing.exited
    assert m._sdk_client is None
