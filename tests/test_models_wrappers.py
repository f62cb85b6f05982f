"""`Retry` and `Fallback`: wrapper Models on the wrapper contract (copy the inner settings, delegate, report each restart).

The failures come from the fake provider server through the real SDKs and adapters; a few cases use small
scripted Models.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx2
import pytest

from alpineagents.errors import AuthError, ContextTooLongError, ProviderError, RateLimitError
from alpineagents.models import Anthropic, Fallback, Model, OpenAICompatible, Retry
from alpineagents.models.base import COMPACT_PROMPT, OnEvent, OnStream, OnText
from alpineagents.models.wrappers import is_retryable
from alpineagents.types import Message, ModelEvent, Price, Reply, Request, TextBlock, Usage
from helpers.pieces import Pieces
from servers.provider import (
    ProviderServer,
    anthropic_error,
    anthropic_events,
    anthropic_stream,
    openai_error,
    openai_stream,
    slow,
    sse,
)


def req(text: str = "hi") -> Request:
    return Request("sys", (Message.user(text),))


def claude(srv: ProviderServer, **kwargs: Any) -> Anthropic:
    kwargs.setdefault("retries", 0)
    kwargs.setdefault("max_tokens", 100)
    return Anthropic("claude-test", base_url=srv.url, api_key="sk-test", **kwargs)


def gpt(srv: ProviderServer, **kwargs: Any) -> OpenAICompatible:
    kwargs.setdefault("retries", 0)
    return OpenAICompatible("gpt-test", base_url=srv.openai_url, **kwargs)


class Scripted(Model):
    """Raises or answers from a list, one item per call; records the requests it got."""

    def __init__(self, name: str, outcomes: list[Any], *, window: int = 1000, provider: str = "scripted") -> None:
        self.name = name
        self.provider = provider
        self.outcomes = outcomes
        self.window = window
        self.requests: list[Request] = []

    @property
    def context_window(self) -> int:
        return self.window

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        self.requests.append(request)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        if on_text is not None:
            on_text(outcome)
        return Reply(Message.assistant(outcome), Usage(requests=1), model=self.name)

    def mark_cache(self, request: Request) -> Request:
        return Request(request.system, (*request.messages, Message.user(f"marked by {self.name}")))


def provider_error(status: int | None = None) -> ProviderError:
    return ProviderError("failed", status_code=status)


# -- Retry against the fake server --------------------------------------------------------------------------------


def test_retry_after_stream_dropped_mid_reply(server: ProviderServer) -> None:
    server.script(sse(anthropic_events(["Hel", "lo", " there"]), drop_after=5), anthropic_stream(["Hello", " there"]))
    model = Retry(claude(server), attempts=3, backoff=0)
    texts: list[str] = []
    events: list[ModelEvent] = []
    reply = model.respond(req(), texts.append, events.append)
    assert reply.text == "Hello there"
    assert texts == ["Hel", "lo", "Hello", " there"]
    assert len(events) == 1
    event = events[0]
    assert event.kind == "retry"
    assert "claude-test failed (ProviderError: Anthropic stream failed mid-reply" in event.message
    assert "5 characters of streamed text are discarded" in event.message
    assert "(attempt 2 of 3)" in event.message
    assert event.data["streamed_chars"] == 5 and event.data["attempt"] == 2 and event.data["error"] == "ProviderError"
    assert len(server.posts) == 2
    assert reply.usage.requests == 1


def test_retry_after_overload_outlasting_sdk_retries(server: ProviderServer) -> None:
    server.script(
        anthropic_error(529, "overloaded_error", "Overloaded"),
        anthropic_error(529, "overloaded_error", "Overloaded"),
        anthropic_stream(["fine"]),
    )
    events: list[ModelEvent] = []
    reply = Retry(claude(server, retries=1), backoff=0).respond(req(), None, events.append)
    assert reply.text == "fine"
    assert len(server.posts) == 3  # two by the SDK, one more by Retry
    assert [e.kind for e in events] == ["retry"]
    assert "streamed text" not in events[0].message


def test_retry_after_rate_limit_and_server_errors(server: ProviderServer) -> None:
    server.script(
        openai_error(429, "Rate limit reached", kind="rate_limit_error"),
        openai_error(500, "oops", kind="server_error"),
        openai_stream(["ok"]),
    )
    events: list[ModelEvent] = []
    reply = Retry(gpt(server), attempts=3, backoff=0).respond(req(), None, events.append)
    assert reply.text == "ok"
    assert [e.data["error"] for e in events] == ["RateLimitError", "ProviderError"]
    assert [e.data["attempt"] for e in events] == [2, 3]


def test_retry_after_timeout(server: ProviderServer) -> None:
    # The first answer comes after 60 s, far past the timeout; the timeout leaves a busy machine time for the second.
    server.script(slow(60.0, anthropic_stream(["late"])), anthropic_stream(["quick"]))
    events: list[ModelEvent] = []
    reply = Retry(claude(server, timeout=2.0), backoff=0).respond(req(), None, events.append)
    assert reply.text == "quick"
    assert len(events) == 1 and "timed out" in events[0].message.lower()


def test_retry_after_stream_without_final_event(server: ProviderServer) -> None:
    events_ = anthropic_events(["Hel", "lo"])
    server.script(sse(events_, end_after=len(events_) - 3), anthropic_stream(["Hello"]))
    events: list[ModelEvent] = []
    assert Retry(claude(server), backoff=0).respond(req(), None, events.append).text == "Hello"
    assert len(events) == 1


def test_retry_gives_up_after_attempts(server: ProviderServer) -> None:
    server.script(*[anthropic_error(529, "overloaded_error", "Overloaded")] * 3)
    events: list[ModelEvent] = []
    with pytest.raises(ProviderError) as info:
        Retry(claude(server), attempts=3, backoff=0).respond(req(), None, events.append)
    assert "Overloaded" in str(info.value)
    assert len(events) == 2 and len(server.posts) == 3


@pytest.mark.parametrize(
    ("action", "error"),
    [
        (anthropic_error(401, "authentication_error", "invalid x-api-key"), AuthError),
        (anthropic_error(400, "invalid_request_error", "prompt is too long: 300000 > 200000"), ContextTooLongError),
        (anthropic_error(400, "invalid_request_error", "messages.0: bad"), ProviderError),
        (anthropic_error(404, "not_found_error", "model: claude-test"), ProviderError),
    ],
)
def test_retry_never_retries_auth_context_and_bad_requests(server: ProviderServer, action: Any, error: type) -> None:
    server.script(action, anthropic_stream(["never"]))
    events: list[ModelEvent] = []
    with pytest.raises(error):
        Retry(claude(server), attempts=5, backoff=0).respond(req(), None, events.append)
    assert events == [] and len(server.posts) == 1


def test_retry_async(server: ProviderServer) -> None:
    server.script(sse(anthropic_events(["Hel", "lo"]), drop_after=5), anthropic_stream(["Hello"]))
    texts: list[str] = []
    events: list[tuple[ModelEvent, int]] = []

    async def main() -> tuple[Reply, int]:
        model = Retry(claude(server), backoff=0)
        reply = await model.arespond(req(), texts.append, lambda e: events.append((e, threading.get_ident())))
        return reply, threading.get_ident()

    reply, loop_thread = asyncio.run(main())
    assert reply.text == "Hello"
    assert texts == ["Hel", "lo", "Hello"]
    assert [(e.kind, ident) for e, ident in events] == [("retry", loop_thread)]


def test_retry_backoff_doubles(monkeypatch: pytest.MonkeyPatch) -> None:
    import alpineagents.models.wrappers as wrappers

    slept: list[float] = []
    monkeypatch.setattr(wrappers.time, "sleep", slept.append)
    inner = Scripted("m", [provider_error(), provider_error(), provider_error(503), "ok"])
    events: list[ModelEvent] = []
    assert Retry(inner, attempts=4, backoff=0.5).respond(req(), None, events.append).text == "ok"
    assert slept == [0.5, 1.0, 2.0]
    assert [e.data["delay"] for e in events] == [0.5, 1.0, 2.0]
    assert Retry(inner, backoff=100)._delay(5) == 60.0


def test_retry_callback_errors_propagate_without_retry() -> None:
    inner = Scripted("m", ["a", "b"])
    error = RuntimeError("reporter")

    def boom(_text: str) -> None:
        raise error

    with pytest.raises(RuntimeError) as info:
        Retry(inner, backoff=0).respond(req(), boom)
    assert info.value is error
    assert len(inner.requests) == 1


def test_retry_without_on_event_still_retries() -> None:
    inner = Scripted("m", [RateLimitError("busy"), "ok"])
    assert Retry(inner, backoff=0).respond(req()).text == "ok"


def test_retry_delegates_the_wrapper_contract() -> None:
    price = Price(input=1, output=2)
    inner = Anthropic(
        "claude-x", price=price, max_tokens=500, supports={"vision"}, temperature=0.5, timeout=7, retries=1
    )
    model = Retry(inner, attempts=2, backoff=0.25)
    settings = ("name", "provider", "supports", "price", "max_tokens", "temperature", "timeout", "retries")
    assert [getattr(model, setting) for setting in settings] == [
        "claude-x",
        "anthropic",
        frozenset({"vision"}),
        price,
        500,
        0.5,
        7,
        1,
    ]
    assert [getattr(Fallback(inner, Scripted("s", [])), setting) for setting in settings] == [
        getattr(inner, setting) for setting in settings
    ]
    assert model.context_window == 200_000
    assert model.model is inner
    request = req("x" * 300)
    assert model.count_tokens(request) == inner.count_tokens(request)
    assert model.mark_cache(request) is request
    assert repr(model) == "Retry(Anthropic('claude-x'), attempts=2, backoff=0.25)"
    scripted = Scripted("s", [])
    assert Retry(scripted).mark_cache(request).messages[-1].text == "marked by s"


def test_retry_compact_is_retried() -> None:
    inner = Scripted("m", [provider_error(502), "summary"])
    events: list[ModelEvent] = []
    reply = Retry(inner, backoff=0).compact(req(), "ids", events.append)
    assert reply.text == "summary"
    assert inner.requests[-1].messages[-1].text == COMPACT_PROMPT + "\n\nBe sure to keep: ids"
    assert len(events) == 1
    inner.outcomes = [provider_error(502), "async summary"]
    assert asyncio.run(Retry(inner, backoff=0).acompact(req())).text == "async summary"


def test_retry_argument_checks() -> None:
    with pytest.raises(TypeError, match="Retry's model must be a Model instance"):
        Retry("claude-x")  # type: ignore[arg-type]
    for attempts in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="attempts"):
            Retry(Scripted("m", []), attempts=attempts)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="backoff"):
        Retry(Scripted("m", []), backoff=-1)


# -- Fallback ----------------------------------------------------------------------------------------------------


def test_fallback_to_another_provider(server: ProviderServer) -> None:
    server.script(
        anthropic_error(529, "overloaded_error", "Overloaded"), openai_stream(["from gpt"], model="gpt-test-0601")
    )
    primary, backup = claude(server), gpt(server, price=Price(input=1, output=1))
    model = Fallback(primary, backup)
    events: list[ModelEvent] = []
    texts: list[str] = []
    reply = model.respond(req(), texts.append, events.append)
    assert reply.text == "from gpt" and texts == ["from gpt"]
    assert reply.model == "gpt-test-0601"
    assert reply.usage.cost is not None  # the answering model's price
    assert len(events) == 1
    assert events[0].kind == "fallback"
    assert events[0].message.startswith("claude-test failed (ProviderError: Anthropic API error: ")
    assert events[0].message.endswith("; switching to gpt-test")
    assert events[0].data["from"] == "claude-test" and events[0].data["to"] == "gpt-test"
    assert [p.path for p in server.posts] == ["/v1/messages", "/v1/chat/completions"]


def test_fallback_after_stream_dropped(server: ProviderServer) -> None:
    server.script(sse(anthropic_events(["Hel", "lo"]), drop_after=5), openai_stream(["Hi"]))
    events: list[ModelEvent] = []
    texts: list[str] = []
    reply = Fallback(claude(server), gpt(server)).respond(req(), texts.append, events.append)
    assert reply.text == "Hi"
    assert texts == ["Hel", "lo", "Hi"]
    assert events[0].data["streamed_chars"] == 5


def test_fallback_does_not_move_on_after_auth_or_context_errors(server: ProviderServer) -> None:
    server.script(anthropic_error(401, "authentication_error", "bad key"))
    with pytest.raises(AuthError):
        Fallback(claude(server), gpt(server)).respond(req())
    server.script(anthropic_error(400, "invalid_request_error", "prompt is too long"))
    with pytest.raises(ContextTooLongError):
        Fallback(claude(server), gpt(server)).respond(req())
    assert len(server.posts) == 2


def test_fallback_last_error_raised(server: ProviderServer) -> None:
    server.script(anthropic_error(500, "api_error", "down"), openai_error(503, "also down", kind="server_error"))
    events: list[ModelEvent] = []
    with pytest.raises(ProviderError, match="also down"):
        Fallback(claude(server), gpt(server)).respond(req(), None, events.append)
    assert len(events) == 1


def test_fallback_async(server: ProviderServer) -> None:
    server.script(anthropic_error(529, "overloaded_error", "Overloaded"), openai_stream(["async gpt"]))
    events: list[ModelEvent] = []
    reply = asyncio.run(Fallback(claude(server), gpt(server)).arespond(req(), None, events.append))
    assert reply.text == "async gpt" and [e.kind for e in events] == ["fallback"]


def test_fallback_chain_and_mark_cache_per_model() -> None:
    a = Scripted("a", [provider_error(500)], window=3000)
    b = Scripted("b", [RateLimitError("busy")], window=1000)
    c = Scripted("c", ["from c"], window=2000, provider="other")
    model = Fallback(a, b, c)
    events: list[ModelEvent] = []
    reply = model.respond(req(), None, events.append)
    assert reply.text == "from c" and reply.model == "c"
    assert [(e.data["from"], e.data["to"]) for e in events] == [("a", "b"), ("b", "c")]
    assert [m.requests[-1].messages[-1].text for m in (a, b, c)] == ["marked by a", "marked by b", "marked by c"]
    assert model.context_window == 1000
    assert (model.name, model.provider) == ("a", "scripted")
    assert model.mark_cache(req()) == req()
    assert repr(model) == "Fallback(Scripted('a'), Scripted('b'), Scripted('c'))"
    assert model.models == (a, b, c)


def test_fallback_compact() -> None:
    a = Scripted("a", [provider_error()])
    b = Scripted("b", ["summary"])
    events: list[ModelEvent] = []
    assert Fallback(a, b).compact(req(), None, events.append).text == "summary"
    assert b.requests[-1].messages[-1].text == COMPACT_PROMPT
    a.outcomes, b.outcomes = [provider_error()], ["async summary"]
    assert asyncio.run(Fallback(a, b).acompact(req())).text == "async summary"


def test_fallback_argument_checks() -> None:
    with pytest.raises(ValueError, match="nothing to fall back to"):
        Fallback(Scripted("a", []))
    with pytest.raises(TypeError, match="Model instance"):
        Fallback(Scripted("a", []), "gpt-5")  # type: ignore[arg-type]


# -- what is retried -----------------------------------------------------------------------------------------------


def test_is_retryable() -> None:
    assert is_retryable(ProviderError("stream ended early"))
    assert is_retryable(RateLimitError("busy"))
    for status in (408, 409, 429, 500, 503, 529, 200):
        assert is_retryable(provider_error(status)), status
    for status in (400, 404, 413, 422):
        assert not is_retryable(provider_error(status)), status
    assert not is_retryable(AuthError("no"))
    assert not is_retryable(ContextTooLongError("big"))
    built = ProviderError("could not build")
    built.__cause__ = TypeError("x")
    assert not is_retryable(built)
    dropped = ProviderError("dropped")
    dropped.__cause__ = httpx2.ReadError("reset")
    assert is_retryable(dropped)
    assert not is_retryable(RuntimeError("x"))
    assert not is_retryable(ValueError("x"))


def test_wrapped_models_nest() -> None:
    a = Scripted("a", [provider_error(), provider_error()])
    b = Scripted("b", ["ok"])
    events: list[ModelEvent] = []
    reply = Retry(Fallback(Retry(a, attempts=2, backoff=0), b), backoff=0).respond(req(), None, events.append)
    assert reply.text == "ok"
    assert [e.kind for e in events] == ["retry", "fallback"]
    assert isinstance(reply.message.content[0], TextBlock)


class StreamsPieces(Scripted):
    """A scripted Model that streams thinking and a call's arguments (to an `OnStream`) before its text."""

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        if isinstance(on_text, OnStream):
            on_text.thinking("Adding.")
            on_text.tool_args("call_1", "add", '{"a": 1}')
            on_text("Hel")
        return super().respond(request, on_text, on_event)


@pytest.mark.parametrize("run", ["sync", "async"])
@pytest.mark.parametrize("wrapper", ["retry", "fallback"])
def test_an_on_stream_passes_through_a_wrapper_whole_and_only_its_text_is_counted(wrapper: str, run: str) -> None:
    first = StreamsPieces("a", [provider_error(502), "lo"])
    model = Retry(first, attempts=2, backoff=0) if wrapper == "retry" else Fallback(first, StreamsPieces("b", ["lo"]))
    pieces = Pieces()
    events: list[ModelEvent] = []
    if run == "sync":
        reply = model.respond(req(), pieces, events.append)
    else:
        loop_thread: list[int] = []

        async def main() -> Reply:
            loop_thread.append(threading.get_ident())
            return await model.arespond(req(), pieces, events.append)

        reply = asyncio.run(main())
        assert pieces.threads == set(loop_thread), "the default arespond relays every piece to the event loop"
    attempt = [("thinking", "Adding."), ("args", "call_1", "add", '{"a": 1}'), ("text", "Hel")]
    assert pieces.got == [*attempt, *attempt, ("text", "lo")]
    assert reply.text == "lo"
    assert [event.data["streamed_chars"] for event in events] == [3], "only the failed attempt's text is counted"


# -- through an Agent: restarts are recorded in the history ----------------------------------------------------------


def test_agent_records_retry_and_fallback_events(server: ProviderServer) -> None:
    from alpineagents.agent import Agent
    from alpineagents.state import State

    server.script(
        sse(anthropic_events(["Hel", "lo"]), drop_after=5),
        anthropic_error(529, "overloaded_error", "Overloaded"),
        openai_stream(["All good"]),
    )
    model = Fallback(Retry(claude(server), attempts=2, backoff=0), gpt(server))
    agent = Agent(model, reporter=None)
    state = State(messages=[Message.user("hi")])
    agent.run(state)
    events = [entry for entry in state.history if entry.kind == "model_event"]
    assert [e.content.kind for e in events] == ["retry", "fallback"]
    assert "stream failed mid-reply" in events[0].content.message
    assert state.messages[-1].text == "All good"
    assert state.usage.requests == 1  # tokens of the failed attempts are not counted
    kinds = [entry.kind for entry in state.history]
    assert kinds.index("model_request") < kinds.index("model_event") < kinds.index("model_reply")


def test_agent_async_records_retry_event(server: ProviderServer) -> None:
    from alpineagents.agent import Agent
    from alpineagents.state import State

    server.script(anthropic_error(500, "api_error", "down"), anthropic_stream(["ok"]))
    agent = Agent(Retry(claude(server), backoff=0), reporter=None)
    state = State(messages=[Message.user("hi")])
    asyncio.run(agent.arun(state))
    assert [e.content.kind for e in state.history if e.kind == "model_event"] == ["retry"]
    assert state.messages[-1].text == "ok"
