"""The test doubles: `tool_call`, `FakeModel`, `FakeHuman`."""

from __future__ import annotations

import threading
from typing import Literal

import pytest

from alpineagents.errors import ContextTooLongError, RateLimitError
from alpineagents.models.base import Model
from alpineagents.testing import FakeHuman, FakeModel, tool_call
from alpineagents.types import Message, Price, RawBlock, Reply, Request, TextBlock, ToolCall, Usage


def req(text: str = "x") -> Request:
    return Request(None, (Message.user(text),))


def test_tool_call_ids_and_frozen_args() -> None:
    first = tool_call("read_file", path="main.py")
    second = tool_call("read_file", path="main.py")
    assert first.id.startswith("call_") and len(first.id) == 17
    assert all(c in "0123456789abcdef" for c in first.id[5:])
    assert first.id != second.id
    assert first.name == "read_file" and first.args == {"path": "main.py"}
    with pytest.raises(TypeError):
        first.args["path"] = "x"  # type: ignore[index]


def test_tool_call_name_is_positional_only() -> None:
    call = tool_call("search", name="x")
    assert call.name == "search" and call.args == {"name": "x"}


def test_fake_model_text_and_call_replies_stream_text_chunks() -> None:
    fake = FakeModel([["Let me look.", tool_call("s", q="x")], ["Hel", "lo"]])
    reply = fake.respond(req())
    assert reply.text == "Let me look."
    assert len(reply.tool_calls) == 1
    assert reply.stop_reason == "tool_use"
    chunks: list[str] = []
    reply = fake.respond(req(), chunks.append)
    assert chunks == ["Hel", "lo"]
    assert reply.stop_reason == "end_turn"


def test_fake_model_context_too_long_out_of_items_and_bad_item() -> None:
    fake = FakeModel(["hi"], context_window=1)
    with pytest.raises(ContextTooLongError, match="larger than context_window=1"):
        fake.respond(req("a long request " * 10))
    assert fake.remaining == 1
    assert len(fake.requests) == 1
    with pytest.raises(RuntimeError, match="ran out of prepared replies"):
        FakeModel([]).respond(req())
    with pytest.raises(TypeError, match="FakeModel: unsupported reply item 5"):
        FakeModel([5]).respond(req())


def test_twenty_threads_get_distinct_items() -> None:
    fake = FakeModel([f"a{i}" for i in range(20)])
    texts: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        reply = fake.respond(req())
        with lock:
            texts.append(reply.text)

    threads = [threading.Thread(target=worker) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    assert sorted(texts) == sorted(f"a{i}" for i in range(20))
    assert fake.remaining == 0


def test_fake_human_skips_and_runs_out() -> None:
    human = FakeHuman(["maybe", "yes"])
    assert human.ask(None, "Continue?", returns=bool) is True
    assert human.remaining == 0
    with pytest.raises(RuntimeError, match="Continue\\?"):
        FakeHuman([]).ask(None, "Continue?")


def test_fake_model_usage_example_and_members() -> None:
    fake = FakeModel(["hello world"])
    assert isinstance(fake, Model)
    assert fake.provider == "fake" and fake.name == "fake" and fake.price is None
    assert repr(fake) == "FakeModel('fake')" and repr(FakeModel([], name="m1")) == "FakeModel('m1')"
    assert fake.context_window == 200_000
    reply = fake.respond(Request(None, (Message.user("x"),)))
    assert reply.usage == Usage(input_tokens=5, output_tokens=4, requests=1)
    assert reply.context_tokens == 9
    assert reply.stop_reason == "end_turn" and reply.model == "fake"
    assert fake.mark_cache(req()) is not None


def test_fake_model_items_reply_exception_callable_price() -> None:
    given = Reply(Message.assistant("as is"), Usage(requests=1))
    seen: list[Request] = []

    def item(request: Request) -> str:
        seen.append(request)
        return "from a function"

    fake = FakeModel([given, RateLimitError("slow"), item, [], (RawBlock("fake", {"a": 1}), TextBlock("t"))])
    request = req()
    assert fake.respond(request) is given
    with pytest.raises(RateLimitError):
        fake.respond(request)
    assert fake.respond(request).text == "from a function" and seen == [request]
    assert fake.respond(request).message.content == ()
    assert fake.respond(request).text == "t"
    assert fake.remaining == 0
    priced = FakeModel(["x"], price=Price(input=1, output=1)).respond(req())
    assert priced.usage.cost is not None and priced.usage.cost > 0
    only_call = FakeModel([ToolCall("t", {}, "c1")]).respond(req())
    assert only_call.tool_calls == (ToolCall("t", {}, "c1"),)


def test_fake_human_examples() -> None:
    human = FakeHuman(["no", "yes"])
    assert human.ask(None, "a", returns=bool) is False
    assert human.ask(None, "b", returns=bool) is True
    assert human.questions == ["a", "b"]
    assert FakeHuman(["always"]).ask(None, "q", returns=Literal["yes", "no", "always"]) == "always"
    assert FakeHuman([1]).ask(None, "q", returns=Literal["1", "2"]) == "1"
    assert FakeHuman(["  ", " ok "]).ask(None, "q") == "ok"
    picky = FakeHuman(["5", "6"])
    with pytest.raises(TypeError):
        picky.ask(None, "q", returns=int)
    assert picky.remaining == 1
