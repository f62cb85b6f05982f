"""`Bedrock`: construction, request mapping, the Converse stream in the event-stream framing, reasoning kept
across turns, cache points, usage, stop reasons, errors before and inside the stream, credentials kept out of errors
and stores, the async twin off the event loop, cancellation, `Retry`.

The tests drive the real boto3 `bedrock-runtime` client against the local provider server on 127.0.0.1, which
frames its replies as AWS event streams with their CRCs (`tests/servers/bedrock.py`).
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.eventstream import EventStreamBuffer
from botocore.exceptions import ClientError, EventStreamError

from alpineagents import Agent, SQLiteStore
from alpineagents.errors import AuthError, ContextTooLongError, ProviderError, RateLimitError
from alpineagents.models import Anthropic, Bedrock, resolve_model
from alpineagents.tool import tool
from alpineagents.types import (
    INVALID_ARGS_KEY,
    Image,
    Message,
    Price,
    RawBlock,
    Request,
    TextBlock,
    ToolCall,
    ToolResultBlock,
    ToolSpec,
)
from conftest import task
from servers.bedrock import (
    ToolUseOut,
    bedrock_echo_credentials,
    bedrock_error,
    bedrock_stream,
    claude_stream,
    event,
    exception,
)
from servers.provider import ProviderServer, ToolUse, echo_key

ACCESS = "AKIAZQ8C1XVB0MT4YH7N"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN0123456789"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(40)
JPEG = b"\xff\xd8\xff" + bytes(40)
SPEC = ToolSpec("search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}})


@pytest.fixture(autouse=True)
def _aws_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[None]:
    """Test credentials in the environment (boto3's chain reads them); no profile or config file of the machine;
    a fresh default session (it keeps the credentials it found)."""
    import boto3

    if "server" in request.fixturenames:
        request.getfixturevalue("server")  # it empties the environment first

    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def req(
    *messages: Message, system: str | None = None, tools: tuple[ToolSpec, ...] = (), choice: str = "auto"
) -> Request:
    return Request(system, messages or (Message.user("hi"),), tools, choice)  # type: ignore[arg-type]


def model(srv: ProviderServer, name: str = "anthropic.claude-test-v1:0", **kwargs: Any) -> Bedrock:
    kwargs.setdefault("retries", 0)
    return Bedrock(name, region="us-east-1", endpoint_url=srv.url, **kwargs)


def messages_of(m: Bedrock, *messages: Message) -> list[dict[str, Any]]:
    return m._request_body(req(*messages))["messages"]


# -- the framing ----------------------------------------------------------------------------------------------------


def test_the_server_frames_read_back_through_botocores_decoder() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(event("contentBlockDelta", {"delta": {"text": "hi"}}) + exception("throttlingException", "slow"))
    first, second = list(buffer)
    assert first.headers[":event-type"] == "contentBlockDelta" and first.payload == b'{"delta": {"text": "hi"}}'
    assert second.headers[":message-type"] == "exception"
    broken = bytearray(event("messageStop", {"stopReason": "end_turn"}))
    broken[-1] ^= 1
    bad = EventStreamBuffer()
    bad.add_data(bytes(broken))
    with pytest.raises(Exception, match="Checksum mismatch"):
        list(bad)


# -- construction -----------------------------------------------------------------------------------------------


def test_defaults_and_no_io_at_construction() -> None:
    m = Bedrock("bedrock/us.anthropic.claude-sonnet-4-5-v1:0")
    assert (m.name, m.provider, m.context_window, m.cache) == (
        "us.anthropic.claude-sonnet-4-5-v1:0",
        "bedrock",
        200_000,
        False,
    )
    assert m.supports == {"thinking", "cache", "vision"}
    assert m._sdk_client is None


def test_thinking_and_cache_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 1024"):
        Bedrock("m", thinking=100)
    with pytest.raises(ValueError, match="does not support thinking=4096"):
        Bedrock("m", supports=[], thinking=4096)
    with pytest.raises(ValueError, match="does not support cache=True"):
        Bedrock("m", supports=["vision"], cache=True)
    fields = Bedrock("m", thinking=4096, additional_fields={"top_k": 5})._request_body(req())
    assert fields["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 4096},
        "top_k": 5,
    }


# -- request mapping ----------------------------------------------------------------------------------------------


def test_system_tools_inference_and_cache_points() -> None:
    kwargs = Bedrock("m", max_tokens=500, temperature=0.3, cache=True)._request_body(
        req(Message.user("a"), Message.assistant("b"), Message.user("c"), system="sys", tools=(SPEC,))
    )
    assert kwargs["modelId"] == "m"
    assert kwargs["system"] == [{"text": "sys"}, {"cachePoint": {"type": "default"}}]
    assert kwargs["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "search",
                    "description": "Search the web",
                    "inputSchema": {"json": dict(SPEC.input_schema)},
                }
            },
            {"cachePoint": {"type": "default"}},
        ]
    }
    assert kwargs["inferenceConfig"] == {"maxTokens": 500, "temperature": 0.3}
    assert kwargs["messages"][-1] == {"role": "user", "content": [{"text": "c"}, {"cachePoint": {"type": "default"}}]}
    assert kwargs["messages"][0] == {"role": "user", "content": [{"text": "a"}]}
    plain = Bedrock("m")._request_body(req())
    assert set(plain) == {"modelId", "messages"}


def test_a_cache_point_never_changes_the_kept_wire_form() -> None:
    m = Bedrock("m", cache=True)
    first = Message.user("a")
    m._request_body(req(first))
    again = m._request_body(req(first, Message.assistant("b"), Message.user("c")))["messages"]
    assert again[0] == {"role": "user", "content": [{"text": "a"}]}


def test_tool_blocks_without_tools_get_placeholder_specs() -> None:
    messages = (
        Message.user("go"),
        Message("assistant", (ToolCall("search", {"q": "x"}, "t1"),)),
        Message("user", (ToolResultBlock("t1", "done", "search"),)),
    )
    assert Bedrock("m")._request_body(req(*messages))["toolConfig"] == {
        "tools": [
            {"toolSpec": {"name": "search", "description": "search", "inputSchema": {"json": {"type": "object"}}}}
        ]
    }


def test_user_content_tool_results_first_images_and_errors() -> None:
    result = ToolResultBlock("t1", (TextBlock("Loaded"), Image(JPEG)), "shot")
    failed = ToolResultBlock("t2", "boom", "run", is_error=True)
    out = messages_of(Bedrock("m"), Message("user", (TextBlock("see"), Image(PNG), result)), Message("user", (failed,)))
    assert len(out) == 1
    assert out[0]["content"] == [
        {
            "toolResult": {
                "toolUseId": "t1",
                "content": [{"text": "Loaded"}, {"image": {"format": "jpeg", "source": {"bytes": b64(JPEG)}}}],
                "status": "success",
            }
        },
        {"toolResult": {"toolUseId": "t2", "content": [{"text": "boom"}], "status": "error"}},
        {"text": "see"},
        {"image": {"format": "png", "source": {"bytes": b64(PNG)}}},
    ]


def test_assistant_content_keeps_reasoning_and_order_and_drops_other_providers() -> None:
    recorded = Message(
        "assistant",
        (
            RawBlock("bedrock", {"reasoningContent": {"reasoningText": {"text": "plan", "signature": "sig"}}}),
            RawBlock("bedrock", {"reasoningContent": {"redactedContent": base64.b64encode(b"\x00red").decode()}}),
            RawBlock("google", {"thought": True}),
            TextBlock("Looking."),
            ToolCall("search", {"q": "x"}, "t1"),
        ),
    )
    out = messages_of(Bedrock("m"), Message.user("go"), recorded)[1]
    assert out == {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "plan", "signature": "sig"}}},
            {"reasoningContent": {"redactedContent": b64(b"\x00red")}},
            {"text": "Looking."},
            {"toolUse": {"toolUseId": "t1", "name": "search", "input": {"q": "x"}}},
        ],
    }
    empty = messages_of(Bedrock("m"), Message.user("go"), Message("assistant", ()), Message.user("more"))
    assert empty[1] == {"role": "assistant", "content": [{"text": "(empty reply)"}]}


# -- the stream against the server ----------------------------------------------------------------------------------


def test_a_streamed_reply_with_reasoning_text_and_tool_uses(server: ProviderServer) -> None:
    server.script(
        bedrock_stream(
            ["Hel", "lo"],
            reasoning=["Let me ", "think."],
            redacted=b"\x01\x02secret",
            tools=[ToolUseOut("search", ['{"q":', ' "x"}'], id="tu_1"), ToolUseOut("search", ["{}"], id="tu_2")],
            input_tokens=100,
            output_tokens=20,
            cache_read=30,
            cache_write=5,
            split=True,
        )
    )
    got: list[str] = []
    m = model(server, price=Price(1.0, 2.0, 0.5, 1.25))
    reply = m.respond(req(Message.user("look", Image(PNG)), system="sys", tools=(SPEC,)), got.append)
    assert got == ["Hel", "lo"]
    assert reply.message.content == (
        RawBlock(
            "bedrock",
            {"reasoningContent": {"reasoningText": {"text": "Let me think.", "signature": "reasoning-signature"}}},
        ),
        RawBlock("bedrock", {"reasoningContent": {"redactedContent": base64.b64encode(b"\x01\x02secret").decode()}}),
        TextBlock("Hello"),
        ToolCall("search", {"q": "x"}, "tu_1"),
        ToolCall("search", {}, "tu_2"),
    )
    usage = reply.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        100,
        20,
        30,
        5,
    )
    assert usage.cost == pytest.approx((100 * 1.0 + 20 * 2.0 + 30 * 0.5 + 5 * 1.25) / 1_000_000)
    assert (reply.context_tokens, reply.stop_reason, reply.model) == (155, "tool_use", "anthropic.claude-test-v1:0")
    sent = server.posts[-1]
    assert sent.path == "/model/anthropic.claude-test-v1%3A0/converse-stream"
    assert sent.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS}/")
    assert sent.body["system"] == [{"text": "sys"}]
    image = sent.body["messages"][0]["content"][1]["image"]
    assert image["format"] == "png" and base64.b64decode(image["source"]["bytes"]) == PNG


def test_reasoning_goes_back_on_the_next_turn_as_received(server: ProviderServer) -> None:
    server.script(
        bedrock_stream(
            ["Checking."], reasoning=["plan"], redacted=b"\x00\xffopaque", tools=[ToolUseOut("search", ['{"q": "x"}'])]
        ),
        bedrock_stream(["Done."]),
    )
    m = model(server)
    first = m.respond(req(tools=(SPEC,)))
    call = first.tool_calls[0]
    m.respond(
        req(
            Message.user("hi"),
            first.message,
            Message("user", (ToolResultBlock(call.id, "42", "search"),)),
            tools=(SPEC,),
        )
    )
    sent = server.posts[-1].body["messages"]
    assert sent[1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "plan", "signature": "reasoning-signature"}}
    }
    assert base64.b64decode(sent[1]["content"][1]["reasoningContent"]["redactedContent"]) == b"\x00\xffopaque"
    assert sent[1]["content"][3] == {"toolUse": {"toolUseId": "tooluse_1", "name": "search", "input": {"q": "x"}}}
    assert sent[2]["content"][0] == {
        "toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "42"}], "status": "success"}
    }


@pytest.mark.parametrize("stop", ["guardrail_intervened", "content_filtered", "stop_sequence"])
def test_other_stop_reasons_pass_through(server: ProviderServer, stop: str) -> None:
    server.script(bedrock_stream(["partial"], stop_reason=stop))
    reply = model(server).respond(req())
    assert (reply.text, reply.stop_reason, reply.cut_off) == ("partial", stop, False)


def test_unreadable_tool_input_is_kept_as_text(server: ProviderServer) -> None:
    server.script(bedrock_stream([], tools=[ToolUseOut("search", ['{"q": NaN}'])]))
    assert model(server).respond(req()).tool_calls[0].args == {INVALID_ARGS_KEY: '{"q": NaN}'}


def test_a_stream_without_metadata_counts_one_request(server: ProviderServer) -> None:
    server.script(bedrock_stream(["x"], with_metadata=False))
    reply = model(server).respond(req())
    assert (reply.usage.requests, reply.usage.input_tokens, reply.context_tokens) == (1, 0, None)


def test_a_given_client_is_used(server: ProviderServer) -> None:
    import boto3

    client = boto3.client("bedrock-runtime", region_name="eu-west-1", endpoint_url=server.url)
    m = Bedrock("amazon.nova-pro-v1:0", client=client)
    assert m.respond(req()).text == "Hello"
    assert "/eu-west-1/bedrock/" in server.posts[-1].headers["authorization"]


# -- async ---------------------------------------------------------------------------------------------------------


def test_arespond_streams_off_the_event_loop(server: ProviderServer) -> None:
    server.script(bedrock_stream(["a", "b"], pause=0.2))
    threads: list[int] = []
    ticks: list[float] = []

    async def main() -> Any:
        loop_thread = threading.get_ident()

        async def tick() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.02)

        ticker = asyncio.create_task(tick())
        reply = await model(server).arespond(req(), lambda text: threads.append(threading.get_ident()))
        ticker.cancel()
        return reply, loop_thread

    reply, loop_thread = asyncio.run(main())
    assert reply.text == "ab"
    assert threads == [loop_thread, loop_thread]  # on_text runs on the loop's thread
    assert len(ticks) > 10  # the loop kept running while the stream was read


# -- errors ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "kind", "message", "expected"),
    [
        (429, "ThrottlingException", "Too many requests, please wait.", RateLimitError),
        (403, "AccessDeniedException", "You don't have access to the model.", AuthError),
        (403, "UnrecognizedClientException", "The security token included in the request is invalid.", AuthError),
        (400, "ValidationException", "Input is too long for requested model.", ContextTooLongError),
        (400, "ValidationException", "The model returned the following errors: bad field", ProviderError),
        (404, "ResourceNotFoundException", "Model not found.", ProviderError),
        (500, "InternalServerException", "Internal error.", ProviderError),
        (503, "ServiceUnavailableException", "Unavailable.", ProviderError),
    ],
)
def test_errors_before_the_stream(
    server: ProviderServer,
    code: int,
    kind: str,
    message: str,
    expected: type[Exception],
) -> None:
    server.script(bedrock_error(code, kind, message))
    with pytest.raises(ProviderError) as info:
        model(server).respond(req())
    assert type(info.value) is expected
    assert isinstance(info.value.__cause__, ClientError)
    assert kind in str(info.value) or expected is ContextTooLongError
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("throttlingException", RateLimitError),
        ("validationException", ProviderError),
        ("modelStreamErrorException", ProviderError),
        ("internalServerException", ProviderError),
    ],
)
def test_errors_inside_the_stream(server: ProviderServer, code: str, expected: type[Exception]) -> None:
    server.script(bedrock_stream(["Hel", "lo"], error_after=(2, code, "went wrong")))
    got: list[str] = []
    with pytest.raises(ProviderError) as info:
        model(server).respond(req(), got.append)
    assert type(info.value) is expected
    assert isinstance(info.value.__cause__, EventStreamError)
    assert got == ["Hel"]


def test_the_adapters_retries_setting_reaches_the_client_it_makes(server: ProviderServer) -> None:
    """The contract suite gives the adapter a client; here the adapter makes its own, with boto's retries."""
    server.script(bedrock_error(429, "ThrottlingException", "slow down"), bedrock_stream(["ok"]))
    assert model(server, retries=1).respond(req()).text == "ok"
    assert len(server.posts) == 2


def test_no_credentials_is_an_auth_error(monkeypatch: pytest.MonkeyPatch, server: ProviderServer) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    with pytest.raises(AuthError, match="AWS_ACCESS_KEY_ID") as info:
        model(server).respond(req())
    assert "Fix:" in str(info.value)
    assert not server.posts


@tool
def search(q: str) -> str:
    """Search the web."""
    return f"results for {q}"


def test_credentials_never_reach_an_error_or_the_store(server: ProviderServer, tmp_path: Path) -> None:
    server.script(bedrock_echo_credentials(403))
    store = SQLiteStore(tmp_path / "runs.db")
    with pytest.raises(AuthError) as info:
        Agent(model(server), store=store, reporter=None).run("hello")
    text = str(info.value) + str(info.value.__cause__)
    assert "Incorrect API key provided" in text and "[REDACTED]" in text
    for secret in (ACCESS, SECRET, TOKEN):
        assert secret not in text
        for path in tmp_path.rglob("*"):
            assert secret.encode() not in path.read_bytes()


def test_a_run_with_a_tool_is_saved_loaded_and_continued(server: ProviderServer, tmp_path: Path) -> None:
    server.script(
        bedrock_stream(["Searching."], reasoning=["plan"], tools=[ToolUseOut("search", ['{"q": "x"}'])]),
        bedrock_stream(["Found it."]),
        bedrock_stream(["Still here."]),
    )
    store = SQLiteStore(tmp_path / "runs.db")
    state = task("find x")
    Agent(model(server), tools=[search], store=store, reporter=None).run(state)
    assert state.messages[-1].text == "Found it."
    loaded = store.load(state.id)
    loaded.add_message(Message.user("and now?"))
    Agent(model(server), tools=[search], store=store, reporter=None).run(loaded)
    sent = server.posts[-1].body["messages"]
    assert sent[1]["content"][0]["reasoningContent"]["reasoningText"]["signature"] == "reasoning-signature"
    assert sent[2]["content"][0]["toolResult"]["content"] == [{"text": "results for x"}]


def test_resolve_model_picks_bedrock() -> None:
    m = resolve_model("bedrock/us.amazon.nova-pro-v1:0", region="us-west-2")
    assert isinstance(m, Bedrock) and (m.name, m.region) == ("us.amazon.nova-pro-v1:0", "us-west-2")
    with pytest.raises(TypeError, match="does not accept api_key="):
        resolve_model("bedrock/x", api_key="k")


# -- Claude on Bedrock through the Anthropic adapter ----------------------------------------------------------------


def claude_on_bedrock(srv: ProviderServer, **kwargs: Any) -> Anthropic:
    from anthropic import AnthropicBedrock

    client = AnthropicBedrock(
        aws_region="us-east-1", aws_access_key=ACCESS, aws_secret_key=SECRET, base_url=srv.url, max_retries=0
    )
    return Anthropic("anthropic.claude-test-v1:0", client=client, max_tokens=1024, **kwargs)


def test_claude_on_bedrock_through_the_anthropic_adapter(server: ProviderServer) -> None:
    server.script(claude_stream(["Hel", "lo"], thinking="plan", tools=[ToolUse("search", ['{"q": "x"}'])]))
    got: list[str] = []
    reply = claude_on_bedrock(server).respond(req(system="sys", tools=(SPEC,)), got.append)
    assert got == ["Hel", "lo"]
    assert reply.message.content[0] == RawBlock(
        "anthropic", {"type": "thinking", "thinking": "plan", "signature": "sig=="}
    )
    assert reply.tool_calls == (ToolCall("search", {"q": "x"}, "toolu_1"),)
    sent = server.posts[-1]
    assert sent.path == "/model/anthropic.claude-test-v1:0/invoke-with-response-stream"
    assert sent.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS}/")
    assert sent.body["system"] == "sys" and "model" not in sent.body
    assert "anthropic_version" in sent.body  # Bedrock takes the API version in the body


def test_claude_on_bedrock_async_and_errors_keep_the_credentials_out(server: ProviderServer) -> None:
    from anthropic import AsyncAnthropicBedrock

    client = AsyncAnthropicBedrock(
        aws_region="us-east-1", aws_access_key=ACCESS, aws_secret_key=SECRET, base_url=server.url, max_retries=0
    )
    model_ = Anthropic("anthropic.claude-test-v1:0", client=client, max_tokens=1024)
    assert asyncio.run(model_.arespond(req())).text == "Hello"
    server.script(echo_key(403))
    with pytest.raises(AuthError) as info:
        claude_on_bedrock(server).respond(req())
    text = str(info.value) + str(info.value.__cause__)
    assert "Incorrect API key provided" in text
    for secret in (ACCESS, SECRET):
        assert secret not in text


def test_an_unknown_profile_is_an_auth_error_and_a_refused_connection_names_the_request(
    server: ProviderServer,
) -> None:
    with pytest.raises(AuthError, match="could not be found") as info:
        model(server, profile="no-such-profile").respond(req())
    assert "Fix:" in str(info.value) and not server.posts
    with pytest.raises(ProviderError, match="Bedrock request failed \\(EndpointConnectionError\\)") as refused:
        Bedrock("m", region="us-east-1", endpoint_url="http://127.0.0.1:9", retries=0).respond(req())
    assert refused.value.status_code is None
