"""Forking a stored run: a copy of its first entries that says where it came from (and which model is to go on).

The copy ends with a `model_event` of kind `FORK_EVENT` whose data names the run it came from and how many entries
it kept, and the model chosen when one was (`{"from", "at"}`, plus `"model"`). A model event changes nothing the
fold computes, so the copy's messages, usage and turn are the original's at that point; the viewer shows the copy
as "forked from <run> at entry N" with a link, and `alpineagents resume` continues it with the model named, when
no `--model` is given. The event is the saved format's own kind of entry, so the saved format stays as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from alpineagents.state import State
from alpineagents.types import HistoryEntry, ModelEvent, ModelEventEntry

__all__ = ["FORK_EVENT", "fork_onto", "fork_origin", "forked_model"]

FORK_EVENT = "fork"
"""The kind of the model event that closes a fork made for another model."""


def fork_onto(history: Sequence[HistoryEntry], source_id: str, model: str | None, state_id: str | None = None) -> State:
    """A new State holding `history` (the entries kept of run `source_id`) and the event naming its origin and,
    when given, the `model` that is to continue it."""
    turn = history[-1].turn if history else 0
    data: dict[str, str | int] = {"from": source_id, "at": len(history)}
    message = f"forked from {source_id} after {len(history)} entries"
    if model is not None:
        data["model"] = model
        message += f", to be continued by {model}"
    event = ModelEvent(FORK_EVENT, message, data)
    return State(id=state_id, history=[*history, ModelEventEntry(content=event, turn=turn)])


def fork_origin(history: Sequence[HistoryEntry]) -> tuple[str, int] | None:
    """The run a fork came from and the number of its entries kept, from the latest fork event of `history`, or
    None for a run that is not a fork."""
    for entry in reversed(history):
        if isinstance(entry, ModelEventEntry) and entry.content.kind == FORK_EVENT:
            source, at = entry.content.data.get("from"), entry.content.data.get("at")
            if isinstance(source, str) and isinstance(at, int):
                return source, at
    return None


def forked_model(state: State) -> str | None:
    """The model the latest fork event of `state` chose, or `None` when a run started after it (or none is
    there)."""
    for entry in reversed(state.history):
        if entry.kind == "run_start":
            return None
        if isinstance(entry, ModelEventEntry) and entry.content.kind == FORK_EVENT:
            model = entry.content.data.get("model")
            return model if isinstance(model, str) else None
    return None
