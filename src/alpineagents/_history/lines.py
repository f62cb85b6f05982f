"""The lines of ``str(state)``: one line per history entry, and the closing ``done:`` line."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from alpineagents import types as t
from alpineagents._values.content import format_size

__all__ = ["history_lines"]

_SPACES = re.compile(r"\s+")


def _short(value: object, limit: int = 60) -> str:
    """``value`` as one line: whitespace runs collapsed, cut to ``limit`` characters with an ellipsis."""
    text = _SPACES.sub(" ", str(value)).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _size(content: t.ToolResultContent) -> str:
    """The byte size of a result (UTF-8 text plus image bytes), shown as B, KB or MB."""
    if isinstance(content, str):
        n = len(content.encode("utf-8"))
    else:
        n = 0
        for block in content:
            if isinstance(block, t.TextBlock):
                n += len(block.text.encode("utf-8"))
            elif isinstance(block, t.Image):
                n += len(block.data)
    return format_size(n)


def _message(entry: t.MessageEntry) -> str:
    content = entry.content
    if isinstance(content, str):
        return f": {_short(content)}"
    text = " ".join(block.text if isinstance(block, t.TextBlock) else f"({block.media_type})" for block in content)
    return f": {_short(text)}"


def _request(entry: t.ModelRequestEntry) -> str:
    return f": {_short(entry.content)}"


def _reply(entry: t.ModelReplyEntry) -> str:
    reply = entry.content
    parts = [_short(reply.text)] if reply.text else []
    parts.extend(_short(t.format_call(call)) for call in reply.tool_calls)
    return f": {'; '.join(parts) if parts else '(empty reply)'}"


def _event(entry: t.ModelEventEntry) -> str:
    return f": {_short(str(entry.content))}"


_SHOWN_OUTCOMES = (t.ToolOutcomeKind.DENIED, t.ToolOutcomeKind.CANCELLED)


def _result(entry: t.ToolResultEntry) -> str:
    late = " (late)" if entry.late else ""
    name = entry.call.name
    outcome = entry.outcome
    if outcome is t.ToolOutcomeKind.DONE:
        return f" {name}: {_size(entry.content)}{late}"
    shown = outcome.value if outcome in _SHOWN_OUTCOMES else "error"
    return f" {name}{late} ({shown}): {_short(t.result_text(entry.content))}"


def _exchange(entry: t.ExchangeEntry) -> str:
    exchange = entry.content
    return f": {_short(exchange.question, 40)} → {_short(exchange.answer, 40)}"


def _change(entry: t.ContextChangeEntry) -> str:
    change = entry.content
    if change.kind == "import":
        return f" import: {len(change.messages)} messages"
    if change.kind == "restore":
        return f" restore: back to {change.restored_to} history entries"
    return f" {change.kind}: {change.before_tokens} → {change.after_tokens} tokens"


def _run_start(entry: t.RunStartEntry) -> str:
    info = entry.content
    name = f" ({info.name})" if info.name is not None else ""
    return f": {info.model}{name}"


def _stop(entry: t.StopEntry) -> str:
    return f": {entry.content if entry.content is not None else '(cleared)'}"


def _extra_data(entry: t.ExtraDataEntry) -> str:
    parts: list[str] = []
    if entry.content:
        parts.append("set " + ", ".join(entry.content))
    if entry.removed:
        parts.append("removed " + ", ".join(entry.removed))
    return f": {'; '.join(parts)}"


def _error(entry: t.ErrorEntry) -> str:
    if entry.call is not None:
        return f" {entry.call.name}: {_short(entry.content)}"
    return f": {_short(entry.content)}"


_TAILS: tuple[tuple[type, Callable[[Any], str]], ...] = (
    (t.MessageEntry, _message),
    (t.ModelRequestEntry, _request),
    (t.ModelReplyEntry, _reply),
    (t.ModelEventEntry, _event),
    (t.ToolResultEntry, _result),
    (t.ExchangeEntry, _exchange),
    (t.ContextChangeEntry, _change),
    (t.RunStartEntry, _run_start),
    (t.StopEntry, _stop),
    (t.ExtraDataEntry, _extra_data),
    (t.ErrorEntry, _error),
)


def _line(entry: t.HistoryEntry) -> str:
    """``[turn N] kind`` followed by what the entry holds, in the short form of its class."""
    head = f"[turn {entry.turn}] {entry.kind}"
    for cls, tail in _TAILS:
        if isinstance(entry, cls):
            return head + tail(entry)
    return head  # pragma: no cover - every entry class is handled above


def _turns(n: int) -> str:
    return "1 turn" if n == 1 else f"{n} turns"


def history_lines(history: Iterable[t.HistoryEntry], stopped: t.Stopped | None, finished: bool, turn: int) -> str:
    """``str(state)``: one line per entry, then ``done: {why} ({turns})`` when a stop is set or the State is
    finished; joined with newlines (no newline at the end)."""
    lines = [_line(entry) for entry in history]
    if stopped is not None:
        lines.append(f"done: {stopped} ({_turns(turn)})")
    elif finished:
        lines.append(f"done: stopped by finish ({_turns(turn)})")
    return "\n".join(lines)
