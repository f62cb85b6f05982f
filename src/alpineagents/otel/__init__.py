"""Tracing and metrics with OpenTelemetry, in the GenAI semantic conventions (the ``otel`` extra: ``pip install -e '.[otel]'`` in the library's clone).

``instrument()`` turns tracing on for every Agent in the process; no change to the agents' code is needed, and
each Agent's own Reporter (the Terminal, say) keeps getting every event. ``uninstrument()`` turns it off. One Agent
can opt in (``instrument(agent=a)``) or out (``uninstrument(agent=a)``); a subagent run inside a traced run is
traced unless its own Agent opted out. The choice belongs to the Agent object: ``agent.copy()`` makes an Agent that
follows the process-wide setting.

What is traced:

- ``invoke_agent {name}`` for each run, with the run's usage, why it stopped and whether it finished;
- ``chat {model}`` (kind CLIENT) for each model request, with the request's settings, the reply's model, finish
  reason and usage; retries and fallbacks as span events; a failed request as the span's error status;
- ``execute_tool {tool}`` for each tool call, with its outcome; permission decisions and Human answers as events;
- the metrics ``gen_ai.client.token.usage``, ``gen_ai.client.operation.duration`` and ``alpineagents.client.cost``
  (when the model has a ``Price``).

Message content (messages, system prompt, tool arguments and results, Human answers, permission reasons, and the
texts of errors, which may quote any of these) is recorded only with ``capture_content=True`` or the environment
variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``; without it a failed span records the error's
type and a fixed text.
Credentials are never recorded: nothing here reads a Model's keys.

When tracing is off, a run does no tracing work: the turn machinery only reads one module attribute (when a run
starts, when a tool call starts, on a few rare paths) and finds it ``None``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from alpineagents._install import install_hint
from alpineagents.errors import fix_message

try:
    import opentelemetry.trace  # noqa: F401 - only checks that the API is installed
except ImportError as missing:  # pragma: no cover - the extra is installed in the tests
    raise ImportError(
        fix_message(
            "alpineagents.otel needs the OpenTelemetry API, which is not installed",
            "install the otel extra",
            install_hint("otel"),
        )
    ) from missing

from alpineagents import _observe
from alpineagents.otel._tracing import SCOPE, Choices, Tracing

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from alpineagents.agent import Agent

__all__ = ["instrument", "uninstrument", "is_instrumented", "CAPTURE_CONTENT_ENV", "SCOPE"]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable that turns content capture on (``true``, ``1``, ``yes``, ``span_only`` or
``span_and_event``, in any case)."""

_ON = frozenset({"true", "1", "yes", "on", "span_only", "span_and_event"})

_CHOICES = Choices()


def _content_from_environment() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _ON


def instrument(
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    *,
    capture_content: bool = False,
    agent: Agent | None = None,
    currency: str = "USD",
) -> None:
    """Turn tracing on: for every Agent in the process, or with ``agent=`` for that one Agent (and the subagent runs
    inside its runs).

    The providers default to the global ones of OpenTelemetry. The providers, the content setting and the currency
    apply to the whole process: the latest call sets them (runs already going on finish their spans with the ones
    they started with).

    Args:
        tracer_provider: Where spans go; ``None`` uses the global tracer provider.
        meter_provider: Where metrics go; ``None`` uses the global meter provider.
        capture_content: Record message content, tool arguments and results, and Human answers. Also turned on
            by ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.
        agent: Trace only this Agent (added to those already traced); ``None`` traces every Agent.
        currency: The unit of the cost metric: the currency of the models' ``Price`` figures.
    """
    if agent is None:
        _CHOICES.all = True
    else:
        _CHOICES.included.add(agent)
        _CHOICES.excluded.discard(agent)
    tracing = Tracing(
        tracer_provider,
        meter_provider,
        capture_content=capture_content or _content_from_environment(),
        currency=currency,
        choices=_CHOICES,
    )
    previous = _observe.OBSERVER
    if isinstance(previous, Tracing):  # runs going on keep their spans, and the next runs link to the last ones
        tracing.tracks = previous.tracks
        tracing.last_runs = previous.last_runs
    _observe.OBSERVER = tracing


def uninstrument(agent: Agent | None = None) -> None:
    """Turn tracing off: everywhere (and forget every per-Agent choice), or with ``agent=`` for that one Agent.

    Runs already going on finish their spans. With tracing off everywhere, runs do no tracing work at all.
    """
    if agent is not None:
        _CHOICES.excluded.add(agent)
        _CHOICES.included.discard(agent)
        if _CHOICES.all or len(_CHOICES.included):
            return
    _observe.OBSERVER = None
    _CHOICES.all = False
    _CHOICES.included.clear()
    _CHOICES.excluded.clear()


def is_instrumented(agent: Agent | None = None) -> bool:
    """Whether runs of ``agent`` are traced (outside any other run); without ``agent``, whether tracing is on for
    every Agent."""
    if _observe.OBSERVER is None:
        return False
    if agent is None:
        return _CHOICES.all
    return _CHOICES.traces(agent, False)
