"""The exact input of each model request of a run: the system prompt, the messages as sent, the tool specs.

The history holds all three. The messages of a request are the State's messages right after its `model_request`
entry (the fold gives them: late notices join there). The system prompt and the tool specs are named by digest in
the entry's `input`; their text is in the first request of the run that sent them (`RequestInput`). A run saved
without them (`ALPINEAGENTS_RECORD` did not ask for inputs, or an older version saved it) shows that they were not
recorded; a digest whose text is nowhere in the history
is reported as missing, never left out in silence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from alpineagents._history.fold import Accumulator
from alpineagents._history.snapshot import prefix_tuple
from alpineagents._values.request_input import input_texts
from alpineagents.types import HistoryEntry, ModelRequestEntry
from alpineagents.viewer.timeline import Piece, as_json, message_pieces

NOT_RECORDED = (
    "not recorded: run with ALPINEAGENTS_RECORD=inputs to keep each request's system prompt and tool specs"
)


@dataclass
class RequestView:
    """What one request sent: its system prompt and tool specs (each a piece), and its messages."""

    seq: int
    system: Piece
    tools: Piece
    messages: list[tuple[str, list[Piece]]] = field(default_factory=list)


def summaries(history: Sequence[HistoryEntry]) -> dict[int, str]:
    """For each `model_request` entry by its position, a line saying what it sent: `3 messages · system prompt
    (1,204 characters) · 2 tools`."""
    texts = _texts(history)
    found: dict[int, str] = {}
    acc = Accumulator()
    for seq, entry in enumerate(history):
        acc.apply(entry)
        if type(entry) is ModelRequestEntry:
            count = acc.messages_len
            parts = [f"{count} message{'s' if count != 1 else ''}"]
            sent = entry.input
            if sent is None:
                parts.append("system prompt and tools not recorded")
            else:
                system = texts.get(sent.system_sha256 or "")
                if sent.system_sha256 is None:
                    parts.append("no system prompt")
                else:
                    size = f"{len(system):,} characters" if isinstance(system, str) else "text missing"
                    parts.append(f"system prompt ({size})")
                tools = texts.get(sent.tools_sha256 or "")
                count_tools = len(tools) if isinstance(tools, tuple) else 0
                parts.append(
                    "no tools" if sent.tools_sha256 is None else f"{count_tools} tool{'s' if count_tools != 1 else ''}"
                )
            found[seq] = " · ".join(parts)
    return found


def _texts(history: Sequence[HistoryEntry]) -> dict[str, Any]:
    return input_texts(entry.input for entry in history if type(entry) is ModelRequestEntry)


def request_view(history: Sequence[HistoryEntry], seq: int) -> RequestView | None:
    """The input of the request at position `seq` of `history`, or None when that entry is not a request."""
    if not 0 <= seq < len(history) or type(history[seq]) is not ModelRequestEntry:
        return None
    return request_views(history[: seq + 1], _texts(history), only=seq).get(seq)


def request_views(
    history: Sequence[HistoryEntry], texts: Mapping[str, Any] | None = None, only: int | None = None
) -> dict[int, RequestView]:
    """The input of every request of `history` (or of the one at position `only`), by position, in one pass (an
    exported page holds them all). `texts`: the prompts and tool specs by digest (by default, those `history`
    holds)."""
    found = _texts(history) if texts is None else texts
    views: dict[int, RequestView] = {}
    acc = Accumulator()
    for seq, entry in enumerate(history):
        acc.apply(entry)
        if type(entry) is not ModelRequestEntry or (only is not None and seq != only):
            continue
        sent = entry.input
        if sent is None:
            system = Piece("system prompt", NOT_RECORDED, "note")
            tools = Piece("tool specs", NOT_RECORDED, "note")
        else:
            system = _system_piece(sent.system_sha256, found)
            tools = _tools_piece(sent.tools_sha256, found)
        messages = prefix_tuple(acc.messages, acc.messages_len)
        shown = [(m.role, message_pieces(m) or [Piece(m.role, "", "note")]) for m in messages]
        views[seq] = RequestView(seq, system, tools, shown)
    return views


def _system_piece(digest: str | None, texts: Mapping[str, Any]) -> Piece:
    if digest is None:
        return Piece("system prompt", "(none)", "note")
    text = texts.get(digest)
    if not isinstance(text, str):
        return Piece(
            "system prompt", f"damaged: the text of the prompt with SHA-256 {digest} is not in this history", "note"
        )
    return Piece(f"system prompt (SHA-256 {digest[:12]}…)", text)


def _tools_piece(digest: str | None, texts: Mapping[str, Any]) -> Piece:
    if digest is None:
        return Piece("tool specs", "(none)", "note")
    specs = texts.get(digest)
    if not isinstance(specs, tuple):
        return Piece("tool specs", f"damaged: the tool specs with SHA-256 {digest} are not in this history", "note")
    names = ", ".join(str(spec.get("name")) for spec in specs)
    return Piece(f"tool specs: {names}", as_json(specs), "json")
