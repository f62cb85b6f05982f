"""The Model role: settings, respond/arespond, compact, count_tokens, mark_cache, helpers."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from alpineagents.models import base as base_module
from alpineagents.models.base import COMPACT_PROMPT, Model, OnEvent, OnText
from alpineagents.types import (
    Message,
    ModelEvent,
    Price,
    Reply,
    Request,
    TextBlock,
    ToolCall,
    ToolSpec,
    Usage,
)

SPEC = ToolSpec("search", "Search the web", {"type": "object", "properties": {"q": {"type": "string"}}})


class Recording(Model):
    """Answers with a fixed text, streamed in chunks, and records what it was given."""

    name = "recorder"

    def __init__(self, chunks: tuple[str, ...] = ("Hel", "lo")) -> None:
        self.chunks = chunks
        self.requests: list[Request] = []
        self.on_texts: list[OnText | None] = []

    @property
    def context_window(self) -> int:
        return 1000

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        self.requests.append(request)
        self.on_texts.append(on_text)
        for chunk in self.chunks:
            if on_text is not None:
                on_text(chunk)
        return Reply(Message.assistant("".join(self.chunks)), Usage(requests=1), model=self.name)


def request() -> Request:
    return Request(
        "sys",
        (Message.user("hi"), Message("assistant", (ToolCall("search", {"q": "x"}, "c1"),))),
        (SPEC,),
    )


# -- Checks 1-10 ---------------------------------------------------------------------------------------------------


def test_a_model_missing_a_required_member_cannot_be_instantiated() -> None:
    class OnlyRespond(Model):
        def respond(self, request: Request, on_text: Any = None, on_event: Any = None) -> Reply:
            raise AssertionError

    class OnlyWindow(Model):
        @property
        def context_window(self) -> int:
            return 1

    with pytest.raises(TypeError):
        OnlyRespond()  # type: ignore[abstract]
    with pytest.raises(TypeError):
        OnlyWindow()  # type: ignore[abstract]


def test_settings_have_defaults_without_super_init() -> None:
    class Minimal(Model):
        def __init__(self) -> None:
            self.marker = 1

        @property
        def context_window(self) -> int:
            return 1

        def respond(self, request: Request, on_text: Any = None, on_event: Any = None) -> Reply:
            raise AssertionError

    m = Minimal()
    assert m.supports == frozenset()
    assert m.retries == 2
    assert m.price is None
    assert m.max_tokens is None
    assert m.provider == ""
    assert m.name == ""
    assert m.temperature is None and m.timeout is None


def test_repr_names_the_class_and_the_model() -> None:
    from alpineagents.models import Anthropic, OpenAICompatible

    assert repr(Anthropic("claude-sonnet-5")) == "Anthropic('claude-sonnet-5')"
    assert repr(OpenAICompatible("llama3:8b")) == "OpenAICompatible('llama3:8b')"
    assert repr(Recording()) == "Recording('recorder')"


def test_compact_appends_the_prompt_and_the_instructions() -> None:
    model = Recording()
    req = request()
    reply = model.compact(req, instructions="keep the files")
    sent = model.requests[-1]
    assert sent.tool_choice == "none"
    assert sent.tools == req.tools
    assert sent.system == req.system
    assert sent.messages[:-1] == req.messages
    assert sent.messages[-1].role == "user"
    assert sent.messages[-1].text == COMPACT_PROMPT + "\n\nBe sure to keep: keep the files"
    assert model.on_texts == [None]
    assert reply.text == "Hello"


def test_compact_without_instructions_sends_the_prompt_alone() -> None:
    model = Recording()
    model.compact(request())
    assert model.requests[-1].messages[-1].text == COMPACT_PROMPT
    model.compact(request(), instructions="")
    assert model.requests[-1].messages[-1].text == COMPACT_PROMPT
    assert len(COMPACT_PROMPT) == 237
    assert COMPACT_PROMPT.startswith("Summarize the conversation so far.")
    assert COMPACT_PROMPT.endswith("Do not call any tools.")


def test_mark_cache_returns_the_same_request() -> None:
    req = request()
    assert Recording().mark_cache(req) is req


def test_count_tokens_anchors_on_known_tokens() -> None:
    req = Request(None, (Message("assistant", (TextBlock("x"),), tokens=1000), Message.user("follow-up")))
    assert Recording().count_tokens(req) > 1000
    # without an anchor, the system prompt, tools and every message are estimated
    plain = Request("You are helpful.", (Message.user("hi"),), (ToolSpec("read", "Read a file", {"type": "object"}),))
    assert Recording().count_tokens(plain) == 17 + 5


def test_arespond_relays_callbacks_to_the_loop_thread() -> None:
    model = Recording(("a", "b", "c"))
    seen: list[int] = []

    async def main() -> tuple[Reply, int]:
        reply = await model.arespond(request(), lambda _chunk: seen.append(threading.get_ident()))
        return reply, threading.get_ident()

    reply, loop_thread = asyncio.run(main())
    assert seen and all(ident == loop_thread for ident in seen)
    assert len(seen) == 3
    assert reply == model.respond(request())


def test_arespond_callback_error_propagates_as_the_same_object() -> None:
    model = Recording()
    error = RuntimeError("x")

    def boom(_chunk: str) -> None:
        raise error

    async def main() -> None:
        await model.arespond(request(), boom)

    with pytest.raises(RuntimeError) as info:
        asyncio.run(main())
    assert info.value is error


def test_acompact_uses_an_overridden_compact() -> None:
    marker = Reply(Message.assistant("server summary"), Usage(requests=1))
    threads: list[int] = []

    class ServerCompact(Recording):
        def compact(self, request: Request, instructions: str | None = None, on_event: OnEvent | None = None) -> Reply:
            threads.append(threading.get_ident())
            if on_event is not None:
                on_event(ModelEvent("compact", "compacted on the server"))
            return marker

    model = ServerCompact()
    events: list[tuple[ModelEvent, int]] = []

    async def main() -> tuple[Reply, int]:
        reply = await model.acompact(request(), None, lambda e: events.append((e, threading.get_ident())))
        return reply, threading.get_ident()

    reply, loop_thread = asyncio.run(main())
    assert reply is marker
    assert model.requests == []
    assert threads and threads[0] != loop_thread
    assert events and events[0][1] == loop_thread


# -- more of the role --------------------------------------------------------------------------------------------------


def test_acompact_default_goes_through_arespond() -> None:
    calls: list[str] = []

    class Async(Recording):
        async def arespond(
            self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None
        ) -> Reply:
            calls.append(request.messages[-1].text)
            assert on_text is None
            return Reply(Message.assistant("sum"), Usage(requests=1))

    reply = asyncio.run(Async().acompact(request(), "the ids"))
    assert reply.text == "sum"
    assert calls == [COMPACT_PROMPT + "\n\nBe sure to keep: the ids"]


def test_arespond_runs_on_a_daemon_thread_with_contextvars() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[tuple[str, bool, str]] = []

    class Probe(Recording):
        def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
            thread = threading.current_thread()
            seen.append((var.get(), thread.daemon, thread.name))
            return super().respond(request, on_text, on_event)

    async def main() -> None:
        var.set("set in the task")
        await Probe().arespond(request())

    asyncio.run(main())
    assert seen[0][0] == "set in the task"
    assert seen[0][1] is True


def test_arespond_on_event_relayed_and_none_callbacks_stay_none() -> None:
    received: list[Any] = []

    class Eventful(Recording):
        def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
            received.append((on_text, on_event is not None))
            if on_event is not None:
                on_event(ModelEvent("retry", "again"))
            return super().respond(request, on_text, on_event)

    events: list[ModelEvent] = []

    async def main() -> None:
        await Eventful().arespond(request(), None, events.append)

    asyncio.run(main())
    assert received[0] == (None, True)
    assert events == [ModelEvent("retry", "again")]


def test_arespond_cancel_stops_worker_at_next_callback() -> None:
    first_sent = threading.Event()
    go_on = threading.Event()
    worker_saw: list[BaseException] = []
    delivered: list[str] = []

    class Streaming(Recording):
        def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
            assert on_text is not None
            on_text("first")
            first_sent.set()
            go_on.wait(5)
            try:
                on_text("second")
            except BaseException as error:  # noqa: BLE001 - recorded for the test
                worker_saw.append(error)
                raise
            return Reply(Message.assistant("x"), Usage(requests=1))

    async def main() -> None:
        task = asyncio.create_task(Streaming().arespond(request(), delivered.append))
        deadline = time.monotonic() + 30
        while not first_sent.is_set():
            assert time.monotonic() < deadline, "nothing arrived within 30 s"
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        go_on.set()
        for _ in range(100):
            if worker_saw:
                break
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert delivered == ["first"]
    assert len(worker_saw) == 1 and isinstance(worker_saw[0], asyncio.CancelledError)


def test_arespond_queued_callback_dropped_after_cancel() -> None:
    relay = base_module._Relay  # the relay is the piece that decides; exercise it on a live loop
    ran: list[str] = []
    outcome: list[BaseException] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        r = relay(loop)
        wrapped = r.wrap(ran.append)
        assert wrapped is not None

        def worker() -> None:
            try:
                wrapped("queued")
            except BaseException as error:  # noqa: BLE001
                outcome.append(error)

        thread = threading.Thread(target=worker)
        # block the loop so the callback stays queued, cancel, then let the loop run it
        thread.start()
        time.sleep(0.1)
        r.cancel()
        await asyncio.sleep(0.05)
        thread.join(2)

    asyncio.run(main())
    assert ran == []
    assert len(outcome) == 1 and isinstance(outcome[0], asyncio.CancelledError)


def test_cost_helper() -> None:
    model = Recording()
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, requests=1)
    assert model._cost(usage) is None
    model.price = Price(input=3, output=15)
    assert model._cost(usage) == 18.0


def test_the_unsupported_feature_message() -> None:
    model = Recording()
    model.supports = frozenset({"vision", "cache"})
    model._check_supported("vision", "x=True")
    with pytest.raises(ValueError) as info:
        model._check_supported("thinking", "thinking=True")
    text = str(info.value)
    assert text.startswith("Recording('recorder') does not support thinking=True (required feature: 'thinking')")
    assert "\nFix: Features this adapter supports: cache, vision. Remove the unsupported setting" in text
    assert "supports=" in text
    model.supports = frozenset()
    with pytest.raises(ValueError, match=r"\(none\)"):
        model._check_supported("cache", "cache=True")


def test_merge_same_role() -> None:
    a = Message.user("a")
    b = Message("user", (TextBlock("b"),), tokens=7)
    c = Message.assistant("c")
    d = Message.user("d")
    merged = Model._merge_same_role([a, b, c, d])
    assert merged == [Message("user", (TextBlock("a"), TextBlock("b")), tokens=7), c, d]
    assert merged[1] is c
    assert Model._merge_same_role([]) == []


def test_summary_request_helper() -> None:
    req = request()
    summary = Model._summary_request(req, "x")
    assert summary.tool_choice == "none"
    assert summary.messages[-1] == Message.user(COMPACT_PROMPT + "\n\nBe sure to keep: x")
    assert len(summary.messages) == len(req.messages) + 1
    assert req.tool_choice == "auto"


def test_no_price_lookup_hook() -> None:
    assert not hasattr(Model, "_lookup_price")
    assert set(base_module.__all__) == {"Model", "OnText", "OnEvent", "COMPACT_PROMPT"}
