"""What a stored history says about each request its run made: the request as the model saw it and what came back.

A history keeps, for every turn, a `model_request` entry and the `model_reply` (or `error`) that answered it. The
messages of the request are the State's messages right after the `model_request` entry (the fold gives them), the
system prompt is compared by the SHA-256 the latest `run_start` keeps, and the tools by the names it keeps (each
request's recorded input, `ModelRequestEntry.input`, is for the viewer; a replay does not compare it).
A run made through a `Recorder` also holds, in a `model_event` of kind `REQUEST_EVENT` inside each turn, the full
tool specs and the model settings, so a replay can compare those too. A compaction made by a model and an `ask`
are requests as well: they are kept as the summary and the answer they produced.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from alpineagents._frozen import thaw
from alpineagents._history.fold import Accumulator
from alpineagents._history.snapshot import prefix_tuple
from alpineagents.models.base import Model
from alpineagents.types import AgentInfo, HistoryEntry, Message, ModelEvent, ModelRequestEntry, Reply, Request

__all__ = ["REQUEST_EVENT", "SETTINGS", "Recorded", "recorded_requests", "request_facts", "sha256", "model_settings"]

REQUEST_EVENT = "recorded_request"
"""The kind of the `model_event` a `Recorder` adds to each turn: the tool specs and settings of its request."""

SETTINGS = ("model", "max_tokens", "temperature", "tool_choice")
"""The settings of a request that change the answer and that a replay compares (when both sides know them)."""


def sha256(text: str | None) -> str | None:
    """The hex SHA-256 of `text` as `run_start` keeps it for the system prompt (`None` for no text)."""
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def model_settings(model: Model) -> dict[str, Any]:
    """The settings of `model` that change its answers: `"provider/name"`, `max_tokens`, `temperature`."""
    return {
        "model": f"{model.provider}/{model.name}",
        "max_tokens": model.max_tokens,
        "temperature": model.temperature,
    }


def request_facts(request: Request, model: Model | None) -> dict[str, Any]:
    """The data of the `REQUEST_EVENT` for `request`: the system prompt's SHA-256, every tool spec, the settings
    (the model's, when known, and the request's `tool_choice`). Plain JSON, so it is saved as it is."""
    settings: dict[str, Any] = {} if model is None else model_settings(model)
    settings["tool_choice"] = request.tool_choice
    return {
        "system_sha256": sha256(request.system),
        "tools": [
            {"name": spec.name, "description": spec.description, "input_schema": thaw(spec.input_schema)}
            for spec in request.tools
        ],
        "settings": settings,
    }


@dataclass(frozen=True, eq=False)
class Recorded:
    """One request of a stored run and what answered it.

    `kind` is `"turn"` (a `think`), `"compact"` (a compaction a model made) or `"ask"` (an `ask`, whose replies
    are not kept: only its answer). `index` is the position in history of the entry that opened it. Its messages
    are the first `count` items of `source`, a list the fold only ever appends to (shared by the requests of a
    run, so that reading a long run keeps one list, not one tuple per request).
    """

    kind: Literal["turn", "compact", "ask"]
    index: int
    turn: int
    source: list[Message] = field(repr=False)
    count: int
    agent: AgentInfo | None
    facts: Mapping[str, Any] | None = None
    events: tuple[ModelEvent, ...] = ()
    reply: Reply | None = None
    error: str | None = None
    answer: Any = None
    question: str = ""

    @property
    def messages(self) -> tuple[Message, ...]:
        """The messages the request carried."""
        return prefix_tuple(self.source, self.count)


def _facts(events: Sequence[ModelEvent]) -> Mapping[str, Any] | None:
    for event in events:
        if event.kind == REQUEST_EVENT:
            return event.data
    return None


def recorded_requests(history: Sequence[HistoryEntry]) -> list[Recorded]:
    """Every request of `history`, in order, each with the messages it carried and what answered it."""
    found: list[Recorded] = []
    acc = Accumulator()
    agent: AgentInfo | None = None
    open_turn: tuple[int, ModelRequestEntry, list[Message], int] | None = None
    events: list[ModelEvent] = []
    for index, entry in enumerate(history):
        before = (acc.messages, acc.messages_len)
        acc.apply(entry)
        if entry.kind == "run_start":
            agent = entry.content
        elif entry.kind == "model_request":
            open_turn, events = (index, entry, acc.messages, acc.messages_len), []
        elif entry.kind == "model_event" and open_turn is not None:
            events.append(entry.content)
        elif (entry.kind == "model_reply" or (entry.kind == "error" and entry.call is None)) and open_turn is not None:
            start, request, source, count = open_turn
            reply = entry.content if entry.kind == "model_reply" else None
            error = entry.content if entry.kind == "error" else None
            found.append(
                Recorded("turn", start, request.turn, source, count, agent, _facts(events), tuple(events), reply, error)
            )
            open_turn = None
        elif entry.kind == "context_change" and entry.content.kind == "compact":
            change = entry.content
            if change.usage is not None and change.summary is not None:  # a model wrote it (not state.compact)
                reply = Reply(Message.assistant(change.summary), change.usage)
                found.append(Recorded("compact", index, entry.turn, *before, agent, reply=reply))
        elif entry.kind == "ask":
            found.append(
                Recorded(
                    "ask",
                    index,
                    entry.turn,
                    *before,
                    agent,
                    answer=entry.content.answer,
                    question=entry.content.question,
                )
            )
    return found
