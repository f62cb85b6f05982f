"""The contract every model adapter fills in, checked for each `AdapterKind` (`tests/servers/kinds.py`) through the
real SDK against the local provider server; and the one table of providers that `resolve_model`, its docstring and
the docs' table of model strings are made from.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

import alpineagents.models as models
from alpineagents import Agent, tool
from alpineagents.errors import ProviderError
from alpineagents.events import (
    ReplyEnded,
    RequestSent,
    RunEnded,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallStarted,
)
from alpineagents.models import Anthropic, Bedrock, Gemini, OpenAICompatible, OpenAIResponses, Retry, resolve_model
from alpineagents.models._adapter import Adapter
from alpineagents.models.resolve import PROVIDERS, Provider
from alpineagents.types import (
    INVALID_ARGS_KEY,
    TRUNCATED_ARGS_MESSAGE,
    Image,
    Message,
    RawBlock,
    Reply,
    Request,
    TextBlock,
    ToolCall,
    ToolResultBlock,
    ToolSpec,
    Usage,
)
from helpers.pieces import Pieces
from servers.kinds import KINDS, AdapterKind
from servers.provider import ProviderServer, echo_key


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: One.
        b: The other.
    """
    return a + b


DOCS = Path(__file__).resolve().parent.parent / "docs"
SPEC = ToolSpec("add", "Add", {"type": "object"})


def ask(model: Adapter) -> Reply:
    return model.respond(Request(None, (Message.user("add them"),), (SPEC,)))


def _adapter_classes(base: type) -> set[type]:
    found: set[type] = set()
    for sub in base.__subclasses__():
        if sub.__module__.startswith("alpineagents.") and not sub.__module__.rsplit(".", 1)[-1].startswith("_"):
            found.add(sub)
        found |= _adapter_classes(sub)
    return found


def test_every_adapter_of_the_package_has_a_kind_and_a_row_of_providers() -> None:
    adapters = _adapter_classes(Adapter)
    assert {type(kind.make("x")) for kind in KINDS} == adapters
    assert {row.adapter for row in PROVIDERS} == adapters


# -- the settings every adapter takes --------------------------------------------------------------------------------

DEFAULT_SUPPORTS = {
    Anthropic: {"thinking", "cache", "vision"},
    Bedrock: {"thinking", "cache", "vision"},
    Gemini: {"thinking", "vision"},
    OpenAICompatible: set(),
    OpenAIResponses: {"thinking", "vision"},
}


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_supports_is_the_adapters_own_default_unless_given(kind: AdapterKind) -> None:
    model = kind.make("x")
    assert model.supports == frozenset(DEFAULT_SUPPORTS[type(model)])
    assert isinstance(model.supports, frozenset)
    given = kind.make("x", supports=["vision", "vision"])
    assert given.supports == frozenset({"vision"}) and isinstance(given.supports, frozenset)
    assert kind.make("x", supports=()).supports == frozenset()


@pytest.mark.parametrize(
    ("adapter", "given", "name"),
    [
        (Anthropic, "anthropic/claude-x", "claude-x"),
        (Anthropic, "anthropic/anthropic/claude-x", "anthropic/claude-x"),
        (Bedrock, "bedrock/us.amazon.nova-pro-v1:0", "us.amazon.nova-pro-v1:0"),
        (Gemini, "google/gemini-x", "gemini-x"),
        (Gemini, "gemini/gemini-x", "gemini-x"),
        (Gemini, "google/gemini/gemini-x", "gemini-x"),
        (Gemini, "gemini/google/gemini-x", "google/gemini-x"),
        (OpenAICompatible, "anthropic/claude-x", "anthropic/claude-x"),
        (OpenAIResponses, "openai/gpt-x", "openai/gpt-x"),
    ],
)
def test_an_adapter_takes_its_own_prefixes_off_the_name_once_each(
    adapter: type[Adapter], given: str, name: str
) -> None:
    assert adapter(given).name == name


@pytest.mark.parametrize(
    ("adapter", "given", "options", "example"),
    [
        (
            Anthropic,
            "anthropic/claude-x",
            {"thinking": True, "temperature": 0.5},
            "Anthropic('claude-x', thinking=True)",
        ),
        (Anthropic, "anthropic/claude-x", {"thinking": 10}, "Anthropic('claude-x', thinking=4096)"),
        (
            Anthropic,
            "anthropic/claude-x",
            {"thinking": 4096, "max_tokens": 2000},
            "Anthropic('claude-x', thinking=4096,",
        ),
        (Bedrock, "bedrock/claude-x", {"thinking": 10}, "Bedrock('claude-x', thinking=4096)"),
        (Gemini, "google/gemini-x", {"thinking": -5}, "Gemini('gemini-x', thinking=4096)"),
    ],
)
def test_a_setting_error_shows_the_model_name_without_its_prefix(
    adapter: type[Adapter], given: str, options: dict[str, object], example: str
) -> None:
    with pytest.raises(ValueError) as info:
        adapter(given, **options)
    assert example in str(info.value)
    assert given not in str(info.value)


# -- the pieces of a reply as they stream ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_an_on_stream_gets_the_thinking_and_the_arguments_as_they_stream_and_they_add_up_to_the_reply(
    server: ProviderServer, kind: AdapterKind
) -> None:
    assert kind.pieces_reply is not None and kind.thinking_of is not None
    model = kind.at(server)
    parts = ('{"a": ', '1, "b"', ": 2}")

    def script() -> None:
        server.script(kind.pieces_reply(("Let me ", "add them."), "Sure.", "add", parts, "call_p"))

    for run in ("sync", "async"):
        script()
        pieces = Pieces()
        if run == "sync":
            reply = model.respond(Request(None, (Message.user("add them"),), (SPEC,)), pieces)
        else:
            loop_thread: list[int] = []

            async def main(pieces: Pieces = pieces, loop_thread: list[int] = loop_thread) -> Reply:
                loop_thread.append(threading.get_ident())
                return await model.arespond(Request(None, (Message.user("add them"),), (SPEC,)), pieces)

            reply = asyncio.run(main())
            assert pieces.threads == set(loop_thread), "every piece runs on the event loop"
        assert pieces.joined("thinking") == kind.thinking_of(reply) == "Let me add them."
        assert pieces.joined("text") == reply.text == "Sure."
        (call,) = reply.tool_calls
        assert call == ToolCall("add", {"a": 1, "b": 2}, "call_p")
        kinds = [piece[0] for piece in pieces.got]
        assert kinds.index("thinking") < kinds.index("text"), "pieces come in the order the model wrote them"
        calls = [piece for piece in pieces.got if piece[0] == "args"]
        if not kind.streams_arguments:
            assert calls == []
            continue
        assert {piece[1:3] for piece in calls} == {("call_p", "add")}
        assert calls[0][3] == "", "the call is announced as soon as its tool is named"
        assert len(calls) > 2 and json.loads(pieces.joined("args")) == call.args
        assert kinds.index("text") < kinds.index("args")

    script()
    texts: list[str] = []
    reply = model.respond(Request(None, (Message.user("add them"),), (SPEC,)), texts.append)
    assert "".join(texts) == reply.text == "Sure.", "a plain on_text gets the text only"


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_stream_shows_the_thinking_and_the_arguments_of_each_adapter_at_their_reply(
    server: ProviderServer, kind: AdapterKind
) -> None:
    assert kind.pieces_reply is not None and kind.thinking_of is not None
    server.script(
        kind.pieces_reply(("Adding ", "now."), "On it.", "add", ('{"a": 2', ', "b": 3}'), "call_s"),
        kind.reply(["It is 5."]),
    )
    agent = Agent(kind.at(server), tools=[add], reporter=None)
    events = list(agent.stream("What is 2 + 3?"))
    state = events[0].state_id
    thinking = [e for e in events if isinstance(e, ThinkingDelta)]
    arguments = [e for e in events if isinstance(e, ToolCallArgsDelta)]
    (started,) = [e for e in events if isinstance(e, ToolCallStarted)]
    (reply_entry,) = [e for e in events if isinstance(e, ReplyEnded) and e.position == started.position]
    request = max(e.position for e in events if isinstance(e, RequestSent) and e.position < started.position)
    assert thinking and all(e.position == request and e.state_id == state for e in thinking)
    assert "".join(e.text for e in thinking) == "Adding now."
    assert events.index(thinking[-1]) < events.index(started) < events.index(reply_entry)
    assert started.call == ToolCall("add", {"a": 2, "b": 3}, "call_s")
    if kind.streams_arguments:
        assert {(e.call_id, e.name, e.position, e.path) for e in arguments} == {("call_s", "add", request, (state,))}
        assert json.loads("".join(e.delta for e in arguments)) == started.call.args
        assert events.index(arguments[-1]) < events.index(started)
    else:
        assert arguments == []
    assert isinstance(events[-1], RunEnded) and events[-1].error is None


# -- cut-off stop reasons ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_the_adapters_own_cut_off_reasons_mark_only_the_last_tool_call_and_the_reply(
    server: ProviderServer,
    kind: AdapterKind,
) -> None:
    model = kind.at(server)
    reasons = type(model).cut_off_stop_reasons
    assert reasons, "an adapter declares its provider's cut-off stop reasons"
    calls = [("add", '{"a": 1}', "call_first"), ("add", '{"a": 2}', "call_last")]
    first = ToolCall("add", {"a": 1}, "call_first")
    for reason in sorted(reasons):
        server.script(kind.tool_reply(calls, reason))
        reply = ask(model)
        assert reply.stop_reason == reason and reply.cut_off
        assert reply.tool_calls == (first, ToolCall("add", {INVALID_ARGS_KEY: TRUNCATED_ARGS_MESSAGE}, "call_last"))
        assert Message("assistant", (), stop_reason=reason).cut_off
    server.script(kind.tool_reply(calls, None))
    reply = ask(model)
    assert not reply.cut_off
    assert reply.tool_calls == (first, ToolCall("add", {"a": 2}, "call_last"))


def test_a_cut_off_word_an_adapter_declares_counts_for_every_reply() -> None:
    word = "OUT_OF_ROOM_FOR_THIS_TEST"
    assert not Reply(Message.assistant("x"), Usage(), stop_reason=word).cut_off

    class Roomless(Adapter):
        provider = "roomless"
        cut_off_stop_reasons = frozenset({word})

        def respond(self, request, on_text=None, on_event=None):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    assert Roomless.cut_off_stop_reasons == {word}
    assert Reply(Message.assistant("x"), Usage(), stop_reason=word).cut_off
    assert Message("assistant", (), stop_reason=word).cut_off


# -- errors --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [400, 404, 409, 500])
@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_provider_error_carries_the_http_status_and_retry_reads_it(
    server: ProviderServer,
    kind: AdapterKind,
    code: int,
) -> None:
    server.script(echo_key(code))
    with pytest.raises(ProviderError) as info:
        ask(kind.at(server))
    assert info.value.status_code == code
    server.reset()
    server.script(echo_key(code), kind.reply(["fine"]))
    retry = Retry(kind.at(server), attempts=2, backoff=0)
    if code in (409, 500):
        assert retry.respond(Request(None, (Message.user("hi"),))).text == "fine"
        assert len(server.posts) == 2
    else:
        with pytest.raises(ProviderError):
            retry.respond(Request(None, (Message.user("hi"),)))
        assert len(server.posts) == 1, "a 4xx other than 408, 409, 429 is not retried"


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_failure_without_an_answer_has_no_status(kind: AdapterKind) -> None:
    with socket.socket() as closed:  # a port nobody listens on: the connection is refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    nowhere = cast(ProviderServer, SimpleNamespace(url=url, openai_url=url + "/v1"))
    with pytest.raises(ProviderError) as info:
        ask(kind.at(nowhere))
    assert info.value.status_code is None


# -- the table of providers ----------------------------------------------------------------------------------------


def docs_row(row: Provider) -> str:
    names = f"`{row.prefix}/NAME`" + (f", `{row.name_prefix}...`" if row.name_prefix else "")
    adapter = f"`{row.adapter.__name__}` ({row.api})" + (f" at `{row.base_url}`" if row.base_url else "")
    key = f"`{row.key}`" if row.key != "none" else "none"
    return f"| {names} | {adapter} | {key} |"


def test_the_docs_table_of_model_strings_is_the_table_of_providers() -> None:
    text = (DOCS / "models.md").read_text(encoding="utf-8")
    section = text.split("## Model strings", 1)[1].split("\n\n")[1]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| String")]
    rows = [row for row in rows if not row.startswith("| ---")]
    expected = [docs_row(row) for row in PROVIDERS]
    assert rows[: len(expected)] == expected
    assert rows[len(expected) :] == [
        "| any string with `base_url=` | `OpenAICompatible` at that address | `api_key=` |"
    ]


def test_resolve_model_reads_the_table_and_its_docstring_and_errors_name_every_provider() -> None:
    doc = resolve_model.__doc__ or ""
    for row in PROVIDERS:
        assert f'"{row.prefix}/NAME"' in doc, row.prefix
        model = resolve_model(f"{row.prefix}/some-model")
        assert type(model) is row.adapter and model.name == "some-model"
        if row.base_url is not None:
            assert model.base_url == row.base_url
        if row.name_prefix is not None:
            assert f'"{row.name_prefix}..."' in doc
            assert type(resolve_model(f"{row.name_prefix}x")) is row.adapter
        routed = resolve_model(f"{row.prefix}/some-model", base_url="http://127.0.0.1:9/v1")
        if row.keeps_base_url:
            assert type(routed) is row.adapter and routed.name == "some-model"
        else:
            assert type(routed) is models.OpenAICompatible and routed.name == f"{row.prefix}/some-model"
    with pytest.raises(ValueError) as info:
        resolve_model("mystery/x")
    assert "known providers " + ", ".join(row.prefix for row in PROVIDERS) in str(info.value)
    with pytest.raises(ValueError) as info:
        resolve_model("mystery-model")
    assert re.findall(r"^ *(\S+)/mystery-model$", str(info.value), re.M) == [row.prefix for row in PROVIDERS]


# -- the raw request path -----------------------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(40)
GIF = b"GIF89a" + bytes(40)


def rich_request() -> Request:
    """Text, tools, images (in a message and in a tool result), every adapter's thinking or reasoning items, a
    tool call and its result, an error result, non-ASCII text and an empty assistant message."""
    call = ToolCall("add", {"a": 1, "b": [2.5, None], "note": "é ✓"}, "call_1")
    assistant = Message(
        "assistant",
        (
            RawBlock("anthropic", {"type": "thinking", "thinking": "hmm", "signature": "sig"}),
            RawBlock("openai_compatible", {"reasoning_content": "hmm"}),
            RawBlock("openai_responses", {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}),
            TextBlock("Let me add — “quoted”."),
            call,
        ),
    )
    result = ToolResultBlock(call.id, (TextBlock("3.5"), Image(GIF)), "add")
    return Request(
        "Be brief. Ünïcode.",
        (
            Message.user("look at this", Image(PNG)),
            assistant,
            Message("user", (result, TextBlock("and this?"))),
            Message("assistant", ()),
            Message("user", (ToolResultBlock("call_2", "boom", "add", is_error=True),)),
            Message.user("go on"),
        ),
        (SPEC, ToolSpec("search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}})),
    )


def unsigned(header: str | None) -> str | None:
    """A header without an AWS request signature (it covers the time of the request, to the second)."""
    return re.sub(r"Signature=[0-9a-f]+", "Signature=...", header) if header else header


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_the_raw_path_sends_what_the_sdks_create_would_send(
    server: ProviderServer,
    kind: AdapterKind,
) -> None:
    """The adapters send the body they built as bytes through `client.post`; the SDK's typed call with the same
    arguments sends the same JSON value, with the same credentials and content type."""
    for options in ({}, *kind.options):
        model = kind.at(server, **options)
        for request in (rich_request(), Request(None, (Message.user("hi"),), (SPEC,), "none")):
            model.respond(request)
            raw = server.posts[-1]
            kind.create(model, request, server)
            typed = server.posts[-1]
            assert raw.body == typed.body, (kind.name, options)
            for header in ("authorization", "x-api-key", "x-goog-api-key", "content-type", "anthropic-version"):
                assert unsigned(raw.headers.get(header)) == unsigned(typed.headers.get(header)), header
            assert raw.path == typed.path


def test_headers_and_options_of_a_client_the_user_hands_in_reach_the_server(server: ProviderServer) -> None:
    import openai

    client = openai.OpenAI(
        api_key="sk-user-client", base_url=server.openai_url, max_retries=0, default_headers={"x-team": "search"}
    )
    model = OpenAIResponses("gpt-test", client=client)
    assert model.respond(Request(None, (Message.user("hi"),))).text == "Hello"
    sent = server.posts[-1]
    assert sent.headers["x-team"] == "search" and sent.headers["authorization"] == "Bearer sk-user-client"
    assert sent.path == "/v1/responses" and sent.headers["content-type"] == "application/json"
