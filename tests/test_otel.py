"""Tracing with OpenTelemetry (`alpineagents.otel`): spans, metrics, content capture, credentials, OTLP export.

Spans are checked through the real SDK: a `TracerProvider` of each test with an `InMemorySpanExporter` (never the
global provider), metrics through an `InMemoryMetricReader`.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from alpineagents import _observe, otel
from alpineagents.agent import Agent
from alpineagents.errors import ToolError
from alpineagents.models import Anthropic, OpenAICompatible, Retry
from alpineagents.models.openai_responses import OpenAIResponses
from alpineagents.otel._tracing import NOT_CAPTURED
from alpineagents.permissions import DecideByHuman, DenyByName
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.store import FileStore
from alpineagents.terminal import Terminal
from alpineagents.testing import FakeHuman, FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message, Price
from servers.provider import ProviderServer, anthropic_stream, echo_key, openai_stream, status
from servers.responses import responses_stream

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-ant-test-0123456789abcdef-secret"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Say it loudly."""
    return text.upper()


@tool
def broken(x: int) -> str:
    """A tool whose failure the model sees."""
    raise ToolError("x is out of range")


@tool
def crashes(x: int) -> str:
    """A tool that raises."""
    raise ValueError("it crashed")


class Telemetry:
    """A tracer provider and a meter provider of one test, with the spans and metrics they got."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name == name]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        found.extend(item.data.data_points)
        return found


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    got = Telemetry()
    otel.instrument(got.tracer_provider, got.meter_provider)
    try:
        yield got
    finally:
        otel.uninstrument()
        got.tracer_provider.shutdown()
        got.meter_provider.shutdown()


def tree(spans: list[ReadableSpan]) -> list[tuple[str, str, list[Any]]]:
    """The spans as a tree of (name, kind, children), children in the order they started."""
    ids = {span.context.span_id for span in spans}
    children: dict[int | None, list[ReadableSpan]] = defaultdict(list)
    for span in sorted(spans, key=lambda span: span.start_time or 0):
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in ids else None
        children[parent].append(span)

    def build(parent: int | None) -> list[tuple[str, str, list[Any]]]:
        return [(span.name, span.kind.name, build(span.context.span_id)) for span in children[parent]]

    return build(None)


def agents(**settings: Any) -> Agent:
    """The main Agent: two tools and a subagent, called in one turn, then a text answer."""
    helper = Agent(
        FakeModel(["found it"], name="helper-model"), name="helper", description="Looks things up", reporter=None
    )
    calls = [tool_call("add", a=1, b=2), tool_call("shout", text="hi"), tool_call("helper", prompt="Look it up")]
    model = FakeModel([calls, "All done"], name="main-model")
    return Agent(model, tools=[add, shout, helper], system="Be brief", name="main", reporter=None, **settings)


EXPECTED_TREE = [
    (
        "invoke_agent main",
        "INTERNAL",
        [
            ("chat main-model", "CLIENT", []),
            ("execute_tool add", "INTERNAL", []),
            ("execute_tool shout", "INTERNAL", []),
            (
                "execute_tool helper",
                "INTERNAL",
                [("invoke_agent helper", "INTERNAL", [("chat helper-model", "CLIENT", [])])],
            ),
            ("chat main-model", "CLIENT", []),
        ],
    )
]


def test_a_run_with_two_tools_and_a_subagent_gives_the_expected_tree(telemetry: Telemetry) -> None:
    agent = agents()
    assert agent.run("Go") == "All done"
    spans = telemetry.spans()
    assert tree(spans) == EXPECTED_TREE
    assert len({span.context.trace_id for span in spans}) == 1

    run = telemetry.named("invoke_agent main")[0]
    state_id = run.attributes["gen_ai.conversation.id"]
    assert dict(run.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.conversation.id": state_id,
        "gen_ai.provider.name": "fake",
        "gen_ai.request.model": "main-model",
        "gen_ai.agent.name": "main",
        "gen_ai.usage.input_tokens": run.attributes["gen_ai.usage.input_tokens"],
        "gen_ai.usage.output_tokens": run.attributes["gen_ai.usage.output_tokens"],
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.cache_creation.input_tokens": 0,
        "alpineagents.run.stop_reason": "until",
        "alpineagents.run.finished": False,
    }
    first, second = telemetry.named("chat main-model")
    chats = [span for span in spans if span.name.startswith("chat")]  # the run's usage counts its subagents'
    assert run.attributes["gen_ai.usage.input_tokens"] == sum(
        chat.attributes["gen_ai.usage.input_tokens"] for chat in chats
    )
    assert first.kind is SpanKind.CLIENT
    assert dict(first.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "fake",
        "gen_ai.request.model": "main-model",
        "gen_ai.conversation.id": state_id,
        "gen_ai.usage.input_tokens": first.attributes["gen_ai.usage.input_tokens"],
        "gen_ai.usage.output_tokens": first.attributes["gen_ai.usage.output_tokens"],
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.cache_creation.input_tokens": 0,
        "gen_ai.response.finish_reasons": ("tool_use",),
        "gen_ai.response.model": "main-model",
    }
    assert second.attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert first.attributes["gen_ai.usage.input_tokens"] > 0

    tool_span = telemetry.named("execute_tool add")[0]
    call_id = tool_span.attributes["gen_ai.tool.call.id"]
    assert call_id.startswith("call_")
    assert dict(tool_span.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
        "gen_ai.conversation.id": state_id,
        "alpineagents.tool.outcome": "done",
        "alpineagents.tool.duration": tool_span.attributes["alpineagents.tool.duration"],
    }
    assert tool_span.status.status_code is StatusCode.UNSET

    child = telemetry.named("invoke_agent helper")[0]
    assert child.attributes["gen_ai.agent.name"] == "helper"
    assert child.attributes["gen_ai.agent.description"] == "Looks things up"
    assert child.attributes["gen_ai.conversation.id"] != state_id
    assert child.attributes["alpineagents.run.finished"] is False


def test_an_async_run_gives_the_same_tree_as_a_sync_run(telemetry: Telemetry) -> None:
    assert asyncio.run(agents().arun("Go")) == "All done"
    assert tree(telemetry.spans()) == EXPECTED_TREE


def test_async_tools_under_arun_are_children_of_their_run(telemetry: Telemetry) -> None:
    @tool
    async def wait(seconds: float) -> str:
        """Wait a bit."""
        await asyncio.sleep(seconds)
        return "waited"

    calls = [tool_call("wait", seconds=0.01), tool_call("add", a=1, b=1)]
    agent = Agent(FakeModel([calls, "ok"]), tools=[wait, add], reporter=None)
    asyncio.run(agent.arun("Go"))
    assert tree(telemetry.spans()) == [
        (
            "invoke_agent",
            "INTERNAL",
            [
                ("chat fake", "CLIENT", []),
                ("execute_tool wait", "INTERNAL", []),
                ("execute_tool add", "INTERNAL", []),
                ("chat fake", "CLIENT", []),
            ],
        )
    ]


def test_a_failing_model_gives_error_statuses(telemetry: Telemetry) -> None:
    agent = Agent(FakeModel([RuntimeError("the model broke")]), name="main", reporter=None)
    with pytest.raises(RuntimeError, match="the model broke"):
        agent.run("Go")
    assert tree(telemetry.spans()) == [("invoke_agent main", "INTERNAL", [("chat fake", "CLIENT", [])])]
    for span in telemetry.spans():
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == "RuntimeError"
        assert span.status.description == f"RuntimeError: {NOT_CAPTURED}"
    durations = telemetry.points("gen_ai.client.operation.duration")
    assert {point.attributes.get("error.type") for point in durations} == {"RuntimeError"}


def test_a_failed_request_caught_by_the_loop_ends_its_span_with_an_error(telemetry: Telemetry) -> None:
    def patient(agent: Agent, state: Any) -> str:
        try:
            agent.think(state)
        except RuntimeError:
            pass
        agent.think(state)
        return state.messages[-1].text

    agent = Agent(FakeModel([RuntimeError("once"), "fine"]), loop=patient, reporter=None)
    assert agent.run("Go") == "fine"
    failed, worked = telemetry.named("chat fake")
    assert failed.status.status_code is StatusCode.ERROR and failed.attributes["error.type"] == "RuntimeError"
    assert worked.status.status_code is StatusCode.UNSET
    assert telemetry.named("invoke_agent")[0].status.status_code is StatusCode.UNSET


def test_failing_tools_give_error_statuses(telemetry: Telemetry) -> None:
    agent = Agent(FakeModel([tool_call("broken", x=1), "ok"]), tools=[broken, crashes], reporter=None)
    agent.run("Go")
    span = telemetry.named("execute_tool broken")[0]
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "ToolError"
    assert span.attributes["alpineagents.tool.outcome"] == "error"

    agent = Agent(FakeModel([tool_call("crashes", x=1), "ok"]), tools=[broken, crashes], reporter=None)
    with pytest.raises(ValueError, match="it crashed"):
        agent.run("Go")
    span = telemetry.named("execute_tool crashes")[0]
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "ValueError"
    assert span.attributes["alpineagents.tool.outcome"] == "aborted"
    run = [span for span in telemetry.named("invoke_agent") if span.status.status_code is StatusCode.ERROR]
    assert len(run) == 1 and run[0].attributes["error.type"] == "ValueError"

    agent = Agent(FakeModel([tool_call("nothing"), "ok"]), tools=[add], reporter=None)
    agent.run("Go")
    span = telemetry.named("execute_tool nothing")[0]
    assert span.attributes["alpineagents.tool.outcome"] == "input_error"
    assert span.status.status_code is StatusCode.ERROR


def test_content_is_absent_by_default(telemetry: Telemetry) -> None:
    agents().run("Go, secretly")
    for span in telemetry.spans():
        assert not [key for key in span.attributes if "messages" in key or "arguments" in key or "result" in key]
        assert "gen_ai.system_instructions" not in span.attributes
        assert "secretly" not in repr(dict(span.attributes))


def test_content_is_present_with_the_opt_in(telemetry: Telemetry) -> None:
    otel.instrument(telemetry.tracer_provider, telemetry.meter_provider, capture_content=True)
    agents().run("Go, openly")
    first = telemetry.named("chat main-model")[0]
    assert first.attributes["gen_ai.input.messages"] == (
        '[{"role": "user", "parts": [{"type": "text", "content": "Go, openly"}]}]'
    )
    assert first.attributes["gen_ai.system_instructions"] == '[{"type": "text", "content": "Be brief"}]'
    assert '"type": "tool_call"' in first.attributes["gen_ai.output.messages"]
    assert '"finish_reason": "tool_use"' in first.attributes["gen_ai.output.messages"]
    span = telemetry.named("execute_tool add")[0]
    assert span.attributes["gen_ai.tool.call.arguments"] == '{"a": 1, "b": 2}'
    assert span.attributes["gen_ai.tool.call.result"] == "3"
    second = telemetry.named("chat main-model")[1]
    assert '"type": "tool_call_response"' in second.attributes["gen_ai.input.messages"]


def test_the_environment_variable_turns_content_on(telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(otel.CAPTURE_CONTENT_ENV, "True")
    otel.instrument(telemetry.tracer_provider, telemetry.meter_provider)
    agents().run("Go")
    assert "gen_ai.input.messages" in telemetry.named("chat main-model")[0].attributes


def _everything(spans: list[ReadableSpan]) -> str:
    """Every text a span holds: name, attributes, events, links, status."""
    parts = []
    for span in spans:
        parts += [span.name, repr(dict(span.attributes)), span.status.description or ""]
        parts += [f"{event.name} {dict(event.attributes or {})!r}" for event in span.events]
        parts += [repr(dict(link.attributes or {})) for link in span.links]
    return "\n".join(parts)


@tool
def quotes(secret: str) -> str:
    """A tool whose error quotes its arguments."""
    raise ToolError(f"no such file: {secret}")


@tool
def crashes_quoting(secret: str) -> str:
    """A tool whose exception quotes its arguments."""
    raise ValueError(f"cannot open {secret}")


def test_no_error_text_reaches_a_span_with_content_capture_off(telemetry: Telemetry, server: ProviderServer) -> None:
    secret = "the-patients-name-Jane-Roe"
    tools = [quotes, crashes_quoting]
    agent = Agent(FakeModel([tool_call("quotes", secret=secret), "ok"]), tools=tools, name="main", reporter=None)
    agent.run("Go")
    agent = Agent(FakeModel([tool_call("crashes_quoting", secret=secret)]), tools=tools, name="main", reporter=None)
    with pytest.raises(ValueError, match=secret):
        agent.run("Go")
    prompt = f"summarise the file of {secret}"
    echo = status(400, {"type": "error", "error": {"type": "invalid_request_error", "message": f"bad: {prompt}"}})
    server.script(echo)
    model = Anthropic("claude-x", base_url=server.url, api_key=KEY, max_tokens=100, retries=0)
    with pytest.raises(Exception, match=secret):
        Agent(model, name="main", reporter=None).run(prompt)
    spans = telemetry.spans()
    failed = [span for span in spans if span.status.status_code is StatusCode.ERROR]
    assert {span.name for span in failed} == {
        "execute_tool quotes",
        "execute_tool crashes_quoting",
        "invoke_agent main",
        "chat claude-x",
    }
    assert secret not in _everything(spans)
    described = {span.name: span.status.description for span in failed if span.name != "invoke_agent main"}
    assert described == {
        "execute_tool quotes": "error",  # the outcome: the ToolError is the result the model reads
        "execute_tool crashes_quoting": f"ValueError: {NOT_CAPTURED}",
        "chat claude-x": f"ProviderError: {NOT_CAPTURED}",
    }
    assert {span.attributes["error.type"] for span in failed} == {"ToolError", "ValueError", "ProviderError"}

    telemetry.exporter.clear()
    otel.instrument(telemetry.tracer_provider, telemetry.meter_provider, capture_content=True)
    server.script(echo)
    with pytest.raises(Exception, match=secret):
        Agent(model, name="main", reporter=None).run(prompt)
    chat = telemetry.named("chat claude-x")[0]
    assert secret in (chat.status.description or ""), "with capture on the error's text is recorded"


def test_no_api_key_reaches_a_span(telemetry: Telemetry, server: ProviderServer) -> None:
    otel.instrument(telemetry.tracer_provider, telemetry.meter_provider, capture_content=True)
    model = Anthropic("claude-x", base_url=server.url, api_key=KEY, max_tokens=100, temperature=0.5)
    server.script(anthropic_stream(["Hello"]))
    agent = Agent(model, system="Be brief", name="main", reporter=None)
    assert agent.run("Hi") == "Hello"
    chat = telemetry.named("chat claude-x")[0]
    assert chat.attributes["gen_ai.provider.name"] == "anthropic"
    assert chat.attributes["gen_ai.request.max_tokens"] == 100
    assert chat.attributes["gen_ai.request.temperature"] == 0.5
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert chat.attributes["gen_ai.response.id"] == "msg_1"

    server.script(echo_key(401))
    with pytest.raises(Exception, match="REDACTED"):
        agent.run("Hi again")
    failed = telemetry.named("chat claude-x")[1]
    assert failed.status.status_code is StatusCode.ERROR
    assert "REDACTED" in (failed.status.description or "")
    assert KEY in repr(server.requests[-1].headers)  # the key was sent (and echoed back in the error body)
    assert KEY not in _everything(telemetry.spans())


def test_the_openai_adapters_give_their_response_id(telemetry: Telemetry, server: ProviderServer) -> None:
    server.script(openai_stream(["Hello"]))
    Agent(OpenAICompatible("gpt-x", base_url=server.openai_url, api_key=KEY), reporter=None).run("Hi")
    assert telemetry.named("chat gpt-x")[0].attributes["gen_ai.response.id"] == "chatcmpl-1"
    server.script(responses_stream())
    Agent(OpenAIResponses("gpt-y", base_url=server.openai_url, api_key=KEY), reporter=None).run("Hi")
    chat = telemetry.named("chat gpt-y")[0]
    assert chat.attributes["gen_ai.response.id"] == "resp_1"
    assert chat.attributes["gen_ai.response.model"] == "gpt-test-2026"
    assert KEY not in _everything(telemetry.spans())


def test_retries_are_events_of_the_request_span(telemetry: Telemetry, server: ProviderServer) -> None:
    model = Retry(Anthropic("claude-x", base_url=server.url, api_key=KEY, retries=0), attempts=3, backoff=0)
    server.script(status(529), anthropic_stream(["Hello"]))
    Agent(model, reporter=None).run("Hi")
    chat = telemetry.named("chat claude-x")[0]
    assert [event.name for event in chat.events] == ["alpineagents.model.retry"]
    retry = chat.events[0].attributes or {}
    assert retry["alpineagents.event.error"] == "ProviderError" and retry["alpineagents.event.attempt"] == 2
    assert "alpineagents.event.message" not in retry, "the message quotes the error's text: content"
    otel.instrument(telemetry.tracer_provider, telemetry.meter_provider, capture_content=True)
    server.script(status(529), anthropic_stream(["Hello"]))
    Agent(model, reporter=None).run("Hi")
    retry = telemetry.named("chat claude-x")[1].events[0].attributes or {}
    assert "failed (ProviderError: " in str(retry["alpineagents.event.message"])
    assert KEY not in _everything(telemetry.spans())


def test_permission_decisions_and_human_answers_are_events(telemetry: Telemetry) -> None:
    otel.instrument(telemetry.tracer_provider, telemetry.meter_provider, capture_content=True)
    calls = [tool_call("add", a=1, b=2), tool_call("shout", text="x")]
    agent = Agent(
        FakeModel([calls, "ok"]),
        tools=[add, shout],
        permissions=[DenyByName(["shout"]), DecideByHuman()],
        human=FakeHuman(["yes"]),
        reporter=None,
    )
    agent.run("Go")
    allowed = telemetry.named("execute_tool add")[0]
    assert [event.name for event in allowed.events] == ["alpineagents.permission"]
    assert allowed.events[0].attributes["alpineagents.permission.verdict"] == "allowed"
    assert "DecideByHuman" in allowed.events[0].attributes["alpineagents.permission.decided_by"]
    denied = telemetry.named("execute_tool shout")[0]
    assert denied.attributes["alpineagents.tool.outcome"] == "denied"
    assert denied.status.status_code is StatusCode.UNSET
    assert denied.events[0].attributes["alpineagents.permission.verdict"] == "denied"
    assert "DenyByName" in denied.events[0].attributes["alpineagents.permission.decided_by"]
    assert denied.events[0].attributes["alpineagents.permission.reason"] == "shout is not allowed."
    assert denied.events[0].attributes["alpineagents.permission.stop"] is False
    assert denied.parent is not None
    answers = [event for span in telemetry.spans() for event in span.events if event.name.endswith("human.answer")]
    assert len(answers) == 1 and answers[0].attributes["alpineagents.human.answer"] == "yes"


def test_a_human_answer_inside_a_tool_is_an_event_of_its_span(telemetry: Telemetry) -> None:
    @tool
    def confirm(question: str, state: State) -> str:
        """Ask the person."""
        return str(confirmer.ask_human(state, question))

    confirmer = Agent(
        FakeModel([tool_call("confirm", question="Sure?"), "ok"]),
        tools=[confirm],
        human=FakeHuman(["yes"]),
        reporter=None,
    )
    confirmer.run("Go")
    span = telemetry.named("execute_tool confirm")[0]
    assert [event.name for event in span.events] == ["alpineagents.human.answer"]
    assert dict(span.events[0].attributes or {}) == {}  # no content by default


def test_metrics_count_tokens_durations_and_cost(telemetry: Telemetry) -> None:
    otel.instrument(telemetry.tracer_provider, telemetry.meter_provider, currency="EUR")
    model = FakeModel(["Hello"], name="priced", price=Price(input=3, output=15))
    Agent(model, reporter=None).run("Go")
    tokens = telemetry.points("gen_ai.client.token.usage")
    by_type = {point.attributes["gen_ai.token.type"]: point for point in tokens}
    assert set(by_type) == {"input", "output"}
    chat = telemetry.named("chat priced")[0]
    assert by_type["input"].sum == chat.attributes["gen_ai.usage.input_tokens"]
    assert by_type["output"].sum == chat.attributes["gen_ai.usage.output_tokens"]
    assert by_type["input"].attributes["gen_ai.request.model"] == "priced"
    assert by_type["input"].attributes["gen_ai.operation.name"] == "chat"
    durations = telemetry.points("gen_ai.client.operation.duration")
    assert {point.attributes["gen_ai.operation.name"] for point in durations} == {"chat", "invoke_agent"}
    cost = telemetry.points("alpineagents.client.cost")
    assert len(cost) == 1 and cost[0].value == pytest.approx(chat.attributes["alpineagents.usage.cost"])
    assert cost[0].value > 0
    data = telemetry.reader.get_metrics_data()
    assert data is not None
    units = {
        metric.name: metric.unit
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    assert units["alpineagents.client.cost"] == "EUR"
    assert units["gen_ai.client.operation.duration"] == "s"


class Recording(Reporter):
    def __init__(self) -> None:
        self.events: list[str] = []

    def on_run_start(self, state: Any) -> None:
        self.events.append("run_start")

    def on_think_start(self, state: Any) -> None:
        self.events.append("think_start")

    def on_think_end(self, state: Any, reply: Any) -> None:
        self.events.append("think_end")

    def on_tool_start(self, state: Any, call: Any) -> None:
        self.events.append(f"tool_start {call.name}")

    def on_tool_end(self, state: Any, call: Any, result: Any, outcome: Any) -> None:
        self.events.append(f"tool_end {call.name} {outcome.kind.value}")

    def on_run_end(self, state: Any, error: Any) -> None:
        self.events.append("run_end")


def _reported() -> list[str]:
    reporter = Recording()
    agent = Agent(FakeModel([[tool_call("add", a=1, b=2)], "ok"]), tools=[add], reporter=reporter)
    agent.run("Go")
    return reporter.events


def test_the_agents_reporter_gets_every_event_with_tracing_on_and_off() -> None:
    assert _observe.OBSERVER is None
    without = _reported()
    got = Telemetry()
    otel.instrument(got.tracer_provider, got.meter_provider)
    try:
        with_tracing = _reported()
    finally:
        otel.uninstrument()
    assert with_tracing == without
    assert len(got.spans()) == 4
    assert _reported() == without
    assert len(got.spans()) == 4  # off again: no new span


def test_one_agent_opts_in_or_out() -> None:
    got = Telemetry()
    traced = Agent(FakeModel(["a"]), name="traced", reporter=None)
    other = Agent(FakeModel(["b"]), name="other", reporter=None)
    otel.instrument(got.tracer_provider, got.meter_provider, agent=traced)
    try:
        assert otel.is_instrumented(traced) and not otel.is_instrumented(other) and not otel.is_instrumented()
        traced.run("Go")
        other.run("Go")
        assert {span.name for span in got.spans()} == {"invoke_agent traced", "chat fake"}
    finally:
        otel.uninstrument()
    assert _observe.OBSERVER is None

    got = Telemetry()
    otel.instrument(got.tracer_provider, got.meter_provider)
    try:
        otel.uninstrument(agent=other)
        assert otel.is_instrumented() and not otel.is_instrumented(other)
        Agent(FakeModel(["a"]), name="traced", reporter=None).run("Go")
        other.copy(model=FakeModel(["b"])).run("Go")  # a copy follows the process-wide setting
        Agent(FakeModel(["c"]), name="skipped", reporter=None)
        assert {span.name for span in got.spans() if span.name.startswith("invoke")} == {
            "invoke_agent traced",
            "invoke_agent other",
        }
    finally:
        otel.uninstrument()


def test_a_subagent_inside_a_traced_run_is_traced_unless_it_opts_out() -> None:
    got = Telemetry()
    agent = agents()
    otel.instrument(got.tracer_provider, got.meter_provider, agent=agent)
    try:
        agent.run("Go")
        assert tree(got.spans()) == EXPECTED_TREE
    finally:
        otel.uninstrument()


def test_a_resumed_run_links_to_the_run_it_continues(telemetry: Telemetry, tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    agent = Agent(FakeModel(["one", "two", "three"]), store=store, reporter=None)
    agent.run("Go")
    first = telemetry.named("invoke_agent")[0]
    state_id = first.attributes["gen_ai.conversation.id"]
    assert list(first.links) == []

    state = store.load(state_id)
    state.add_message(Message.user("More"))
    agent.run(state)
    second = telemetry.named("invoke_agent")[1]
    (link,) = second.links
    assert link.context == first.context
    assert link.attributes == {"gen_ai.conversation.id": state_id}

    # Tracing turned off and on again knows nothing of the first runs' spans: the link names the State.
    otel.uninstrument()
    otel.instrument(telemetry.tracer_provider, telemetry.meter_provider)
    state = store.load(state_id)
    state.add_message(Message.user("Again"))
    agent.run(state)
    third = telemetry.named("invoke_agent")[2]
    (link,) = third.links
    assert not link.context.is_valid
    assert link.attributes == {"gen_ai.conversation.id": state_id, "alpineagents.link": "continues"}


class _Receiver(BaseHTTPRequestHandler):
    """Takes OTLP/HTTP trace exports and keeps the decoded requests."""

    received: list[ExportTraceServiceRequest] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server name
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).received.append(request)
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_spans_reach_an_otlp_http_receiver() -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    _Receiver.received = []
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=receiver.serve_forever, daemon=True)
    thread.start()
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{receiver.server_address[1]}/v1/traces", timeout=10)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    otel.instrument(provider)
    try:
        agents().run("Go")
        assert provider.force_flush(10_000)
        deadline = time.monotonic() + 10
        while sum(_count(request) for request in _Receiver.received) < 7 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        otel.uninstrument()
        provider.shutdown()
        receiver.shutdown()
        receiver.server_close()
        thread.join(5)
    spans = [
        span
        for request in _Receiver.received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    names = sorted(span.name for span in spans)
    assert names == sorted(
        [
            "invoke_agent main",
            "chat main-model",
            "chat main-model",
            "execute_tool add",
            "execute_tool shout",
            "execute_tool helper",
            "invoke_agent helper",
            "chat helper-model",
        ]
    )
    scopes = {
        scope.scope.name for request in _Receiver.received for r in request.resource_spans for scope in r.scope_spans
    }
    assert scopes == {"alpineagents"}
    by_id = {span.span_id: span for span in spans}
    child = next(span for span in spans if span.name == "invoke_agent helper")
    assert by_id[child.parent_span_id].name == "execute_tool helper"
    chat = next(span for span in spans if span.name == "chat helper-model")
    attributes = {item.key: item.value for item in chat.attributes}
    assert attributes["gen_ai.request.model"].string_value == "helper-model"
    assert attributes["gen_ai.usage.input_tokens"].int_value > 0
    assert list(attributes["gen_ai.response.finish_reasons"].array_value.values)[0].string_value == "end_turn"


def _count(request: ExportTraceServiceRequest) -> int:
    return sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)


def test_tracing_off_makes_no_span_objects() -> None:
    assert _observe.OBSERVER is None
    agent = agents()
    context_reporters: list[Any] = []

    class Watch(Reporter):
        def on_run_start(self, state: Any) -> None:
            context_reporters.append(state._run_context.reporter)

    agent.copy(reporter=Watch()).run("Go")
    assert [type(reporter).__name__ for reporter in context_reporters] == ["Watch"]


def _terminal_lines() -> str:
    out = io.StringIO()
    agent = Agent(FakeModel([tool_call("add", a=1, b=2), "done"]), tools=[add], reporter=Terminal(output=out))
    agent.run("Go")
    return out.getvalue()


def test_the_terminal_keeps_printing_while_tracing(telemetry: Telemetry) -> None:
    traced = _terminal_lines()
    otel.uninstrument()
    assert traced == _terminal_lines()
    assert "tool add(a=1, b=2)" in traced
    assert len(telemetry.named("execute_tool add")) == 1


def test_a_cancelled_run_ends_its_spans_as_interrupted(telemetry: Telemetry) -> None:
    @tool
    async def slow(seconds: float) -> str:
        """Take a long time."""
        await asyncio.sleep(seconds)
        return "late"

    agent = Agent(FakeModel([tool_call("slow", seconds=30), "never"]), tools=[slow], reporter=None)

    async def main() -> None:
        await asyncio.wait_for(agent.arun("Go"), 0.3)

    with pytest.raises(TimeoutError):
        asyncio.run(main())
    span = telemetry.named("execute_tool slow")[0]
    assert span.attributes["alpineagents.tool.outcome"] == "interrupted"
    assert span.attributes["error.type"] == "CancelledError"
    run = telemetry.named("invoke_agent")[0]
    assert run.status.status_code is StatusCode.ERROR and run.attributes["error.type"] == "CancelledError"
    assert span.parent is not None and span.parent.span_id == run.context.span_id


def test_runs_in_several_threads_each_get_their_own_tree(telemetry: Telemetry) -> None:
    errors: list[BaseException] = []

    def one(index: int) -> None:
        try:
            agent = Agent(
                FakeModel([tool_call("add", a=index, b=1), "ok"]), tools=[add], name=f"a{index}", reporter=None
            )
            agent.run("Go")
        except BaseException as error:  # noqa: BLE001 - checked below
            errors.append(error)

    threads = [threading.Thread(target=one, args=(index,)) for index in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    trees = tree(telemetry.spans())
    assert sorted(trees) == sorted(
        (
            f"invoke_agent a{index}",
            "INTERNAL",
            [("chat fake", "CLIENT", []), ("execute_tool add", "INTERNAL", []), ("chat fake", "CLIENT", [])],
        )
        for index in range(6)
    )
    assert len({span.context.trace_id for span in telemetry.spans()}) == 6
    assert _observe.OBSERVER is not None and otel.is_instrumented()


def test_spans_made_inside_a_tool_or_a_request_are_their_children(telemetry: Telemetry) -> None:
    tracer = telemetry.tracer_provider.get_tracer("user")

    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        with tracer.start_as_current_span("GET"):
            return "page"

    @tool
    async def afetch(url: str) -> str:
        """Fetch a page, async."""
        with tracer.start_as_current_span("async GET"):
            return "page"

    def reply(request: Any) -> Any:
        with tracer.start_as_current_span("POST"):
            return [tool_call("fetch", url="a"), tool_call("afetch", url="b")]

    for run in ("run", "arun"):
        telemetry.exporter.clear()
        agent = Agent(FakeModel([reply, "ok"]), tools=[fetch, afetch], reporter=None)
        if run == "run":
            agent.run("Go")
        else:
            asyncio.run(agent.arun("Go"))
        assert tree(telemetry.spans()) == [
            (
                "invoke_agent",
                "INTERNAL",
                [
                    ("chat fake", "CLIENT", [("POST", "INTERNAL", [])]),
                    ("execute_tool fetch", "INTERNAL", [("GET", "INTERNAL", [])]),
                    ("execute_tool afetch", "INTERNAL", [("async GET", "INTERNAL", [])]),
                    ("chat fake", "CLIENT", []),
                ],
            )
        ], run
    with tracer.start_as_current_span("outside") as outside:
        pass
    assert outside.parent is None  # nothing stayed current on this thread


def test_a_run_resumed_in_another_process_links_by_the_state_id(telemetry: Telemetry, tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    Agent(FakeModel(["first"]), store=store, reporter=None).run("Go")
    state_id = telemetry.named("invoke_agent")[0].attributes["gen_ai.conversation.id"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "helpers" / "otel_child.py"), str(tmp_path), state_id],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {
        "conversation": state_id,
        "links": [
            {"valid": False, "attributes": {"gen_ai.conversation.id": state_id, "alpineagents.link": "continues"}}
        ],
    }


def test_instrumenting_again_during_a_run_keeps_its_spans_whole(telemetry: Telemetry) -> None:
    @tool
    def reconfigure(x: int, state: State) -> str:
        """Turns content capture on in the middle of the run, then asks the human."""
        otel.instrument(telemetry.tracer_provider, telemetry.meter_provider, capture_content=True)
        return str(agent.ask_human(state, "Go on?"))

    agent = Agent(
        FakeModel([tool_call("reconfigure", x=1), "ok", "again"]),
        tools=[reconfigure],
        human=FakeHuman(["yes"]),
        reporter=None,
    )
    state = State(messages=[Message.user("Go")])
    agent.run(state)
    assert tree(telemetry.spans()) == [
        (
            "invoke_agent",
            "INTERNAL",
            [("chat fake", "CLIENT", []), ("execute_tool reconfigure", "INTERNAL", []), ("chat fake", "CLIENT", [])],
        )
    ]
    (event,) = telemetry.named("execute_tool reconfigure")[0].events
    assert event.attributes["alpineagents.human.answer"] == "yes"  # told to the new settings, on the old span
    state.add_message(Message.user("Again"))
    agent.run(state)  # the next run links to the last one and records content
    second = telemetry.named("invoke_agent")[1]
    assert second.links[0].context == telemetry.named("invoke_agent")[0].context
    assert "gen_ai.input.messages" in telemetry.named("chat fake")[2].attributes


def test_a_run_is_a_child_of_the_span_current_where_it_was_called(telemetry: Telemetry) -> None:
    tracer = telemetry.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("handle request") as outer:
        Agent(FakeModel(["hi"]), name="main", reporter=None).run("Go")
    assert tree(telemetry.spans()) == [
        ("handle request", "INTERNAL", [("invoke_agent main", "INTERNAL", [("chat fake", "CLIENT", [])])])
    ]
    assert telemetry.named("invoke_agent main")[0].parent.span_id == outer.get_span_context().span_id


def test_with_the_api_alone_tracing_does_nothing_and_breaks_nothing() -> None:
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider

    otel.instrument(NoOpTracerProvider(), NoOpMeterProvider(), capture_content=True)
    try:
        assert agents().run("Go") == "All done"
        assert asyncio.run(agents().arun("Go")) == "All done"
    finally:
        otel.uninstrument()


class _BrokenTracer:
    def start_span(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the tracing backend broke")


class _BrokenProvider(TracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        return _BrokenTracer()


def test_a_failing_tracer_never_breaks_a_run(caplog: pytest.LogCaptureFixture) -> None:
    otel.instrument(_BrokenProvider())
    try:
        with caplog.at_level("WARNING", logger="alpineagents.otel"):
            assert agents().run("Go") == "All done"
            assert agents().run("Go") == "All done"
    finally:
        otel.uninstrument()
    warnings = [record for record in caplog.records if record.name == "alpineagents.otel"]
    assert warnings and all("tracing failed" in record.getMessage() for record in warnings)
    assert len({record.getMessage() for record in warnings}) == len(warnings)  # once per hook
