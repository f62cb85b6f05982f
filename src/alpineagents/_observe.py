"""The observer seam: how tracing (``alpineagents.otel``) hears what happens in a run, at no cost when it is off.

``OBSERVER`` is ``None`` unless tracing was turned on; every place below reads it once and does nothing more when
it is ``None``. When it is set:

- each run context (and each Agent call outside a run) gets its reporter from ``OBSERVER.reporter(agent,
  reporter, above)``, which may return a Reporter that traces and passes every event on to ``reporter`` (the user's
  own reporter keeps getting every event). ``above`` is the reporter of the run this one works inside, or None;
- the turn machinery and the Human tell it what a Reporter is not told: a model request that failed
  (``think_failed``), a permission decision about a tool call (``decided``), a Human's answer (``answered``), and
  that a tool call starts running in its own thread or Task (``tool_running``);
- while it watches a model request, ``RESPONSE`` holds a dict in which the adapter puts the provider's id of the
  response (``response_id``); otherwise ``RESPONSE`` is ``None`` and the adapter's one read of it does nothing.

An observer only observes: it never changes the State or the flow, and it must not raise.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from alpineagents.models.base import Model
    from alpineagents.permissions import Decision
    from alpineagents.reporter import Reporter
    from alpineagents.state import State
    from alpineagents.types import ToolCall

__all__ = ["ObservedAgent", "Observer", "OBSERVER", "observed", "RESPONSE", "response_id"]


class ObservedAgent(Protocol):
    """What an observer reads of an Agent (the turn machinery's Agent seam has it): its model and its system text.
    An Agent's ``name`` and ``description`` are read when it has them."""

    _model: Model
    _system: str | None


class Observer(Protocol):
    """What the machinery tells an observer (see the module docstring)."""

    def reporter(self, agent: ObservedAgent, reporter: Reporter | None, above: Reporter | None) -> Reporter | None:
        """The reporter to use for a run (or a call) of ``agent`` whose own reporter is ``reporter``."""
        ...

    def think_failed(self, state: State, error: BaseException) -> None:
        """A model request on ``state`` ended with ``error`` (no reply)."""
        ...

    def decided(self, state: State, call: ToolCall, decision: Decision) -> None:
        """The permissions decided about ``call`` (allowed or refused), before any tool of the turn runs."""
        ...

    def answered(self, state: State, question: str, answer: Any) -> None:
        """A Human answered ``question`` for ``state`` (the answer is recorded)."""
        ...

    def tool_running(self, state: State, call: ToolCall) -> None:
        """``call`` starts running here: in the contextvars copy of its worker thread or Task (changes to context
        variables made here end with the call)."""
        ...


OBSERVER: Observer | None = None
"""The observer, or ``None`` when nothing observes (set by ``alpineagents.otel.instrument``)."""


def observed(agent: ObservedAgent, reporter: Reporter | None, above: Reporter | None = None) -> Reporter | None:
    """``reporter`` as the observer wants it used for ``agent`` (``reporter`` itself when nothing observes)."""
    observer = OBSERVER
    if observer is None:
        return reporter
    return observer.reporter(agent, reporter, above)


RESPONSE: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("alpineagents_response", default=None)
"""While an observer watches a model request: where the adapter puts the provider's response id (see
``response_id``). It is set in the context that sends the request, which the adapter's thread or task shares."""


def response_id(value: object) -> None:
    """An adapter tells the provider's id of the response it read (nothing happens when nobody watches)."""
    box = RESPONSE.get()
    if box is not None and value:
        box["id"] = str(value)
