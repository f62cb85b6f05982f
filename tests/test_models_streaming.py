"""What every adapter does the same way, checked for each `AdapterKind` through its real SDK against the local
provider server: text streamed to `on_text` as it arrives (sync and async), one request counted in the usage,
images in a user message and in a tool result reaching the server, a tool call's id carried into the next request,
cancelling `arespond` ending the request at once (before the reply and mid-stream); and the stream's failures: a
connection dropped mid-stream, a body that ends before the provider's last event, an exception from `on_text`, a
429 that the SDK's own retries get past.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from alpineagents.errors import ProviderError
from alpineagents.models import Retry
from alpineagents.types import Image, Message, ModelEvent, Request, TextBlock, ToolCall, ToolResultBlock, ToolSpec
from servers.kinds import KINDS, AdapterKind
from servers.provider import ProviderServer, slow

PNG = b"\x89PNG\r\n\x1a\n" + bytes(30) + b"first"
GIF = b"GIF89a" + bytes(30) + b"second"
SPEC = ToolSpec("add", "Add", {"type": "object"})


def hi() -> Request:
    return Request(None, (Message.user("hi"),))


def seconds_to_cancel(call: Coroutine[Any, Any, object], arrived: Callable[[], bool], what: str) -> float:
    """Start `call` as a task, cancel it once `arrived()` (within 30 s), and give the seconds the cancel took."""

    async def main() -> float:
        task = asyncio.create_task(call)
        deadline = time.monotonic() + 30
        while not arrived():
            assert time.monotonic() < deadline, f"{what} did not arrive within 30 s"
            await asyncio.sleep(0.01)
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - start

    return asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_text_streams_to_on_text_as_it_arrives_and_one_request_is_counted(
    server: ProviderServer,
    kind: AdapterKind,
) -> None:
    server.script(kind.reply(["Hel", "lo", " there"]), kind.reply(["Hel", "lo", " there"]))
    got: list[str] = []
    reply = kind.at(server).respond(hi(), got.append)
    assert got == ["Hel", "lo", " there"] and reply.text == "Hello there"
    assert reply.usage.requests == 1 and reply.context_tokens
    assert reply.stop_reason and not reply.cut_off
    got.clear()
    again = asyncio.run(kind.at(server).arespond(hi(), got.append))
    assert got == ["Hel", "lo", " there"] and again.message == reply.message


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_images_of_a_user_message_and_of_a_tool_result_reach_the_server(
    server: ProviderServer,
    kind: AdapterKind,
) -> None:
    call = ToolCall("add", {"a": 1}, "call_img")
    messages = (
        Message.user("look", Image(PNG)),
        Message("assistant", (call,)),
        Message("user", (ToolResultBlock(call.id, (TextBlock("drawn"), Image(GIF)), "add"),)),
    )
    kind.at(server).respond(Request(None, messages, (SPEC,)))
    sent = json.dumps(server.posts[-1].body)
    for image in (PNG, GIF):
        encoded = base64.b64encode(image).decode()
        assert encoded in sent or base64.urlsafe_b64encode(image).decode() in sent, kind.name
    assert "call_img" in sent


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_tool_calls_id_goes_back_with_its_result(server: ProviderServer, kind: AdapterKind) -> None:
    server.script(kind.tool_reply([("add", '{"a": 1}', "call_back")], None))
    model = kind.at(server)
    first = model.respond(Request(None, (Message.user("add"),), (SPEC,)))
    assert first.tool_calls == (ToolCall("add", {"a": 1}, "call_back"),)
    result = Message("user", (ToolResultBlock("call_back", "1", "add"),))
    model.respond(Request(None, (Message.user("add"), first.message, result), (SPEC,)))
    sent = json.dumps(kind.conversation(server.posts[-1].body))
    assert sent.count("call_back") == 2, "the call and its result carry the id"


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_cancelling_arespond_ends_the_request_at_once(server: ProviderServer, kind: AdapterKind) -> None:
    server.script(slow(3.0, kind.reply(["late"])))
    assert seconds_to_cancel(kind.at(server).arespond(hi()), lambda: bool(server.posts), "the request") < 1.0


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_cancelling_arespond_mid_stream_stops_reading(server: ProviderServer, kind: AdapterKind) -> None:
    server.script(kind.reply([f"c{i}" for i in range(50)], pause=0.1))
    got: list[str] = []
    seconds = seconds_to_cancel(kind.at(server).arespond(hi(), got.append), lambda: bool(got), "a text piece")
    assert seconds < 2.0, "the stream's 50 events take 5 s: cancelling did not wait for them"
    assert 0 < len(got) < 50


# -- the stream's failures -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_connection_dropped_mid_stream_is_a_provider_error_and_retry_starts_over(
    server: ProviderServer,
    kind: AdapterKind,
) -> None:
    texts = ["Hel", "lo", " world"]
    server.script(kind.stream(texts, drop_after=kind.lead + 2))
    got: list[str] = []
    with pytest.raises(ProviderError) as info:
        kind.at(server, retries=2).respond(hi(), got.append)
    assert type(info.value) is ProviderError and kind.dropped in str(info.value)
    assert isinstance(info.value.__cause__, kind.dropped_cause)
    assert got == ["Hel", "lo"]
    assert len(server.posts) == 1, "a stream that broke after it started is not retried by the SDK"
    server.script(kind.stream(texts, drop_after=kind.lead + 2))
    got.clear()
    with pytest.raises(ProviderError) as ainfo:
        asyncio.run(kind.at(server).arespond(hi(), got.append))
    assert type(ainfo.value) is ProviderError and isinstance(ainfo.value.__cause__, kind.dropped_cause)
    assert got == ["Hel", "lo"]
    server.script(kind.stream(texts, drop_after=kind.lead + 2), kind.reply(["Hello again"]))
    events: list[ModelEvent] = []
    got.clear()
    reply = Retry(kind.at(server), attempts=2, backoff=0.0).respond(hi(), got.append, events.append)
    assert reply.text == "Hello again"
    assert [e.kind for e in events] == ["retry"] and events[0].data["streamed_chars"] == 5
    assert got == ["Hel", "lo", "Hello again"]


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_stream_that_ends_before_its_last_event_is_a_provider_error(
    server: ProviderServer,
    kind: AdapterKind,
) -> None:
    unended = kind.stream(["Hel", "lo", " world"], end_after=kind.lead + 2)
    server.script(unended, unended)
    got: list[str] = []
    with pytest.raises(ProviderError, match=kind.unended) as info:
        kind.at(server).respond(hi(), got.append)
    assert type(info.value) is ProviderError
    assert got == ["Hel", "lo"]
    with pytest.raises(ProviderError, match=kind.unended) as ainfo:
        asyncio.run(kind.at(server).arespond(hi()))
    assert type(ainfo.value) is ProviderError


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_an_exception_from_on_text_propagates_unchanged(server: ProviderServer, kind: AdapterKind) -> None:
    boom = ValueError("reporter bug")

    def on_text(text: str) -> None:
        raise boom

    server.script(kind.reply(["a", "b"]), kind.reply(["a", "b"]))
    with pytest.raises(ValueError) as info:
        kind.at(server).respond(hi(), on_text)
    assert info.value is boom
    with pytest.raises(ValueError) as ainfo:
        asyncio.run(kind.at(server).arespond(hi(), on_text))
    assert ainfo.value is boom


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_429_then_success_goes_through_the_sdks_own_retries(server: ProviderServer, kind: AdapterKind) -> None:
    server.script(kind.rate_limited(), kind.reply(["ok"]))
    assert kind.at(server, retries=1).respond(hi()).text == "ok"
    assert len(server.posts) == 2
