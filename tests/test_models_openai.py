"""`OpenAICompatible`: clients, request mapping, streamed chunks, usage, errors.

Most tests drive the real `openai` SDK against the fake provider server on 127.0.0.1 (`tests/servers/`);
some replace the SDK client through the fixed seams (`_client()`, `_async_client()`).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import httpx2
import openai as sdk
import pytest

from alpineagents.errors import AuthError, ContextTooLongError, ProviderError, RateLimitError
from alpineagents.models import OpenAICompatible
from alpineagents.models.base import OnStream
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
from servers.provider import FnCall, ProviderServer, openai_chunks, openai_error, openai_stream, slow, sse, status

PNG = b"\x89PNG\r\n\x1a\n" + bytes(100)
GIF = b"GIF89a" + bytes(100)
SPEC = ToolSpec("search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}})


def req(
    *messages: Message, system: str | None = None, tools: tuple[ToolSpec, ...] = (), choice: str = "auto"
) -> Request:
    return Request(system, messages or (Message.user("hi"),), tools, choice)  # type: ignore[arg-type]


def model(srv: ProviderServer, name: str = "gpt-test", **kwargs: Any) -> OpenAICompatible:
    kwargs.setdefault("retries", 0)
    return OpenAICompatible(name, base_url=srv.openai_url, **kwargs)


# -- fakes for the seams -------------------------------------------------------------------------------------------


def ns(**kwargs: Any) -> SimpleNamespace:
    return SimpleNamespace(**kwargs)


def chunk(content: str | None = None, *, finish: str | None = None, tool_calls: Any = None, **extra: Any) -> Any:
    delta = ns(content=content, tool_calls=tool_calls, **{k: v for k, v in extra.items() if k == "reasoning_content"})
    fields = {k: v for k, v in extra.items() if k != "reasoning_content"}
    return ns(choices=[ns(delta=delta, finish_reason=finish)], usage=fields.pop("usage", None), **fields)


def tc(index: int, *, id: str | None = None, name: str | None = None, arguments: str | None = None) -> Any:  # noqa: A002
    return ns(index=index, id=id, function=ns(name=name, arguments=arguments))


class FakeStream:
    def __init__(self, chunks: list[Any]) -> None:
        self.chunks = chunks
        self.closed = False

    def __iter__(self) -> Iterator[Any]:
        for item in self.chunks:
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        self.closed = True


class FakeClient:
    """Stands in for the SDK client behind `_client()`: `post` records the JSON body it was given."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.kwargs: list[dict[str, Any]] = []

    def post(self, path: str, *, content: bytes, **options: Any) -> Any:
        assert path == "/chat/completions" and options["stream"] is True
        self.kwargs.append(json.loads(content))
        if isinstance(self.stream, BaseException):
            raise self.stream
        return self.stream


def with_fake(m: OpenAICompatible, chunks: Any) -> tuple[FakeClient, Any]:
    stream = FakeStream(chunks) if isinstance(chunks, list) else chunks
    client = FakeClient(stream)
    m._client = lambda: client  # type: ignore[method-assign]
    return client, stream


def status_error(cls: type[sdk.APIStatusError], code: int, message: str, body: Any = None) -> sdk.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    return cls(message, response=httpx2.Response(code, request=request), body=body)


# -- construction and clients ---------------------------------------------------------------------------------------


def test_openai_compatible_defaults_and_no_thinking_parameter() -> None:
    m = OpenAICompatible("gpt-5")
    assert m.provider == "openai_compatible"
    assert m.context_window == 128_000
    assert m.supports == frozenset()
    assert m.base_url is None and m.api_key is None
    assert m.name == "gpt-5"
    assert OpenAICompatible("anthropic/claude-sonnet-5").name == "anthropic/claude-sonnet-5"
    assert OpenAICompatible("x", supports=["vision"]).supports == {"vision"}
    assert OpenAICompatible("x", context_window=8000).context_window == 8000
    with pytest.raises(TypeError):
        OpenAICompatible("gpt-5", thinking=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        OpenAICompatible("gpt-5", cache=True)  # type: ignore[call-arg]


def test_credentials_a_placeholder_key_for_a_base_url_and_auth_error_without_any(
    no_credentials: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(AuthError, match="no credentials") as info:
        OpenAICompatible("gpt-5").respond(req())
    assert isinstance(info.value.__cause__, sdk.OpenAIError)
    with pytest.raises(AuthError, match="no credentials"):
        asyncio.run(OpenAICompatible("gpt-5").arespond(req()))
    local = OpenAICompatible("llama3:8b", base_url="http://127.0.0.1:9/v1")
    assert local._client().api_key == "not-needed"
    assert local.api_key is None
    monkeypatch.setenv("OPENAI_API_KEY", "")
    assert OpenAICompatible("x", base_url="http://127.0.0.1:9/v1")._client().api_key == "not-needed"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    assert OpenAICompatible("x", base_url="http://127.0.0.1:9/v1")._client().api_key == "sk-real"
    assert OpenAICompatible("x", base_url="http://h/v1", api_key="given")._client().api_key == "given"


def test_client_kwargs_and_lazy_sdk_lookup(monkeypatch: pytest.MonkeyPatch, no_credentials: None) -> None:
    made: list[dict[str, Any]] = []

    class Capture:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)

    monkeypatch.setattr(sdk, "OpenAI", Capture)
    monkeypatch.setattr(sdk, "AsyncOpenAI", Capture)
    m = OpenAICompatible("x", base_url="http://h/v1", retries=4, timeout=2.5)
    assert m._sdk_client is None
    client = m._client()
    assert m._client() is client
    assert made == [{"max_retries": 4, "base_url": "http://h/v1", "api_key": "not-needed", "timeout": 2.5}]

    async def twice() -> tuple[Any, Any]:
        return m._async_client(), m._async_client()

    a, b = asyncio.run(twice())
    c, _ = asyncio.run(twice())
    assert a is b and c is not a
    assert len(made) == 3


# -- request mapping ------------------------------------------------------------------------------------------------


def test_stream_options_and_the_output_token_key() -> None:
    kwargs = OpenAICompatible("gpt-5")._request_kwargs(req())
    assert kwargs["stream"] is True
    assert kwargs["stream_options"] == {"include_usage": True}
    assert kwargs["model"] == "gpt-5"
    assert not {"max_tokens", "max_completion_tokens", "temperature"} & kwargs.keys()
    assert OpenAICompatible("gpt-5", max_tokens=4000)._request_kwargs(req())["max_tokens"] == 4000
    o3 = OpenAICompatible("o3", max_tokens=4000)._request_kwargs(req())
    assert o3["max_completion_tokens"] == 4000 and "max_tokens" not in o3
    assert "max_completion_tokens" in OpenAICompatible("o4-mini", max_tokens=1)._request_kwargs(req())
    assert "max_tokens" in OpenAICompatible("O3", max_tokens=1)._request_kwargs(req())
    assert "max_tokens" in OpenAICompatible("omni", max_tokens=1)._request_kwargs(req())
    assert OpenAICompatible("x", temperature=0)._request_kwargs(req())["temperature"] == 0


def test_tools_and_tool_choice_only_when_tools_are_given() -> None:
    m = OpenAICompatible("x")
    kwargs = m._request_kwargs(req(tools=(SPEC,), choice="none"))
    assert kwargs["tool_choice"] == "none"
    assert kwargs["tools"] == [
        {
            "type": "function",
            "function": {"name": "search", "description": "Search the web", "parameters": SPEC.input_schema},
        }
    ]
    assert "tool_choice" not in m._request_kwargs(req(tools=(SPEC,)))
    bare = m._request_kwargs(req(choice="none"))
    assert "tool_choice" not in bare and "tools" not in bare


def test_system_plain_text_and_an_error_result() -> None:
    m = OpenAICompatible("x")
    messages = m._request_kwargs(
        req(
            Message.user("just words"),
            Message("assistant", (ToolCall("t", {}, "c1"),)),
            Message("user", (ToolResultBlock("c1", "boom", "t", is_error=True),)),
            system="sys",
        )
    )["messages"]
    assert messages[0] == {"role": "system", "content": "sys"}
    assert messages[1] == {"role": "user", "content": "just words"}
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "Error: boom"}
    assert len(messages) == 4


def test_tool_result_images_go_in_the_next_user_message() -> None:
    gif, png = Image(GIF), Image(PNG)
    message = Message(
        "user",
        (
            ToolResultBlock("c1", (TextBlock("Loaded"), gif), "shot"),
            TextBlock("see this"),
            png,
        ),
    )
    messages = OpenAICompatible("x")._request_kwargs(req(message))["messages"]
    assert messages[0] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "Loaded\n(1 image in the next user message, inside <tool_result> tags)",
    }
    assert messages[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": '<tool_result tool_name="shot" tool_call_id="c1">'},
            {"type": "image_url", "image_url": {"url": f"data:image/gif;base64,{gif.base64}"}},
            {"type": "text", "text": "</tool_result>"},
            {"type": "text", "text": "see this"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png.base64}"}},
        ],
    }
    assert len(messages) == 2


def test_tool_result_image_counts_and_no_user_dict() -> None:
    m = OpenAICompatible("x")
    two = ToolResultBlock("c1", (TextBlock("a"), Image(PNG), Image(GIF)), "t")
    none = ToolResultBlock("c2", (TextBlock("b"),), "t", is_error=True)
    messages = m._request_kwargs(req(Message("user", (two, none))))["messages"]
    assert messages[0]["content"] == "a\n(2 images in the next user message, inside <tool_result> tags)"
    assert messages[1]["content"] == "Error: b\n(0 images in the next user message, inside <tool_result> tags)"
    assert messages[2]["role"] == "user" and len(messages[2]["content"]) == 4
    only_results = m._request_kwargs(req(Message("user", (ToolResultBlock("c1", "done", "t"),))))["messages"]
    assert only_results == [{"role": "tool", "tool_call_id": "c1", "content": "done"}]


def test_adjacent_texts_merge() -> None:
    png = Image(PNG)
    message = Message("user", (TextBlock("a"), TextBlock("b"), png, TextBlock(""), TextBlock("c")))
    content = OpenAICompatible("x")._request_kwargs(req(message))["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "ab"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png.base64}"}},
        {"type": "text", "text": "c"},
    ]


def test_assistant_messages_text_calls_and_own_raw_blocks() -> None:
    m = OpenAICompatible("x")
    assert m._assistant_message(Message("assistant", ())) == {"role": "assistant", "content": "(empty reply)"}
    call = ToolCall("search", {"opts": {"tags": ["a"]}, "é": 1}, "c1")
    only_call = m._assistant_message(Message("assistant", (call,)))
    assert only_call["content"] is None
    assert only_call["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "search", "arguments": json.dumps(call.args, ensure_ascii=False)},
        }
    ]
    assert only_call["tool_calls"][0]["function"]["arguments"] == '{"opts": {"tags": ["a"]}, "é": 1}'
    own = m._assistant_message(
        Message(
            "assistant",
            (
                RawBlock("openai_compatible", {"reasoning_content": "hm"}),
                TextBlock("  "),
                RawBlock("anthropic", {"type": "thinking"}),
                Image(PNG),
                call,
            ),
        )
    )
    assert list(own) == ["role", "content", "reasoning_content", "tool_calls"]
    assert own["reasoning_content"] == "hm"
    assert own["content"] == "  "
    assert "type" not in own
    assert "tool_calls" not in m._assistant_message(Message.assistant("x"))


def test_same_role_messages_merged_on_the_wire() -> None:
    messages = OpenAICompatible("x")._request_kwargs(req(Message.user("a"), Message.user("b")))["messages"]
    assert messages == [{"role": "user", "content": "ab"}]


# -- streamed replies ----------------------------------------------------------------------------------------------


def test_text_and_tool_call_deltas_accumulate() -> None:
    m = OpenAICompatible("x")
    with_fake(
        m,
        [
            chunk("Hel"),
            chunk("lo"),
            chunk(tool_calls=[tc(0, id="call_1", name="search")]),
            chunk(tool_calls=[tc(0, arguments='{"q": ')]),
            chunk(tool_calls=[tc(0, arguments='"weather"}')], finish="tool_calls"),
        ],
    )
    got: list[str] = []
    reply = m.respond(req(), got.append)
    assert got == ["Hel", "lo"]
    assert reply.text == "Hello"
    assert reply.tool_calls == (ToolCall("search", {"q": "weather"}, "call_1"),)
    assert reply.message.content[0] == TextBlock("Hello")
    assert reply.stop_reason == "tool_calls"


def test_generated_ids_arguments_and_reasoning() -> None:
    m = OpenAICompatible("x")
    ids: list[str] = []
    for _ in range(2):
        with_fake(
            m,
            [
                chunk(reasoning_content="thinking "),
                chunk(reasoning_content="more"),
                chunk(tool_calls=[tc(0, name="a", arguments="")]),
                chunk(tool_calls=[tc(1, name="b", arguments="[1,2]")]),
            ],
        )
        reply = m.respond(req())
        ids.extend(call.id for call in reply.tool_calls)
        assert reply.tool_calls[0].args == {}
        assert reply.tool_calls[1].args == {INVALID_ARGS_KEY: "[1,2]"}
        assert reply.message.content[0] == RawBlock("openai_compatible", {"reasoning_content": "thinking more"})
    assert len(set(ids)) == 4
    assert all(re.fullmatch(r"call_[0-9a-f]{12}", i) for i in ids)


def test_invalid_and_non_object_arguments() -> None:
    m = OpenAICompatible("x")
    with_fake(
        m,
        [
            chunk(tool_calls=[tc(0, id="a", name="t", arguments='{"q": wea')]),
            chunk(tool_calls=[tc(1, id="b", name="t", arguments="null")]),
            chunk(tool_calls=[tc(2, id="c", name="t", arguments='"s"')]),
        ],
    )
    calls = m.respond(req()).tool_calls
    assert [c.args for c in calls] == [
        {INVALID_ARGS_KEY: '{"q": wea'},
        {INVALID_ARGS_KEY: "null"},
        {INVALID_ARGS_KEY: '"s"'},
    ]


def test_finish_reason_length_truncates_the_last_call() -> None:
    m = OpenAICompatible("x")
    with_fake(
        m,
        [
            chunk(tool_calls=[tc(1, id="b", name="t2", arguments='{"y": 2}')]),
            chunk(tool_calls=[tc(0, id="a", name="t1", arguments='{"x": 1}')]),
            chunk(finish="length"),
        ],
    )
    reply = m.respond(req())
    assert reply.tool_calls == (
        ToolCall("t1", {"x": 1}, "a"),
        ToolCall("t2", {INVALID_ARGS_KEY: TRUNCATED_ARGS_MESSAGE}, "b"),
    )
    assert reply.stop_reason == "length" and reply.cut_off


def test_usage_with_cached_and_cache_write_tokens() -> None:
    m = OpenAICompatible("x")
    usage = ns(prompt_tokens=100, completion_tokens=20, prompt_tokens_details=ns(cached_tokens=30))
    with_fake(m, [chunk("a"), ns(choices=[], usage=usage)])
    reply = m.respond(req())
    assert reply.usage == Usage(input_tokens=70, output_tokens=20, cache_read_tokens=30, requests=1)
    assert reply.context_tokens == 120
    written = ns(
        prompt_tokens=10000, completion_tokens=1, prompt_tokens_details=ns(cached_tokens=None, cache_write_tokens=8000)
    )
    with_fake(m, [ns(choices=[], usage=written)])
    reply = m.respond(req())
    assert reply.usage.input_tokens == 2000 and reply.usage.cache_write_tokens == 8000
    assert reply.usage.cache_read_tokens == 0
    with_fake(m, [ns(choices=[], usage=ns(prompt_tokens=5, completion_tokens=1, prompt_tokens_details=None))])
    assert m.respond(req()).usage == Usage(5, 1, 0, 0, 1)
    with_fake(m, [chunk("a")])
    reply = m.respond(req())
    assert reply.usage == Usage(requests=1) and reply.usage.cost is None
    assert reply.context_tokens is None
    priced = OpenAICompatible("x", price=Price(input=1, output=2))
    with_fake(priced, [chunk("a")])
    assert priced.respond(req()).usage.cost == 0.0
    with_fake(priced, [ns(choices=[], usage=usage)])
    assert priced.respond(req()).usage.cost == Price(input=1, output=2).cost(Usage(70, 20, 30, 0, 1))


def test_reply_model_is_the_first_reported_one() -> None:
    m = OpenAICompatible("mine")
    with_fake(m, [chunk("a", model=""), chunk("b", model="anthropic/claude-sonnet-5"), chunk("c", model="other/model")])
    assert m.respond(req()).model == "anthropic/claude-sonnet-5"
    with_fake(m, [chunk("a")])
    assert m.respond(req()).model == "mine"


# -- errors --------------------------------------------------------------------------------------------------------


def test_a_callback_error_closes_the_stream() -> None:
    m = OpenAICompatible("x")
    _, stream = with_fake(m, [chunk("a"), chunk("b")])
    error = RuntimeError("reporter")

    def boom(_text: str) -> None:
        raise error

    with pytest.raises(RuntimeError) as info:
        m.respond(req(), boom)
    assert info.value is error
    assert stream.closed
    sdk_error = status_error(sdk.RateLimitError, 429, "x")

    def boom_sdk(_text: str) -> None:
        raise sdk_error

    _, stream = with_fake(m, [chunk("a")])
    with pytest.raises(sdk.RateLimitError) as sinfo:
        m.respond(req(), boom_sdk)
    assert sinfo.value is sdk_error and stream.closed


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: status_error(sdk.RateLimitError, 429, "slow down"), RateLimitError),
        (lambda: status_error(sdk.AuthenticationError, 401, "bad key"), AuthError),
        (lambda: status_error(sdk.PermissionDeniedError, 403, "no"), AuthError),
        (
            lambda: status_error(sdk.BadRequestError, 400, "too long", {"code": "context_length_exceeded"}),
            ContextTooLongError,
        ),
        (
            lambda: status_error(sdk.BadRequestError, 400, "This model's maximum context length is 8192"),
            ContextTooLongError,
        ),
        (lambda: status_error(sdk.BadRequestError, 400, "bad role"), ProviderError),
        (lambda: status_error(sdk.InternalServerError, 500, "oops"), ProviderError),
        (lambda: sdk.APIConnectionError(request=httpx2.Request("POST", "http://x")), ProviderError),
    ],
)
def test_sdk_errors_map_to_the_library_errors(make: Any, expected: type[Exception]) -> None:
    m = OpenAICompatible("x")
    for where in ("create", "stream"):
        original = make()
        _, stream = with_fake(m, original if where == "create" else [chunk("a"), original])
        with pytest.raises(ProviderError) as info:
            m.respond(req())
        assert type(info.value) is expected
        assert info.value.__cause__ is original
        assert str(info.value) == str(original)
        if where == "stream":
            assert stream.closed


def test_iterator_without_close_and_interrupt() -> None:
    m = OpenAICompatible("x")
    with_fake(m, iter([chunk("a"), chunk("b", finish="stop")]))
    assert m.respond(req()).text == "ab"
    interrupt = KeyboardInterrupt()
    _, stream = with_fake(m, [chunk("a"), interrupt])
    with pytest.raises(KeyboardInterrupt) as info:
        m.respond(req())
    assert info.value is interrupt and stream.closed


# -- against the fake server ---------------------------------------------------------------------------------------


def test_stream_and_wire_request(server: ProviderServer) -> None:
    server.script(
        openai_stream(
            ["Hel", "lo"],
            calls=[FnCall("search", ['{"q": ', '"weather"}'], id="call_9")],
            reasoning=["hm"],
            cached_tokens=30,
            prompt_tokens=100,
            completion_tokens=20,
        )
    )
    m = model(server, max_tokens=300, temperature=0.5)
    got: list[str] = []
    reply = m.respond(req(Message.user("look", Image(PNG)), system="sys", tools=(SPEC,)), got.append)
    assert got == ["Hel", "lo"]
    assert reply.message.content == (
        RawBlock("openai_compatible", {"reasoning_content": "hm"}),
        TextBlock("Hello"),
        ToolCall("search", {"q": "weather"}, "call_9"),
    )
    assert reply.usage == Usage(70, 20, 30, 0, 1)
    assert reply.context_tokens == 120
    assert reply.stop_reason == "tool_calls"
    assert reply.model == "gpt-test"
    post = server.posts[-1]
    assert post.path == "/v1/chat/completions"
    assert post.headers["authorization"] == "Bearer not-needed"
    body = post.body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 300 and body["temperature"] == 0.5
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    assert body["messages"][1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert body["tools"][0]["function"]["name"] == "search"


def test_reasoning_sent_back_and_tool_flow(server: ProviderServer) -> None:
    server.script(openai_stream([], calls=[FnCall("search", ['{"q": 1}'], id=None)], reasoning=["why"]))
    m = model(server)
    first = m.respond(req(Message.user("q")))
    call = first.tool_calls[0]
    assert call.id.startswith("call_")
    m.respond(req(Message.user("q"), first.message, Message("user", (ToolResultBlock(call.id, "found", "search"),))))
    messages = server.posts[-1].body["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "why",
        "tool_calls": [{"id": call.id, "type": "function", "function": {"name": "search", "arguments": '{"q": 1}'}}],
    }
    assert messages[2] == {"role": "tool", "tool_call_id": call.id, "content": "found"}


def test_malformed_tool_json_from_server(server: ProviderServer) -> None:
    server.script(openai_stream([], calls=[FnCall("search", ['{"q": wea', "ther}"])]))
    reply = model(server).respond(req())
    assert reply.tool_calls == (ToolCall("search", {INVALID_ARGS_KEY: '{"q": weather}'}, "call_1"),)


def test_arespond_against_server(server: ProviderServer) -> None:
    server.script(openai_stream(["As", "ync"]))
    got: list[str] = []
    m = model(server)
    reply = asyncio.run(m.arespond(req(), got.append))
    assert reply.text == "Async" and got == ["As", "ync"]
    assert m._sdk_client is None


def test_429_outlasting_retries(server: ProviderServer) -> None:
    server.script(*[openai_error(429, "Rate limit reached", kind="rate_limit_error")] * 2)
    with pytest.raises(RateLimitError) as info:
        model(server, retries=1).respond(req())
    assert isinstance(info.value.__cause__, sdk.RateLimitError)
    assert len(server.posts) == 2


@pytest.mark.parametrize("code", [500, 503])
def test_server_errors(server: ProviderServer, code: int) -> None:
    server.script(*[status(code)] * 2)
    with pytest.raises(ProviderError) as info:
        model(server, retries=1).respond(req())
    assert type(info.value) is ProviderError
    assert isinstance(info.value.__cause__, sdk.InternalServerError)
    assert len(server.posts) == 2


def test_error_object_inside_stream(server: ProviderServer) -> None:
    chunks = openai_chunks(["Hel"])[:2] + [(None, {"error": {"message": "server melted", "type": "server_error"}})]
    server.script(sse(chunks))
    with pytest.raises(ProviderError, match="server melted") as info:
        model(server).respond(req())
    assert isinstance(info.value.__cause__, sdk.APIError)


def test_auth_and_context_errors(server: ProviderServer) -> None:
    server.script(
        openai_error(401, "Incorrect API key provided", kind="invalid_request_error", err_code="invalid_api_key")
    )
    with pytest.raises(AuthError) as info:
        model(server).respond(req())
    assert isinstance(info.value.__cause__, sdk.AuthenticationError)
    server.script(
        openai_error(400, "This model's maximum context length is 8192 tokens", err_code="context_length_exceeded")
    )
    with pytest.raises(ContextTooLongError) as cinfo:
        model(server).respond(req())
    assert isinstance(cinfo.value.__cause__, sdk.BadRequestError)
    server.script(openai_error(400, "Invalid 'messages[0].role'"))
    with pytest.raises(ProviderError) as pinfo:
        model(server).respond(req())
    assert type(pinfo.value) is ProviderError


def test_slow_first_byte_past_timeout(server: ProviderServer) -> None:
    server.script(slow(60.0, openai_stream(["late"])))
    start = time.monotonic()
    with pytest.raises(ProviderError) as info:
        model(server, timeout=1.0).respond(req())
    assert time.monotonic() - start < 30  # given up at the timeout, long before the answer
    assert type(info.value) is ProviderError
    assert isinstance(info.value.__cause__, sdk.APITimeoutError)


def test_stream_stalling_past_timeout(server: ProviderServer) -> None:
    server.script(sse(openai_chunks(["never"]), pause=60))
    with pytest.raises(ProviderError) as info:
        model(server, timeout=2.0).respond(req())
    assert type(info.value) is ProviderError
    assert isinstance(info.value.__cause__, sdk.APITimeoutError)


@pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="needs OPENAI_API_KEY")
def test_real_provider_smoke() -> None:
    m = OpenAICompatible(os.environ.get("ALPINEAGENTS_OPENAI_MODEL", "gpt-5-mini"))
    got: list[str] = []
    reply = m.respond(Request(None, (Message.user("Say just: ok"),)), got.append)
    assert reply.text and "".join(got) == reply.text
    assert reply.usage.requests == 1


class FakeAsyncStream:
    def __init__(self, chunks: list[Any]) -> None:
        self.chunks = chunks
        self.closed = False

    def __aiter__(self) -> Any:
        async def items() -> Any:
            for item in self.chunks:
                if isinstance(item, BaseException):
                    raise item
                yield item

        return items()

    async def close(self) -> None:
        self.closed = True


def test_arespond_through_the_async_client_seam() -> None:
    m = OpenAICompatible("x")
    stream = FakeAsyncStream([chunk("Hel"), chunk("lo", finish="stop")])

    async def post(path: str, **options: Any) -> Any:
        return stream

    m._async_client = lambda: ns(post=post)  # type: ignore[method-assign]
    got: list[str] = []
    reply = asyncio.run(m.arespond(req(), got.append))
    assert reply.text == "Hello" and got == ["Hel", "lo"] and stream.closed
    error = status_error(sdk.RateLimitError, 429, "busy")
    stream = FakeAsyncStream([chunk("a"), error])
    with pytest.raises(RateLimitError) as info:
        asyncio.run(m.arespond(req()))
    assert info.value.__cause__ is error and stream.closed


def test_a_call_without_a_server_id_streams_its_arguments_under_the_id_its_reply_gives_it(
    server: ProviderServer,
) -> None:
    class Calls(OnStream):
        def __init__(self) -> None:
            self.pieces: list[tuple[str, str, str]] = []

        def tool_args(self, call_id: str, name: str, delta: str) -> None:
            self.pieces.append((call_id, name, delta))

    server.script(
        openai_stream([], calls=[FnCall("a", ['{"x": ', "1}"], id=None), FnCall("b", ["{}"], id=None, index=1)])
    )
    got = Calls()
    reply = model(server).respond(req(), got)
    first, second = reply.tool_calls
    assert {call_id for call_id, _, _ in got.pieces} == {first.id, second.id} and first.id != second.id
    assert "".join(d for call_id, name, d in got.pieces if call_id == first.id and name == "a") == '{"x": 1}'
    assert "".join(d for call_id, name, d in got.pieces if call_id == second.id and name == "b") == "{}"
