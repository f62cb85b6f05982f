"""The spans and metrics of runs, model requests and tool calls, in the GenAI semantic conventions.

One ``Tracing`` object holds the tracer, the instruments and what is open for each State (a ``Track``): its run's
``invoke_agent`` span, its model request's ``chat`` span and its tool calls' ``execute_tool`` spans. It is told
what happens by the ``TracingReporter`` of each traced run (the Reporter's events) and, as the process's observer,
by the turn machinery (a failed request, a permission decision, a Human's answer).

Every span gets its parent explicitly (never from the current context of the thread that reports it), so the
tree is the same whichever thread or task reports: a model request and a tool call are children of their run, a
subagent's run is a child of the tool call that started it, and a run with no parent is a child of whatever span
is current where ``run`` was called.

With content capture off, no span holds content, error texts included: a failed run, request or tool call
records the error's type (``error.type``) and a status description made of that type and a fixed text; a model
event keeps its structured data (model names, counts, the error's type) but not its message.

Nothing here reads a Model's credentials: the attributes come from the Model's public settings (name, provider,
max_tokens, temperature), the Reply, the tool call and, when content capture is on, the messages.
"""

from __future__ import annotations

import importlib.metadata
import time
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from alpineagents._install import DISTRIBUTION
from alpineagents._observe import RESPONSE
from alpineagents._tools.scope import CALL_SCOPE
from alpineagents.otel import _content
from alpineagents.otel._reporter import TracingReporter, guarded
from alpineagents.permissions import Allowed
from alpineagents.types import (
    StoppedByFinish,
    StoppedByLimit,
    StoppedByPermission,
    StoppedByUntil,
    ToolOutcomeKind,
    Usage,
)

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, SpanContext, TracerProvider

    from alpineagents._observe import ObservedAgent
    from alpineagents.permissions import Decision
    from alpineagents.reporter import Reporter
    from alpineagents.state import State
    from alpineagents.types import ModelEvent, Reply, ToolCall, ToolOutcome, ToolResultContent

__all__ = ["Tracing", "Choices", "SCOPE"]

SCOPE = "alpineagents"
"""The instrumentation scope name of the tracer and the meter."""

_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
_DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
_LAST_RUNS = 4096
"""How many States' latest run a new run of the same State can link to (oldest forgotten first)."""

_METRIC_KEYS = ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model")
"""The span attributes the metrics of a run or a request carry too."""

_FAILED = frozenset({ToolOutcomeKind.ERROR, ToolOutcomeKind.INPUT_ERROR, ToolOutcomeKind.ABORTED})
_INTERRUPTED = ToolOutcomeKind.INTERRUPTED
_STOPS: dict[type, str] = {
    StoppedByUntil: "until",
    StoppedByLimit: "limit",
    StoppedByFinish: "finish",
    StoppedByPermission: "permission",
}


class Choices:
    """Which Agents are traced: every Agent (``all``), plus the ``included`` ones, minus the ``excluded`` ones; a
    subagent run inside a traced run is traced unless its Agent is excluded. Agents are held weakly."""

    def __init__(self) -> None:
        self.all = False
        self.included: weakref.WeakSet[ObservedAgent] = weakref.WeakSet()
        self.excluded: weakref.WeakSet[ObservedAgent] = weakref.WeakSet()

    def traces(self, agent: ObservedAgent, inside_traced: bool) -> bool:
        if agent in self.excluded:
            return False
        return self.all or inside_traced or agent in self.included


class Track:
    """What is open for one State: its run, its model request, its tool calls, the decisions about calls whose
    span has not started yet."""

    __slots__ = (
        "run",
        "run_context",
        "run_start",
        "run_attributes",
        "usage",
        "chat",
        "chat_start",
        "chat_attributes",
        "response",
        "current",
        "tools",
        "decisions",
    )

    def __init__(self) -> None:
        self.run: Span | None = None
        self.run_context: Context | None = None  # the context with `run` as its span: the parent of the run's spans
        self.run_start = 0
        self.run_attributes: dict[str, Any] = {}
        self.usage = Usage()
        self.chat: Span | None = None
        self.chat_start = 0
        self.chat_attributes: dict[str, Any] = {}
        self.response: dict[str, str] = {}
        self.current: tuple[Context, object] | None = None  # (context made current for the request, its token)
        self.tools: dict[str, tuple[Span, int]] = {}
        self.decisions: dict[str, list[tuple[str, dict[str, Any], int]]] = {}

    def idle(self) -> bool:
        return self.run is None and self.chat is None and not self.tools and not self.decisions


def _version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # running from a source tree
        return ""


def _error_type(error: BaseException) -> str:
    return type(error).__qualname__


def _set_error(span: Span, error_type: str, description: str | None) -> None:
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, description))


NOT_CAPTURED = "its text is recorded only with content capture on"
"""What a span's error status says after the error's type when content capture is off: an error's text may quote
a tool's arguments or echo a prompt, so it is content."""


def _describe(error: BaseException, capture: bool) -> str:
    """The status description of a span that ended with ``error``: its type and text with content capture on, its
    type and the fixed ``NOT_CAPTURED`` without."""
    if not capture:
        return f"{_error_type(error)}: {NOT_CAPTURED}"
    text = str(error)
    return f"{_error_type(error)}: {text}" if text else _error_type(error)


def _usage_attributes(usage: Usage) -> dict[str, Any]:
    """The usage attributes: input counts every input token (cached or not), as the conventions say."""
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
    }
    if usage.cost is not None:
        attributes["alpineagents.usage.cost"] = usage.cost
    return attributes


def _difference(now: Usage, before: Usage) -> Usage:
    cost = None
    if now.cost is not None:
        cost = now.cost - (before.cost or 0.0)
    return Usage(
        now.input_tokens - before.input_tokens,
        now.output_tokens - before.output_tokens,
        now.cache_read_tokens - before.cache_read_tokens,
        now.cache_write_tokens - before.cache_write_tokens,
        now.requests - before.requests,
        cost,
    )


def _plain(value: Any) -> Any:
    """An attribute value: str, bool, int and float as they are; anything else as its text."""
    if isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


class Tracing:
    """The tracer, the instruments and the open spans of every traced State (see the module docstring)."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        *,
        capture_content: bool,
        currency: str,
        choices: Choices,
    ) -> None:
        self.capture = capture_content
        self.choices = choices
        version = _version()
        self.tracer = trace.get_tracer(SCOPE, version, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, version, meter_provider=meter_provider)
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self.cost = meter.create_counter(
            "alpineagents.client.cost", unit=currency, description="Cost of model requests, at the model's Price"
        )
        self.tracks: dict[str, Track] = {}
        self.last_runs: OrderedDict[str, SpanContext] = OrderedDict()

    # --- the observer seam -------------------------------------------------------------------------------------

    def reporter(self, agent: ObservedAgent, reporter: Reporter | None, above: Reporter | None) -> Reporter | None:
        """The tracing reporter of a run of ``agent`` (passing events on to ``reporter``), or ``reporter`` itself
        when ``agent`` is not traced."""
        if type(reporter) is TracingReporter:
            reporter = reporter.inner
        if self.choices.traces(agent, type(above) is TracingReporter):
            return TracingReporter(self, agent, reporter)
        return reporter

    @guarded
    def think_failed(self, state: State, error: BaseException) -> None:
        track = self.tracks.get(state.id)
        if track is not None and track.chat is not None:
            self._end_chat(state.id, track, error=error)

    @guarded
    def decided(self, state: State, call: ToolCall, decision: Decision) -> None:
        track = self.tracks.get(state.id)
        if track is None:
            return
        verdict = decision.verdict
        allowed = isinstance(verdict, Allowed)
        attributes: dict[str, Any] = {"alpineagents.permission.verdict": "allowed" if allowed else "denied"}
        if decision.decided_by is not None:
            attributes["alpineagents.permission.decided_by"] = decision.decided_by
        if not allowed:
            attributes["alpineagents.permission.stop"] = bool(getattr(verdict, "stop", False))
            if self.capture:  # the reason is the call's result: what the model reads
                attributes["alpineagents.permission.reason"] = str(getattr(verdict, "reason", ""))
        track.decisions.setdefault(call.id, []).append(("alpineagents.permission", attributes, time.time_ns()))

    @guarded
    def answered(self, state: State, question: str, answer: Any) -> None:
        track = self.tracks.get(state.id)
        if track is None:
            return
        attributes: dict[str, Any] = {}
        if self.capture:
            attributes["alpineagents.human.question"] = question
            attributes["alpineagents.human.answer"] = _content.answer_text(answer)
        scope = CALL_SCOPE.get()
        span = None
        if scope is not None and scope[0] is state:
            held = track.tools.get(scope[1].id)
            span = held[0] if held is not None else None
        if span is None:
            span = track.chat or track.run
        if span is not None:
            span.add_event("alpineagents.human.answer", attributes)

    @guarded
    def tool_running(self, state: State, call: ToolCall) -> None:
        track = self.tracks.get(state.id)
        held = None if track is None else track.tools.get(call.id)
        if held is not None:  # in the call's own contextvars copy: nothing to undo when it ends
            otel_context.attach(trace.set_span_in_context(held[0]))

    # --- runs ---------------------------------------------------------------------------------------------------

    def _track(self, state_id: str) -> Track:
        track = self.tracks.get(state_id)
        if track is None:
            track = self.tracks.setdefault(state_id, Track())
        return track

    def _release(self, state_id: str, track: Track) -> None:
        if track.idle() and self.tracks.get(state_id) is track:
            del self.tracks[state_id]

    def _parent(self, state: State) -> Context | None:
        """The context a new span of ``state`` starts in: its run's span, else (a subagent run) the tool call that
        started it, else the caller's current context."""
        track = self.tracks.get(state.id)
        if track is not None and track.run is not None:
            return track.run_context
        parent_id = state.parent_id
        if parent_id is not None:
            above = self.tracks.get(parent_id)
            if above is not None:
                held = above.tools.get(state.parent_call_id or "")
                if held is not None:
                    return trace.set_span_in_context(held[0])
                if above.run is not None:
                    return trace.set_span_in_context(above.run)
        return None

    def _links(self, state: State) -> list[Link]:
        """A run of a State run before links to its previous run: the span itself when it ran in this process,
        else (a State loaded from a store) a link that names the State."""
        previous = self.last_runs.get(state.id)
        if previous is not None:
            return [Link(previous, {"gen_ai.conversation.id": state.id})]
        if state.turn > 0:
            invalid = trace.INVALID_SPAN_CONTEXT
            return [Link(invalid, {"gen_ai.conversation.id": state.id, "alpineagents.link": "continues"})]
        return []

    @guarded
    def run_start(self, agent: ObservedAgent, state: State) -> None:
        name = getattr(agent, "name", None)
        model = agent._model
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.conversation.id": state.id,
            "gen_ai.provider.name": model.provider or "unknown",
            "gen_ai.request.model": model.name,
        }
        if name:
            attributes["gen_ai.agent.name"] = name
        description = getattr(agent, "description", None)
        if description:
            attributes["gen_ai.agent.description"] = description
        context = self._parent(state)
        links = self._links(state)
        track = self._track(state.id)
        track.run = self.tracer.start_span(
            f"invoke_agent {name}" if name else "invoke_agent",
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
        )
        track.run_context = trace.set_span_in_context(track.run)
        track.run_start = time.monotonic_ns()
        track.run_attributes = {key: attributes[key] for key in _METRIC_KEYS}
        track.usage = state.usage

    @guarded
    def run_end(self, state: State, error: BaseException | None) -> None:
        track = self.tracks.get(state.id)
        if track is None or track.run is None:
            return
        span = track.run
        if track.chat is not None:
            self._end_chat(state.id, track, error=error or RuntimeError("no reply"))
        for call_id in list(track.tools):
            self._end_tool(track, call_id, None, "interrupted", error)
        track.decisions.clear()
        span.set_attributes(_usage_attributes(_difference(state.usage, track.usage)))
        stopped = state.stopped
        if stopped is not None:
            span.set_attribute("alpineagents.run.stop_reason", _STOPS.get(type(stopped), type(stopped).__name__))
        span.set_attribute("alpineagents.run.finished", state.finished)
        if error is not None:
            _set_error(span, _error_type(error), _describe(error, self.capture))
        attributes = dict(track.run_attributes)
        if error is not None:
            attributes["error.type"] = _error_type(error)
        self.duration.record((time.monotonic_ns() - track.run_start) / 1e9, attributes)
        span.end()
        track.run = track.run_context = None
        self.last_runs[state.id] = span.get_span_context()
        self.last_runs.move_to_end(state.id)
        if len(self.last_runs) > _LAST_RUNS:
            self.last_runs.popitem(last=False)
        self._release(state.id, track)

    # --- model requests -----------------------------------------------------------------------------------------

    @guarded
    def think_start(self, agent: ObservedAgent, state: State) -> None:
        track = self._track(state.id)
        if track.chat is not None:  # the previous request failed where no one told us (a user's loop caught it)
            self._end_chat(state.id, track, error=RuntimeError("no reply"))
        model = agent._model
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": model.provider or "unknown",
            "gen_ai.request.model": model.name,
            "gen_ai.conversation.id": state.id,
        }
        if model.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = model.max_tokens
        if model.temperature is not None:
            attributes["gen_ai.request.temperature"] = model.temperature
        track.chat_attributes = {key: attributes[key] for key in _METRIC_KEYS}
        if self.capture:
            attributes["gen_ai.input.messages"] = _content.messages_json(state.messages)
            if agent._system:
                attributes["gen_ai.system_instructions"] = _content.system_json(agent._system)
        track.chat = self.tracer.start_span(
            f"chat {model.name}", context=self._parent(state), kind=SpanKind.CLIENT, attributes=attributes
        )
        track.chat_start = time.monotonic_ns()
        track.response = {}
        RESPONSE.set(track.response)  # the adapter puts the response id in it (the request shares this context)
        current = trace.set_span_in_context(track.chat)  # spans the request makes (an HTTP client's) are children
        track.current = (current, otel_context.attach(current))

    @guarded
    def think_end(self, state: State, reply: Reply) -> None:
        track = self.tracks.get(state.id)
        if track is None or track.chat is None:
            return
        span = track.chat
        usage = reply.usage
        attributes = _usage_attributes(usage)
        attributes["gen_ai.response.finish_reasons"] = (reply.stop_reason or "unknown",)
        if reply.model:
            attributes["gen_ai.response.model"] = reply.model
        response_id = track.response.get("id")
        if response_id:
            attributes["gen_ai.response.id"] = response_id
        if self.capture:
            attributes["gen_ai.output.messages"] = _content.output_json(reply.message, reply.stop_reason)
        span.set_attributes(attributes)
        metric = dict(track.chat_attributes)
        if reply.model:
            metric["gen_ai.response.model"] = reply.model
        total_input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        self.tokens.record(total_input, {**metric, "gen_ai.token.type": "input"})
        self.tokens.record(usage.output_tokens, {**metric, "gen_ai.token.type": "output"})
        if usage.cost is not None:
            self.cost.add(usage.cost, metric)
        self._end_chat(state.id, track, metric=metric)

    def _end_chat(
        self, state_id: str, track: Track, *, error: BaseException | None = None, metric: dict[str, Any] | None = None
    ) -> None:
        span = track.chat
        assert span is not None
        track.chat = None
        if RESPONSE.get() is track.response:
            RESPONSE.set(None)
        if track.current is not None:
            current, token = track.current
            track.current = None
            if otel_context.get_current() is current:  # ended where it started (else that context is gone)
                otel_context.detach(token)  # type: ignore[arg-type]
        if metric is None:
            metric = dict(track.chat_attributes)
        if error is not None:
            _set_error(span, _error_type(error), _describe(error, self.capture))
            metric["error.type"] = _error_type(error)
        self.duration.record((time.monotonic_ns() - track.chat_start) / 1e9, metric)
        span.end()
        self._release(state_id, track)

    @guarded
    def model_event(self, state: State, event: ModelEvent) -> None:
        track = self.tracks.get(state.id)
        span = None if track is None else track.chat or track.run
        if span is None:
            return
        attributes = {f"alpineagents.event.{key}": _plain(value) for key, value in event.data.items()}
        if self.capture:  # a retry's or fallback's message quotes the error's text
            attributes["alpineagents.event.message"] = event.message
        span.add_event(f"alpineagents.model.{event.kind}", attributes)

    # --- tool calls ---------------------------------------------------------------------------------------------

    def _start_tool(self, state: State, track: Track, call: ToolCall, start: int | None = None) -> Span:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": state.id,
        }
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = _content.arguments_json(call)
        span = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=self._parent(state),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start,
        )
        for name, event, at in track.decisions.pop(call.id, ()):
            span.add_event(name, event, timestamp=at)
        return span

    @guarded
    def tool_start(self, state: State, call: ToolCall) -> None:
        track = self._track(state.id)
        track.tools[call.id] = (self._start_tool(state, track, call), time.monotonic_ns())

    @guarded
    def tool_end(self, state: State, call: ToolCall, result: ToolResultContent, outcome: ToolOutcome) -> None:
        track = self.tracks.get(state.id)
        if track is None:
            return
        if call.id not in track.tools:  # refused or cancelled: it never started
            decisions = track.decisions.get(call.id)
            start = decisions[0][2] if decisions else None
            track.tools[call.id] = (self._start_tool(state, track, call, start), time.monotonic_ns())
        kind = outcome.kind
        error = outcome.error
        if kind in _FAILED or kind is _INTERRUPTED:
            error_type = (
                _error_type(error)
                if error is not None
                else "ToolError"
                if kind is ToolOutcomeKind.ERROR
                else kind.value
            )
        else:
            error_type = None
        self._end_tool(track, call.id, result, kind.value, error, error_type)
        self._release(state.id, track)

    def _end_tool(
        self,
        track: Track,
        call_id: str,
        result: ToolResultContent | None,
        outcome: str,
        error: BaseException | None,
        error_type: str | None = None,
    ) -> None:
        span, started = track.tools.pop(call_id)
        span.set_attribute("alpineagents.tool.outcome", outcome)
        duration = (time.monotonic_ns() - started) / 1e9
        span.set_attribute("alpineagents.tool.duration", duration)
        if self.capture and result is not None:
            span.set_attribute("gen_ai.tool.call.result", _content.result_json(result))
        metric: dict[str, Any] = {"gen_ai.operation.name": "execute_tool"}
        if error_type is None and error is not None:
            error_type = _error_type(error)
        if error_type is not None:
            _set_error(span, error_type, _describe(error, self.capture) if error is not None else outcome)
            metric["error.type"] = error_type
        self.duration.record(duration, metric)
        span.end()
