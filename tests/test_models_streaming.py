"""What every adapter does the same way, checked for each `AdapterKind` through its real SDK against the local
provider server: text streamed to `on_text` as it arrives (sync and async), one request counted in the usage,
images in a user message and in a tool result reaching the server, a tool call's id carried into the next request,
and cancelling `arespond` ending the request at once.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time

import pytest

from alpineagents.types import Image, Message, Request, TextBlock, ToolCall, ToolResultBlock, ToolSpec
from servers.fixtures import server  # noqa: F401 - pytest fixture
from servers.kinds import KINDS, AdapterKind
from servers.provider import ProviderServer, slow

PNG = b"\x89PNG\r\n\x1a\n" + bytes(30) + b"first"
GIF = b"GIF89a" + bytes(30) + b"second"
SPEC = ToolSpec("add", "Add", {"type": "object"})


def hi() -> Request:
    return Request(None, (Message.user("hi"),))


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_text_streams_to_on_text_as_it_arrives_and_one_request_is_counted(
    server: ProviderServer,  # noqa: F811
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
    server: ProviderServer,  # noqa: F811
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
def test_a_tool_calls_id_goes_back_with_its_result(server: ProviderServer, kind: AdapterKind) -> None:  # noqa: F811
    server.script(kind.tool_reply("add", '{"a": 1}', "call_back", None))
    model = kind.at(server)
    first = model.respond(Request(None, (Message.user("add"),), (SPEC,)))
    assert first.tool_calls == (ToolCall("add", {"a": 1}, "call_back"),)
    result = Message("user", (ToolResultBlock("call_back", "1", "add"),))
    model.respond(Request(None, (Message.user("add"), first.message, result), (SPEC,)))
    sent = json.dumps(kind.conversation(server.posts[-1].body))
    assert sent.count("call_back") == 2, "the call and its result carry the id"


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_cancelling_arespond_ends_the_request_at_once(server: ProviderServer, kind: AdapterKind) -> None:  # noqa: F811
    server.script(slow(3.0, kind.reply(["late"])))
    model = kind.at(server)

    async def main() -> float:
        task = asyncio.create_task(model.arespond(hi()))
        deadline = time.monotonic() + 30
        while not server.posts:
            assert time.monotonic() < deadline, "the request did not arrive within 30 s"
            await asyncio.sleep(0.01)
        start = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - start

    assert asyncio.run(main()) < 1.0
