"""`OpenAIResponses`: the OpenAI Responses API adapter, through the real `openai` SDK against the local server.

Construction and `resolve_model`, the request items, the streamed reply (text, reasoning items, parallel function
calls, refusal, incomplete), usage and cost, the errors, `Retry`/`Fallback`, chaining with
`previous_response_id`, and a multi-turn run with tools saved, loaded in a fresh process and continued.
"""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai as sdk
import pytest
from openai.types.responses import Response

from alpineagents import Agent, FileStore
from alpineagents.errors import AuthError, ContextTooLongError, ProviderError, RateLimitError
from alpineagents.models import OpenAICompatible, OpenAIResponses, resolve_model
from alpineagents.models.openai_responses import RESPONSE_IDS
from alpineagents.models.wrappers import Fallback, Retry
from alpineagents.state import State
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
    Usage,
)
from conftest import results
from servers.provider import ProviderServer, openai_error, openai_stream, sse, status
from servers.responses import (
    FunctionCallOut,
    Reasoning,
    Refusal,
    Text,
    responses_events,
    responses_stream,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(50)
SPEC = ToolSpec("search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}})
TESTS = Path(__file__).resolve().parent


def req(
    *messages: Message, system: str | None = None, tools: tuple[ToolSpec, ...] = (), choice: str = "auto"
) -> Request:
    return Request(system, messages or (Message.user("hi"),), tools, choice)  # type: ignore[arg-type]


def model(srv: ProviderServer, **kwargs: Any) -> OpenAIResponses:
    kwargs.setdefault("retries", 0)
    return OpenAIResponses("gpt-test", base_url=srv.openai_url, **kwargs)


def ids_block(reply_message: Message) -> RawBlock:
    return next(b for b in reply_message.content if isinstance(b, RawBlock) and b.data.get("type") == RESPONSE_IDS)


# -- construction and resolve_model -----------------------------------------------------------------------------


def test_construction_needs_no_credentials_and_sets_stateless_defaults(no_credentials: None) -> None:
    m = OpenAIResponses("gpt-5")
    assert repr(m) == "OpenAIResponses('gpt-5')"
    assert m.provider == "openai_responses" and m.name == "gpt-5"
    assert m.store is False and m.chain is False
    assert m.context_window == 400_000
    assert m.supports == frozenset({"thinking", "vision"})
    assert m._sdk_client is None
    kwargs = m._request_kwargs(req(Message.user("q")))
    assert kwargs["store"] is False and kwargs["include"] == ["reasoning.encrypted_content"]
    assert kwargs["stream"] is True and "previous_response_id" not in kwargs
    assert OpenAIResponses("gpt-5", chain=True).store is True


def test_reasoning_setting_and_its_feature_check() -> None:
    assert OpenAIResponses("o5", reasoning="high")._request_kwargs(req())["reasoning"] == {
        "effort": "high",
        "summary": "auto",
    }
    custom = {"effort": "low", "summary": "concise"}
    assert OpenAIResponses("o5", reasoning=custom)._request_kwargs(req())["reasoning"] == custom
    assert "reasoning" not in OpenAIResponses("o5")._request_kwargs(req())
    with pytest.raises(ValueError, match="does not support reasoning='high'"):
        OpenAIResponses("o5", reasoning="high", supports=[])


def test_resolve_model_picks_the_responses_adapter_by_its_prefix_only() -> None:
    m = resolve_model("openai-responses/gpt-5", max_tokens=100, chain=True)
    assert type(m) is OpenAIResponses and m.name == "gpt-5" and m.max_tokens == 100 and m.chain
    at_url = resolve_model("openai-responses/gpt-5", base_url="http://proxy/v1")
    assert type(at_url) is OpenAIResponses and at_url.base_url == "http://proxy/v1"
    assert type(resolve_model("openai/gpt-5")) is OpenAICompatible
    assert type(resolve_model("gpt-5")) is OpenAICompatible
    with pytest.raises(TypeError, match="does not accept thinking="):
        resolve_model("openai-responses/gpt-5", thinking=True)


# -- request items -----------------------------------------------------------------------------------------------


def test_request_settings_map_to_the_responses_parameters() -> None:
    m = OpenAIResponses("gpt-5", max_tokens=300, temperature=0.2)
    kwargs = m._request_kwargs(req(system="be brief", tools=(SPEC,), choice="none"))
    assert kwargs["instructions"] == "be brief"
    assert kwargs["max_output_tokens"] == 300 and kwargs["temperature"] == 0.2
    assert kwargs["tools"] == [
        {
            "type": "function",
            "name": "search",
            "description": "Search the web",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            "strict": False,
        }
    ]
    assert kwargs["tool_choice"] == "none"
    bare = m._request_kwargs(req())
    assert "tools" not in bare and "tool_choice" not in bare and "instructions" not in bare


def test_user_messages_tool_results_and_images_become_items() -> None:
    m = OpenAIResponses("gpt-5")
    results_msg = Message(
        "user",
        (
            ToolResultBlock("c1", "found it", "search"),
            ToolResultBlock("c2", "boom", "search", is_error=True),
            ToolResultBlock("c3", (TextBlock("Loaded"), Image(PNG)), "shot"),
            TextBlock("and "),
            TextBlock("this"),
            Image(PNG),
        ),
    )
    items = m._request_kwargs(req(Message.user("plain words"), Message("assistant", ()), results_msg))["input"]
    image = {"type": "input_image", "image_url": "data:image/png;base64," + Image(PNG).base64, "detail": "auto"}
    assert items == [
        {"role": "user", "content": "plain words"},
        {"role": "assistant", "content": "(empty reply)"},
        {"type": "function_call_output", "call_id": "c1", "output": "found it"},
        {"type": "function_call_output", "call_id": "c2", "output": "Error: boom"},
        {"type": "function_call_output", "call_id": "c3", "output": [{"type": "input_text", "text": "Loaded"}, image]},
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "and "}, {"type": "input_text", "text": "this"}, image],
        },
    ]


def test_assistant_messages_from_another_adapter_drop_what_they_cannot_send() -> None:
    m = OpenAIResponses("gpt-5")
    other = Message(
        "assistant",
        (
            RawBlock("anthropic", {"type": "thinking", "thinking": "hm", "signature": "s"}),
            TextBlock("Let me look."),
            ToolCall("search", {"q": "x"}, "toolu_1"),
        ),
    )
    assert m._request_kwargs(req(Message.user("q"), other))["input"][1:] == [
        {"role": "assistant", "content": "Let me look."},
        {"type": "function_call", "call_id": "toolu_1", "name": "search", "arguments": '{"q": "x"}'},
    ]
    only_foreign = Message("assistant", (RawBlock("anthropic", {"type": "thinking"}),))
    assert m._request_kwargs(req(Message.user("q"), only_foreign, Message.user("r")))["input"] == [
        {"role": "user", "content": "q"},
        {"role": "user", "content": "r"},
    ]


# -- streamed replies ----------------------------------------------------------------------------------------------


def test_a_streamed_reply_with_reasoning_text_and_parallel_function_calls(server: ProviderServer) -> None:
    server.script(
        responses_stream(
            Reasoning("rs_1", ["Plan: search twice."], "enc-1"),
            Text(["Hel", "lo"]),
            FunctionCallOut("search", '{"q": "a"}', call_id="call_a", id="fc_a"),
            FunctionCallOut("search", '{"q": "b"}', call_id="call_b", id="fc_b"),
            input_tokens=100,
            cached_tokens=30,
            output_tokens=20,
            reasoning_tokens=12,
            response_id="resp_7",
        )
    )
    got: list[str] = []
    price = Price(input=1.0, output=2.0, cache_read=0.5, cache_write=0.0)
    reply = model(server, price=price).respond(req(Message.user("q"), tools=(SPEC,)), got.append)
    assert got == ["Hel", "lo"]
    assert reply.message.content[:4] == (
        RawBlock(
            "openai_responses",
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Plan: search twice."}],
                "encrypted_content": "enc-1",
            },
        ),
        TextBlock("Hello"),
        ToolCall("search", {"q": "a"}, "call_a"),
        ToolCall("search", {"q": "b"}, "call_b"),
    )
    assert ids_block(reply.message).data == {
        "type": RESPONSE_IDS,
        "response_id": "resp_7",
        "message_ids": ["msg_1"],
        "call_ids": {"call_a": "fc_a", "call_b": "fc_b"},
        "reasoning_tokens": 12,
    }
    assert reply.usage == Usage(70, 20, 30, 0, 1, price.cost(Usage(70, 20, 30, 0, 1)))
    assert reply.usage.cost is not None and reply.usage.cost > 0
    assert reply.context_tokens == 120
    assert reply.stop_reason == "completed" and not reply.cut_off
    assert reply.model == "gpt-test-2026"
    post = server.posts[-1]
    assert post.path == "/v1/responses"
    assert post.body["stream"] is True and post.body["store"] is False
    assert post.body["include"] == ["reasoning.encrypted_content"]


def test_arespond_streams_through_the_async_client(server: ProviderServer) -> None:
    server.script(responses_stream(Text(["As", "ync"])))
    got: list[str] = []
    m = model(server)
    reply = asyncio.run(m.arespond(req(), got.append))
    assert reply.text == "Async" and got == ["As", "ync"]
    assert m._sdk_client is None


def test_a_given_sdk_client_is_used(server: ProviderServer) -> None:
    client = sdk.OpenAI(base_url=server.openai_url, api_key="given-key-123", max_retries=0)
    reply = OpenAIResponses("gpt-test", client=client).respond(req())
    assert reply.text == "Hello"
    assert server.posts[-1].headers["authorization"] == "Bearer given-key-123"
    aclient = sdk.AsyncOpenAI(base_url=server.openai_url, api_key="given-async-key", max_retries=0)
    assert asyncio.run(OpenAIResponses("gpt-test", client=aclient).arespond(req())).text == "Hello"
    assert server.posts[-1].headers["authorization"] == "Bearer given-async-key"


def test_a_refusal_is_the_reply_text_with_stop_reason_refusal(server: ProviderServer) -> None:
    server.script(responses_stream(Refusal("I can't help with that.")))
    got: list[str] = []
    reply = model(server).respond(req(), got.append)
    assert reply.text == "I can't help with that." and got == ["I can't help with that."]
    assert reply.stop_reason == "refusal"


def test_a_reply_stopped_by_the_content_filter_is_not_cut_off(server: ProviderServer) -> None:
    """The cut-off reason (`max_output_tokens`) is checked by the contract suite; another reason of an incomplete
    response is not a cut-off."""
    server.script(responses_stream(Text(["partial"]), status="incomplete", reason="content_filter"))
    filtered = model(server).respond(req())
    assert filtered.stop_reason == "content_filter" and not filtered.cut_off and filtered.text == "partial"


def test_unreadable_arguments_are_kept_as_text(server: ProviderServer) -> None:
    server.script(
        responses_stream(
            FunctionCallOut("search", '{"q": wea', call_id="c1", id="fc_1"),
            FunctionCallOut("search", "[1, 2]", call_id="c2", id="fc_2"),
            FunctionCallOut("search", "", call_id="c3", id="fc_3"),
        )
    )
    assert model(server).respond(req()).tool_calls == (
        ToolCall("search", {INVALID_ARGS_KEY: '{"q": wea'}, "c1"),
        ToolCall("search", {INVALID_ARGS_KEY: "[1, 2]"}, "c2"),
        ToolCall("search", {}, "c3"),
    )


def test_a_reply_without_usage_counts_one_request() -> None:
    m = OpenAIResponses("gpt-5", price=Price(input=1.0, output=1.0))
    events = responses_events(with_usage=False)
    final = Response.construct(**events[-1][1]["response"])
    reply = m._to_reply(final)
    assert reply.usage == Usage(requests=1, cost=0.0) and reply.context_tokens is None


# -- errors ------------------------------------------------------------------------------------------------------


def test_status_errors_map_like_chat_completions(server: ProviderServer) -> None:
    server.script(*[openai_error(429, "Rate limit reached", kind="rate_limit_error")] * 2)
    with pytest.raises(RateLimitError) as rate:
        model(server, retries=1).respond(req())
    assert isinstance(rate.value.__cause__, sdk.RateLimitError) and len(server.posts) == 2
    server.script(*[status(500)] * 2)
    with pytest.raises(ProviderError) as failing:
        model(server, retries=1).respond(req())
    assert type(failing.value) is ProviderError and isinstance(failing.value.__cause__, sdk.InternalServerError)
    server.script(openai_error(401, "Incorrect API key provided", err_code="invalid_api_key"))
    with pytest.raises(AuthError):
        model(server).respond(req())
    server.script(
        openai_error(400, "Your input exceeds the context window of this model", err_code="context_length_exceeded")
    )
    with pytest.raises(ContextTooLongError) as context:
        model(server).respond(req())
    assert isinstance(context.value.__cause__, sdk.BadRequestError)
    server.script(openai_error(400, "Invalid 'input[0].role'"))
    with pytest.raises(ProviderError) as bad:
        model(server).respond(req())
    assert type(bad.value) is ProviderError


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_error_event_and_a_failed_response_are_provider_errors(
    server: ProviderServer,
    mode: str,
) -> None:
    def call() -> Any:
        m = model(server)
        return m.respond(req()) if mode == "sync" else asyncio.run(m.arespond(req()))

    server.script(responses_stream(Text(["Hel"]), error_event=("server_error", "The server melted")))
    with pytest.raises(ProviderError, match="The server melted") as event:
        call()
    assert type(event.value) is ProviderError and isinstance(event.value.__cause__, sdk.OpenAIError)
    assert "server_error" in str(event.value)
    server.script(responses_stream(Text(["Hel"]), fail=("server_error", "Response failed for a reason")))
    with pytest.raises(ProviderError, match="Response failed for a reason") as failed:
        call()
    assert type(failed.value) is ProviderError


def test_a_callback_exception_leaves_unwrapped(server: ProviderServer) -> None:
    boom = sdk.OpenAIError("reporter bug shaped like an SDK error")

    def on_text(_text: str) -> None:
        raise boom

    server.script(responses_stream(Text(["a", "b"])))
    with pytest.raises(sdk.OpenAIError) as info:
        model(server).respond(req(), on_text)
    assert info.value is boom


def test_no_credentials_is_an_auth_error(no_credentials: None) -> None:
    with pytest.raises(AuthError, match="OpenAI Responses API authentication failed"):
        OpenAIResponses("gpt-5").respond(req())


def test_retry_and_fallback_wrap_it(server: ProviderServer) -> None:
    server.script(responses_stream(Text(["Hel", "lo"]), drop_after=5), responses_stream(Text(["again"])))
    events: list[Any] = []
    reply = Retry(model(server), attempts=2, backoff=0).respond(req(), None, events.append)
    assert reply.text == "again" and [e.kind for e in events] == ["retry"]
    server.script(status(500), openai_stream(["from chat"]))
    fallback = Fallback(model(server), OpenAICompatible("gpt-chat", base_url=server.openai_url, retries=0))
    events.clear()
    reply = fallback.respond(req(), None, events.append)
    assert reply.text == "from chat" and [e.kind for e in events] == ["fallback"]
    assert [p.path for p in server.posts[-2:]] == ["/v1/responses", "/v1/chat/completions"]


# -- chaining ----------------------------------------------------------------------------------------------------


def test_chain_sends_only_new_items_while_the_history_is_unchanged(server: ProviderServer) -> None:
    m = model(server, chain=True)
    server.script(
        responses_stream(Reasoning("rs_1"), FunctionCallOut("search", '{"q": "a"}', call_id="c1"), response_id="r1"),
        responses_stream(Text(["done"]), response_id="r2"),
        responses_stream(Text(["forked"]), response_id="r3"),
    )
    first = m.respond(req(Message.user("q")))
    result = Message("user", (ToolResultBlock("c1", "found", "search"),))
    second = m.respond(req(Message.user("q"), first.message, result))
    body = server.posts[-1].body
    assert body["previous_response_id"] == "r1" and body["store"] is True
    assert body["input"] == [{"type": "function_call_output", "call_id": "c1", "output": "found"}]
    # Back to an earlier point (a restore, or a fork of it): the response there is known, so it chains from it.
    m.respond(req(Message.user("q"), first.message, Message("user", (ToolResultBlock("c1", "other", "search"),))))
    body = server.posts[-1].body
    assert body["previous_response_id"] == "r1"
    assert body["input"] == [{"type": "function_call_output", "call_id": "c1", "output": "other"}]
    # A changed history (a compaction put a summary in front): the full input, no previous_response_id.
    m.respond(req(Message.user("Summary of the work so far"), second.message, Message.user("next")))
    body = server.posts[-1].body
    assert "previous_response_id" not in body and body["input"][0]["content"] == "Summary of the work so far"
    # Another process (a fresh adapter) never made r2: the full input.
    fresh = model(server, chain=True)
    fresh.respond(req(Message.user("q"), first.message, result, second.message, Message.user("more")))
    body = server.posts[-1].body
    assert "previous_response_id" not in body and len(body["input"]) == 6


# -- a saved run continued in a fresh process ----------------------------------------------------------------------


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


CHILD = """
import json, sys
sys.path[:0] = [{tests!r}, {src!r}]
from alpineagents import Agent, FileStore
from alpineagents.models import OpenAIResponses
from alpineagents.tool import tool
from alpineagents.types import Message

@tool
def lookup(q: str) -> str:
    \"\"\"Look something up.\"\"\"
    return f"result for {{q}}"

store = FileStore({store!r})
state = store.load({state_id!r})
state.add_message(Message.user("and now?"))
agent = Agent(OpenAIResponses("gpt-test", base_url={url!r}, retries=0), tools=[lookup], store=store, reporter=None)
agent.run(state)
print(json.dumps({{"text": state.messages[-1].text, "entries": len(state.history)}}))
"""


def test_a_run_with_tools_saved_loads_in_a_fresh_process_and_continues(
    server: ProviderServer,
    tmp_path: Path,
) -> None:
    server.script(
        responses_stream(
            Reasoning("rs_1", ["Two lookups."], "enc-1"),
            FunctionCallOut("lookup", '{"q": "a"}', call_id="call_a", id="fc_a"),
            FunctionCallOut("lookup", '{"q": "b"}', call_id="call_b", id="fc_b"),
            response_id="resp_1",
            reasoning_tokens=7,
        ),
        responses_stream(
            Reasoning("rs_2", ["Both found."], "enc-2"),
            Text(["Done."], id="msg_2"),
            response_id="resp_2",
            reasoning_tokens=5,
        ),
        responses_stream(
            Reasoning("rs_3", ["Again."], "enc-3"),
            Text(["Still done."], id="msg_3"),
            response_id="resp_3",
            reasoning_tokens=3,
        ),
    )
    store = FileStore(tmp_path / "runs")
    agent = Agent(model(server), tools=[lookup], store=store, reporter=None)
    state = State(messages=[Message.user("look up a and b")])
    agent.run(state)
    # the two calls run in parallel: their results are recorded in the order they finish
    assert sorted(r.content for r in results(state)) == ["result for a", "result for b"]
    assert state.messages[-1].text == "Done."
    state_id = state.id
    del state
    gc.collect()  # this process lets go of the State, and with it its writer lock

    script = CHILD.format(
        tests=str(TESTS),
        src=str(TESTS.parent / "src"),
        store=str(tmp_path / "runs"),
        state_id=state_id,
        url=server.openai_url,
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"}
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["text"] == "Still done."
    loaded = store.load(state_id)
    assert loaded.messages[-1].text == "Still done."
    # the reasoning tokens of every reply survive the round trip (they are part of the output tokens)
    assert model(server).reasoning_tokens(loaded.messages) == 7 + 5 + 3
    assert loaded.usage.output_tokens >= 15

    reasoning = {
        n: {
            "type": "reasoning",
            "id": f"rs_{n}",
            "summary": [{"type": "summary_text", "text": t}],
            "encrypted_content": f"enc-{n}",
        }
        for n, t in ((1, "Two lookups."), (2, "Both found."))
    }
    calls = [
        {"type": "function_call", "call_id": "call_a", "name": "lookup", "arguments": '{"q": "a"}', "id": "fc_a"},
        {"type": "function_call", "call_id": "call_b", "name": "lookup", "arguments": '{"q": "b"}', "id": "fc_b"},
    ]
    outputs = [
        {"type": "function_call_output", "call_id": "call_a", "output": "result for a"},
        {"type": "function_call_output", "call_id": "call_b", "output": "result for b"},
    ]
    done_message = {
        "type": "message",
        "id": "msg_2",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
    }
    first, second, third = (post.body for post in server.posts)
    assert first["input"] == [{"role": "user", "content": "look up a and b"}]
    assert second["input"] == [first["input"][0], reasoning[1], *calls, *outputs]
    assert third["input"] == [
        *second["input"],
        reasoning[2],
        done_message,
        {"role": "user", "content": "and now?"},
    ]
    assert all(post.body["store"] is False and "previous_response_id" not in post.body for post in server.posts)


def test_a_state_recorded_with_it_continues_with_another_adapter(server: ProviderServer) -> None:
    server.script(
        responses_stream(Reasoning("rs_1"), FunctionCallOut("lookup", '{"q": "a"}', call_id="call_a", id="fc_a")),
        responses_stream(Text(["Found."])),
        openai_stream(["Chat says hi"]),
    )
    state = State(messages=[Message.user("look up a")])
    Agent(model(server), tools=[lookup], reporter=None).run(state)
    state.add_message(Message.user("thanks"))
    chat = OpenAICompatible("gpt-chat", base_url=server.openai_url, retries=0)
    Agent(chat, tools=[lookup], reporter=None).run(state)
    assert state.messages[-1].text == "Chat says hi"
    messages = server.posts[-1].body["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "a"}'}}],
    }
    assert messages[2] == {"role": "tool", "tool_call_id": "call_a", "content": "result for a"}
    assert messages[3] == {"role": "assistant", "content": "Found."}
    assert "reasoning" not in json.dumps(messages)


def test_sse_events_split_in_pieces_are_read_whole(server: ProviderServer) -> None:
    server.script(sse(responses_events(Text(["one ", "two"])), split=True))
    assert model(server).respond(req()).text == "one two"


def test_a_reasoning_item_without_encrypted_content_is_sent_back_only_when_responses_are_stored() -> None:
    bare = RawBlock("openai_responses", {"type": "reasoning", "id": "rs_9", "summary": []})
    message = Message("assistant", (bare, TextBlock("ok")))
    stateless = OpenAIResponses("gpt-5")._request_kwargs(req(Message.user("q"), message))["input"]
    assert stateless[1:] == [{"role": "assistant", "content": "ok"}]
    stored = OpenAIResponses("gpt-5", store=True)._request_kwargs(req(Message.user("q"), message))["input"]
    assert stored[1:] == [{"type": "reasoning", "id": "rs_9", "summary": []}, {"role": "assistant", "content": "ok"}]


def test_images_reach_the_server_in_user_messages_and_function_call_outputs(server: ProviderServer) -> None:
    shot = Message("user", (ToolResultBlock("c1", (TextBlock("Loaded"), Image(PNG)), "shot"), TextBlock("see")))
    model(server).respond(
        req(Message.user("look", Image(PNG)), Message("assistant", (ToolCall("shot", {}, "c1"),)), shot)
    )
    items = server.posts[-1].body["input"]
    url = "data:image/png;base64," + Image(PNG).base64
    assert items[0]["content"][1] == {"type": "input_image", "image_url": url, "detail": "auto"}
    assert items[2] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [
            {"type": "input_text", "text": "Loaded"},
            {"type": "input_image", "image_url": url, "detail": "auto"},
        ],
    }
    assert items[3] == {"role": "user", "content": "see"}


def test_the_server_answers_a_request_without_stream_with_one_json_response(server: ProviderServer) -> None:
    client = sdk.OpenAI(base_url=server.openai_url, api_key="k", max_retries=0)
    response = client.responses.create(model="gpt-test", input="hi")
    assert response.output_text == "Hello" and response.usage is not None and response.usage.input_tokens == 10


def test_after_a_compaction_a_chaining_adapter_sends_the_full_input(server: ProviderServer) -> None:
    m = model(server, chain=True)
    server.script(
        responses_stream(FunctionCallOut("lookup", '{"q": "a"}', call_id="c1", id="fc_1"), response_id="r1"),
        responses_stream(Text(["found it"]), response_id="r2"),
        responses_stream(Text(["Summary: a was looked up."]), response_id="r3"),
        responses_stream(Text(["after"]), response_id="r4"),
    )
    agent = Agent(m, tools=[lookup], reporter=None)
    state = State(messages=[Message.user("look up a")])
    agent.think(state)
    agent.use_tools(state)
    agent.think(state)
    assert server.posts[1].body["previous_response_id"] == "r1"
    agent.compact(state)
    state.add_message(Message.user("go on"))
    agent.think(state)
    last = server.posts[-1].body
    assert "previous_response_id" not in last
    assert len(last["input"]) == 1 and last["input"][0]["role"] == "user"
    texts = [part["text"] for part in last["input"][0]["content"]]
    assert texts[0] == "look up a" and texts[-1] == "go on"
    assert any("Summary: a was looked up." in text for text in texts)


def test_a_tool_result_of_texts_is_one_text_by_lines_and_an_error_with_images_starts_with_error() -> None:
    m = OpenAIResponses("gpt-5")
    texts = ToolResultBlock("c1", (TextBlock("line one"), TextBlock("line two")), "read")
    failed = ToolResultBlock("c2", (TextBlock("partial"), Image(PNG)), "shot", is_error=True)
    items = m._request_kwargs(req(Message("user", (texts, failed))))["input"]
    assert items[0] == {"type": "function_call_output", "call_id": "c1", "output": "line one\nline two"}
    assert [part.get("text") for part in items[1]["output"]] == ["Error: ", "partial", None]
    assert len(items) == 2
