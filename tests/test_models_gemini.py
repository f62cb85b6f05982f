"""`Gemini`: construction, request mapping, streaming, thought signatures across turns, usage, stop reasons,
safety blocks, errors, redaction, cancellation, `Retry`.

The tests drive the real `google-genai` SDK against the local provider server on 127.0.0.1, which speaks the
Gemini REST stream (`tests/servers/gemini.py`).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import pytest
from google.genai import errors as genai_errors

from alpineagents import Agent, FileStore
from alpineagents.errors import AuthError, ContextTooLongError, ProviderError, RateLimitError
from alpineagents.models import Anthropic, Gemini, resolve_model
from alpineagents.models.gemini import SKIP_SIGNATURE
from alpineagents.tool import tool
from alpineagents.types import (
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
from servers.gemini import (
    SIGNATURE,
    Call,
    Thought,
    gemini_blocked,
    gemini_chunks,
    gemini_echo_key,
    gemini_error,
    gemini_stream,
    signature_of,
)
from servers.provider import ProviderServer, echo_key, sse

KEY = "AIzaSyTest-Zq8c1XvB0mT4yH7nL2pR9sK6wE3u"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(40)
GIF = b"GIF89a" + bytes(40)
SPEC = ToolSpec("search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}})


@pytest.fixture(autouse=True)
def _no_google_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    yield


def req(
    *messages: Message, system: str | None = None, tools: tuple[ToolSpec, ...] = (), choice: str = "auto"
) -> Request:
    return Request(system, messages or (Message.user("hi"),), tools, choice)  # type: ignore[arg-type]


def model(srv: ProviderServer, name: str = "gemini-test", **kwargs: Any) -> Gemini:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("retries", 0)
    return Gemini(name, base_url=srv.url, **kwargs)


def contents(m: Gemini, *messages: Message) -> list[dict[str, Any]]:
    return m._request_body(req(*messages))["contents"]


# -- construction -----------------------------------------------------------------------------------------------


def test_defaults_strip_the_prefix_declare_thinking_and_vision_and_make_no_client() -> None:
    m = Gemini("google/gemini-3-pro")
    assert (m.name, m.provider, m.context_window) == ("gemini-3-pro", "google", 1_048_576)
    assert m.supports == {"thinking", "vision"}
    assert m._sdk_client is None
    assert repr(m) == "Gemini('gemini-3-pro')"


@pytest.mark.parametrize(
    ("thinking", "config"),
    [
        (True, {"include_thoughts": True}),
        (False, {"thinking_budget": 0}),
        (0, {"thinking_budget": 0}),
        (4096, {"thinking_budget": 4096, "include_thoughts": True}),
        (-1, {"thinking_budget": -1, "include_thoughts": True}),
        ("low", {"thinking_level": "low", "include_thoughts": True}),
    ],
)
def test_thinking_settings_map_to_the_thinking_config(thinking: Any, config: dict[str, Any]) -> None:
    assert Gemini("g", thinking=thinking)._request_body(req())["config"]["thinking_config"] == config


def test_no_thinking_setting_leaves_the_model_default_and_bad_ones_are_refused() -> None:
    assert "thinking_config" not in Gemini("g")._request_body(req())["config"]
    with pytest.raises(ValueError, match="not a thinking setting"):
        Gemini("g", thinking=-5)
    with pytest.raises(ValueError, match="does not support thinking=True"):
        Gemini("g", supports=[], thinking=True)
    assert Gemini("g", supports=[], thinking=False)._thinking == {"thinking_budget": 0}
    assert Gemini("g", supports=[], thinking=0)._thinking == {"thinking_budget": 0}


def test_client_settings_carry_retries_timeout_url_key_and_vertex() -> None:
    kwargs = Gemini("g", api_key=KEY, base_url="http://x", timeout=2.5, retries=3)._client_kwargs()
    assert kwargs == {
        "http_options": {"retry_options": {"attempts": 4}, "base_url": "http://x", "timeout": 2500},
        "api_key": KEY,
    }
    vertex = Gemini("g", vertexai=True, project="p", location="europe-west4")._client_kwargs()
    assert (vertex["vertexai"], vertex["project"], vertex["location"]) == (True, "p", "europe-west4")
    assert "api_key" not in vertex


# -- request mapping ----------------------------------------------------------------------------------------------


def test_config_carries_system_tools_choice_limits_and_turns_automatic_calling_off() -> None:
    m = Gemini("g", max_tokens=300, temperature=0.2)
    config = m._request_body(req(system="be terse", tools=(SPEC,), choice="none"))["config"]
    assert config == {
        "automatic_function_calling": {"disable": True},
        "system_instruction": "be terse",
        "tools": [
            {
                "function_declarations": [
                    {
                        "name": "search",
                        "description": "Search the web",
                        "parameters_json_schema": dict(SPEC.input_schema),
                    }
                ]
            }
        ],
        "tool_config": {"function_calling_config": {"mode": "NONE"}},
        "max_output_tokens": 300,
        "temperature": 0.2,
    }
    assert set(Gemini("g")._request_body(req())["config"]) == {"automatic_function_calling"}


def test_tool_blocks_without_tools_get_placeholder_declarations_and_calling_off() -> None:
    messages = (
        Message.user("go"),
        Message("assistant", (ToolCall("search", {"q": "x"}, "c1"),)),
        Message("user", (ToolResultBlock("c1", "done", "search"),)),
    )
    config = Gemini("g")._request_body(req(*messages))["config"]
    assert config["tools"] == [
        {"function_declarations": [{"name": "search", "description": "", "parameters_json_schema": {"type": "object"}}]}
    ]
    assert config["tool_config"] == {"function_calling_config": {"mode": "NONE"}}


def test_user_turns_put_function_responses_first_with_their_images_and_merge_same_role_runs() -> None:
    m = Gemini("g")
    result = ToolResultBlock("c1", (TextBlock("Loaded"), Image(GIF)), "shot")
    failed = ToolResultBlock("c2", "boom", "run", is_error=True)
    out = contents(m, Message("user", (TextBlock("see"), Image(PNG), result)), Message("user", (failed,)))
    assert len(out) == 1 and out[0]["role"] == "user"
    parts = out[0]["parts"]
    assert parts[0] == {
        "function_response": {
            "id": "c1",
            "name": "shot",
            "response": {"output": "Loaded\n(1 image of this result in the parts after the function responses)"},
        }
    }
    assert parts[1] == {"function_response": {"id": "c2", "name": "run", "response": {"error": "boom"}}}
    assert parts[2] == {"inline_data": {"mime_type": "image/gif", "data": base64.b64encode(GIF).decode()}}
    assert parts[3:] == [
        {"text": "see"},
        {"inline_data": {"mime_type": "image/png", "data": base64.b64encode(PNG).decode()}},
    ]


def test_model_turns_keep_order_and_signatures_drop_other_providers_and_get_placeholders() -> None:
    m = Gemini("g")
    sig = signature_of(b"s1")
    recorded = Message(
        "assistant",
        (
            RawBlock("google", {"thought": True, "text": "plan", "thought_signature": sig}),
            RawBlock("anthropic", {"type": "thinking"}),
            TextBlock("Looking."),
            RawBlock("google", {"thought_signature": sig}),
            ToolCall("search", {"q": "x"}, "fc_1"),
            ToolCall("search", {"q": "y"}, "fc_2"),
        ),
    )
    parts = contents(m, Message.user("go"), recorded)[1]["parts"]
    assert parts == [
        {"thought": True, "text": "plan", "thought_signature": sig},
        {"text": "Looking."},
        {"function_call": {"id": "fc_1", "name": "search", "args": {"q": "x"}}, "thought_signature": sig},
        {"function_call": {"id": "fc_2", "name": "search", "args": {"q": "y"}}},
    ]
    foreign = Message("assistant", (ToolCall("search", {"q": "x"}, "toolu_1"),))
    first = contents(m, Message.user("go"), foreign)[1]["parts"][0]
    assert base64.b64decode(first["thought_signature"]) == b"skip_thought_signature_validator"  # Google's placeholder
    assert first["thought_signature"] == SKIP_SIGNATURE
    empty = contents(m, Message.user("go"), Message("assistant", ()), Message.user("more"))
    assert empty[1] == {"role": "model", "parts": [{"text": "(empty reply)"}]}
    only_foreign = contents(m, Message.user("go"), Message("assistant", (RawBlock("openai_responses", {}),)))
    assert only_foreign[1] == {"role": "model", "parts": []}


# -- streaming against the server -----------------------------------------------------------------------------------


def test_a_streamed_reply_with_thoughts_text_and_calls_and_the_wire_request(server: ProviderServer) -> None:
    server.script(
        gemini_stream(
            ["Hel", "lo"],
            thoughts=[Thought("Let me think.")],
            calls=[Call("search", {"q": "x"}, id="fc_1", signature=b"call-sig"), Call("search", {"q": "y"}, id="fc_2")],
            prompt_tokens=100,
            candidates_tokens=20,
            cached=30,
            thoughts_tokens=7,
        )
    )
    got: list[str] = []
    m = model(server, price=Price(1.0, 2.0, 0.5, 0.0))
    reply = m.respond(req(system="sys", tools=(SPEC,)), got.append)
    assert got == ["Hel", "lo"]
    assert reply.message.content == (
        RawBlock("google", {"thought": True, "text": "Let me think.", "thought_signature": signature_of(SIGNATURE)}),
        TextBlock("Hello"),
        RawBlock("google", {"thought_signature": signature_of(b"call-sig")}),
        ToolCall("search", {"q": "x"}, "fc_1"),
        ToolCall("search", {"q": "y"}, "fc_2"),
    )
    usage = reply.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens, usage.requests) == (70, 30, 27, 1)
    assert usage.cost == pytest.approx((70 * 1.0 + 27 * 2.0 + 30 * 0.5) / 1_000_000)
    assert reply.context_tokens == 127
    assert (reply.stop_reason, reply.model) == ("STOP", "gemini-test-001")
    sent = server.posts[-1]
    assert sent.path.endswith("/models/gemini-test:streamGenerateContent?alt=sse")
    assert sent.headers["x-goog-api-key"] == KEY
    assert sent.body["systemInstruction"]["parts"] == [{"text": "sys"}]
    assert sent.body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


def test_thought_parts_and_signatures_go_back_on_the_next_turn(server: ProviderServer) -> None:
    server.script(
        gemini_stream(
            ["Checking."],
            thoughts=[Thought("plan", signature=b"thought-sig")],
            text_signature=b"text-sig",
            calls=[Call("search", {"q": "x"}, id="fc_9", signature=b"call-sig")],
        ),
        gemini_stream(["Done."]),
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
    parts = server.posts[-1].body["contents"][1]["parts"]

    def sig(part: dict[str, Any]) -> bytes:
        return base64.urlsafe_b64decode(part["thoughtSignature"])

    assert parts[0]["thought"] is True and parts[0]["text"] == "plan" and sig(parts[0]) == b"thought-sig"
    assert parts[1]["text"] == "Checking." and sig(parts[1]) == b"text-sig"
    assert parts[2]["functionCall"] == {"id": "fc_9", "name": "search", "args": {"q": "x"}}
    assert sig(parts[2]) == b"call-sig"
    response = server.posts[-1].body["contents"][2]["parts"][0]["functionResponse"]
    assert response == {"id": "fc_9", "name": "search", "response": {"output": "42"}}


def test_calls_without_ids_get_fresh_ids(server: ProviderServer) -> None:
    server.script(
        gemini_stream([], calls=[Call("search", {"q": "a"}, id=None), Call("search", {"q": "b"}, id=None)]),
        gemini_stream([], calls=[Call("search", {"q": "c"}, id=None)]),
    )
    m = model(server)
    ids = [c.id for c in m.respond(req()).tool_calls] + [c.id for c in m.respond(req()).tool_calls]
    assert len(set(ids)) == 3 and all(i.startswith("call_") and len(i) == 17 for i in ids)


def test_a_safety_stop_keeps_what_arrived_and_a_blocked_prompt_is_a_clear_error(server: ProviderServer) -> None:
    server.script(gemini_stream(["I can"], finish_reason="SAFETY"), gemini_blocked("PROHIBITED_CONTENT"))
    m = model(server)
    stopped = m.respond(req())
    assert (stopped.text, stopped.stop_reason) == ("I can", "SAFETY")
    with pytest.raises(ProviderError, match="blocked the prompt \\(block reason PROHIBITED_CONTENT\\)") as info:
        m.respond(req())
    assert "Fix:" in str(info.value)


def test_no_usage_and_no_model_version(server: ProviderServer) -> None:
    chunks = gemini_chunks(["x"], with_usage=False)
    for chunk in chunks:
        del chunk["modelVersion"]
    server.script(sse([(None, c) for c in chunks]))
    reply = model(server).respond(req())
    assert (reply.usage.requests, reply.usage.input_tokens, reply.context_tokens) == (1, 0, None)
    assert reply.model == "gemini-test"


def test_images_reach_the_server_as_inline_data(server: ProviderServer) -> None:
    model(server).respond(req(Message.user("what is it?", Image(PNG))))
    parts = server.posts[-1].body["contents"][0]["parts"]
    assert parts[0] == {"text": "what is it?"}
    assert base64.b64decode(parts[1]["inlineData"]["data"]) == PNG
    inline = parts[1]["inlineData"]
    assert inline.get("mimeType", inline.get("mime_type")) == "image/png"  # the SDK sends it in snake_case


def test_arespond_streams_through_the_async_client(server: ProviderServer) -> None:
    server.script(gemini_stream(["a", "b"], calls=[Call("search", {"q": "x"})]))
    got: list[str] = []
    reply = asyncio.run(model(server).arespond(req(), got.append))
    assert got == ["a", "b"] and reply.text == "ab" and reply.tool_calls[0].id == "fc_1"


def test_a_given_client_is_used(server: ProviderServer) -> None:
    from google import genai

    client = genai.Client(api_key=KEY, http_options={"base_url": server.url})
    m = Gemini("gemini-test", client=client)
    assert m.respond(req()).text == "Hello"
    assert asyncio.run(m.arespond(req())).text == "Hello"
    assert len(server.posts) == 2


def test_vertex_ai_goes_through_the_sdk_settings(server: ProviderServer) -> None:
    m = Gemini("gemini-test", vertexai=True, api_key=KEY, base_url=server.url, retries=0)  # Vertex express mode
    assert m.respond(req()).text == "Hello"
    assert "publishers/google/models/gemini-test:streamGenerateContent" in server.posts[-1].path


# -- errors ---------------------------------------------------------------------------------------------------------


def test_a_rate_limit_names_the_retry_delay_the_api_asked_for(server: ProviderServer) -> None:
    server.script(gemini_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded", retry_delay="27s"))
    with pytest.raises(RateLimitError, match="retry after 27s") as info:
        model(server).respond(req())
    assert isinstance(info.value.__cause__, genai_errors.ClientError)


@pytest.mark.parametrize(
    ("code", "state", "message", "reason", "expected"),
    [
        (401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", None, AuthError),
        (403, "PERMISSION_DENIED", "Permission denied on resource project.", None, AuthError),
        (400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", "API_KEY_INVALID", AuthError),
        (
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            None,
            ContextTooLongError,
        ),
        (400, "INVALID_ARGUMENT", "Invalid JSON payload received.", None, ProviderError),
        (500, "INTERNAL", "An internal error has occurred.", None, ProviderError),
        (503, "UNAVAILABLE", "The model is overloaded.", None, ProviderError),
    ],
)
def test_status_errors_map_to_the_library_errors(
    server: ProviderServer,
    code: int,
    state: str,
    message: str,
    reason: str | None,
    expected: type[Exception],
) -> None:
    server.script(gemini_error(code, state, message, reason=reason))
    with pytest.raises(ProviderError) as info:
        model(server).respond(req())
    assert type(info.value) is expected
    assert isinstance(info.value.__cause__, genai_errors.APIError)
    assert message in str(info.value)


def test_an_error_chunk_inside_the_stream_is_a_provider_error(server: ProviderServer) -> None:
    chunks = gemini_chunks(["Hel", "lo"])
    error = {"error": {"code": 500, "message": "backend died", "status": "INTERNAL"}}
    server.script(sse([(None, chunks[0]), (None, error)]))
    got: list[str] = []
    with pytest.raises(ProviderError, match="backend died"):
        model(server).respond(req(), got.append)
    assert got == ["Hel"]


def test_no_key_is_an_auth_error_naming_both_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AuthError) as info:
        Gemini("gemini-test").respond(req())
    assert "GOOGLE_API_KEY" in str(info.value) and "GEMINI_API_KEY" in str(info.value)
    with pytest.raises(AuthError, match="GEMINI_API_KEY"):
        asyncio.run(Gemini("gemini-test").arespond(req()))


def test_a_key_from_the_environment_is_used_and_kept_out_of_errors(
    server: ProviderServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    server.script(gemini_echo_key(400))
    m = Gemini("gemini-test", base_url=server.url, retries=0)
    with pytest.raises(ProviderError) as info:
        m.respond(req())
    assert server.posts[-1].headers["x-goog-api-key"] == KEY
    assert KEY not in str(info.value) and "[REDACTED]" in str(info.value)
    assert KEY not in str(info.value.__cause__)


# -- through an Agent --------------------------------------------------------------------------------------------


@tool
def search(q: str) -> str:
    """Search the web."""
    return f"results for {q}"


def test_a_run_with_a_tool_call_is_saved_loaded_and_continued(server: ProviderServer, tmp_path: Any) -> None:
    server.script(
        gemini_stream(["Searching."], thoughts=[Thought("plan")], calls=[Call("search", {"q": "x"}, signature=b"s")]),
        gemini_stream(["Found it."]),
        gemini_stream(["Still here."]),
    )
    store = FileStore(tmp_path)
    agent = Agent(model(server), tools=[search], store=store, reporter=None)
    state = task("find x")
    agent.run(state)
    assert state.messages[-1].text == "Found it."
    loaded = store.load(state.id)
    loaded.add_message(Message.user("and now?"))
    Agent(model(server), tools=[search], store=store, reporter=None).run(loaded)
    parts = server.posts[-1].body["contents"][1]["parts"]
    assert parts[0]["thought"] is True
    assert base64.urlsafe_b64decode(parts[2]["thoughtSignature"]) == b"s"
    assert server.posts[-1].body["contents"][2]["parts"][0]["functionResponse"]["response"] == {
        "output": "results for x"
    }


def test_resolve_model_picks_gemini() -> None:
    m = resolve_model("google/gemini-3-pro", api_key=KEY)
    assert isinstance(m, Gemini) and m.name == "gemini-3-pro"
    assert isinstance(resolve_model("gemini-2.5-flash"), Gemini)
    with pytest.raises(TypeError, match="does not accept region="):
        resolve_model("google/gemini-3-pro", region="us-east-1")


# -- Claude on Vertex AI through the Anthropic adapter --------------------------------------------------------------

TOKEN = "ya29.a0AfH6SMBx-test-access-token-0123456789"


def test_claude_on_vertex_through_the_anthropic_adapter(server: ProviderServer) -> None:
    from anthropic import AnthropicVertex, AsyncAnthropicVertex

    settings = {"region": "us-east5", "project_id": "my-project", "access_token": TOKEN, "base_url": server.url}
    m = Anthropic("claude-test@20260101", client=AnthropicVertex(**settings, max_retries=0), max_tokens=1024)
    got: list[str] = []
    reply = m.respond(req(system="sys"), got.append)
    assert reply.text == "Hello" and got == ["Hello"]
    sent = server.posts[-1]
    assert (
        sent.path
        == "/projects/my-project/locations/us-east5/publishers/anthropic/models/claude-test@20260101:streamRawPredict"
    )
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"
    assert sent.body["system"] == "sys" and "anthropic_version" in sent.body
    async_model = Anthropic("claude-test@20260101", client=AsyncAnthropicVertex(**settings, max_retries=0))
    assert asyncio.run(async_model.arespond(req())).text == "Hello"
    server.script(echo_key(401))
    with pytest.raises(AuthError) as info:
        m.respond(req())
    assert "Incorrect API key provided" in str(info.value) and TOKEN not in str(info.value)
    assert TOKEN not in str(info.value.__cause__)
