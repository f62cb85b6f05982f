"""Forking a run onto another model: a copy of its first entries that says which model is to continue it.

The copy ends with a `model_event` of kind `FORK_EVENT` whose data names the run it came from, how many entries it
kept and the model chosen (`{"from", "at", "model"}`). A model event changes nothing the fold computes, so the
copy's messages, usage and turn are the original's at that point; `alpineagents resume` reads the event and
continues the copy with that model when no `--model` is given. The event is the saved format's own kind of entry,
so the saved format stays as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from alpineagents.state import State
from alpineagents.types import HistoryEntry, ModelEvent, ModelEventEntry

__all__ = ["FORK_EVENT", "fork_onto", "forked_model"]

FORK_EVENT = "fork"
"""The kind of the model event that closes a fork made for another model."""


def fork_onto(history: Sequence[HistoryEntry], source_id: str, model: str, state_id: str | None = None) -> State:
    """A new State holding `history` (the entries kept of run `source_id`) and the event naming `model`."""
    turn = history[-1].turn if history else 0
    event = ModelEvent(
        FORK_EVENT,
        f"forked from {source_id} after {len(history)} entries, to be continued by {model}",
        {"from": source_id, "at": len(history), "model": model},
    )
    return State(id=state_id, history=[*history, ModelEventEntry(content=event, turn=turn)])


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
