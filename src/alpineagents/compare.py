"""Comparing two runs: `diff(a, b)` aligns their histories step by step and marks where they part.

A step is what a reader compares in a run: a user message or notice, a model reply (its text and its tool calls),
a tool result, a compaction or other context change, a question and its answer, an error, a stop. Ids and times
are left out (every run draws new call ids), so two runs that said and did the same things have equal steps. The
steps are aligned the way `difflib` aligns lines (a longest common subsequence), so a run that says one thing
more still lines up after it. `alpineagents diff A B` prints the result; the viewer's compare page shows it side
by side.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from alpineagents._frozen import thaw
from alpineagents._values.construct import fields_json
from alpineagents.state import State
from alpineagents.types import HistoryEntry, Image, Message, TextBlock, ToolCall, ToolResultContent

__all__ = ["diff", "RunDiff", "Step", "Row", "Side"]


@dataclass(frozen=True)
class Step:
    """One step of a run: its `kind`, a one-line `text` for a reader, the `index` of its history entry, and the
    `key` two steps are compared by (no ids, no times)."""

    kind: str
    text: str
    index: int
    key: str = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        """`{"kind", "text", "index"}`."""
        return {"kind": self.kind, "text": self.text, "index": self.index}


@dataclass(frozen=True)
class Row:
    """One line of the alignment: the step of each side (`None` where that side has nothing there), and whether
    they are the same."""

    a: Step | None
    b: Step | None
    same: bool

    def to_json(self) -> dict[str, Any]:
        """`{"a", "b", "same"}`."""
        return {
            "a": None if self.a is None else self.a.to_json(),
            "b": None if self.b is None else self.b.to_json(),
            "same": self.same,
        }


@dataclass(frozen=True)
class Side:
    """The totals of one run: id, turns, tokens, cost (`None` when unknown), seconds spent running (each run from
    its `run_start` to its `stop`, so the time between runs is not counted), the number of tool calls, the
    models that answered, its answer and why it stopped."""

    id: str
    turns: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    seconds: float
    tool_calls: int
    models: tuple[str, ...]
    answer: Any
    stopped: str | None

    def to_json(self) -> dict[str, Any]:
        """The fields as JSON values."""
        return fields_json(self)


@dataclass(frozen=True)
class RunDiff:
    """Two runs aligned. `rows` in order; `first_divergence` is the index in `rows` of the first row that is not
    the same (`None` when the runs did the same things); `a` and `b` are the totals of each side."""

    a: Side
    b: Side
    rows: tuple[Row, ...]
    first_divergence: int | None

    @property
    def same(self) -> bool:
        """True when every step is the same on both sides."""
        return self.first_divergence is None

    @property
    def differences(self) -> tuple[Row, ...]:
        """The rows that are not the same: calls, results and replies that differ, and steps one side lacks."""
        return tuple(row for row in self.rows if not row.same)

    def to_json(self) -> dict[str, Any]:
        """The whole comparison as JSON values (what `alpineagents diff --json` prints)."""
        return {
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "same": self.same,
            "first_divergence": self.first_divergence,
            "rows": [row.to_json() for row in self.rows],
        }

    def __str__(self) -> str:
        lines = [_side_line("A", self.a), _side_line("B", self.b)]
        if self.first_divergence is None:
            lines.append(f"the runs are the same ({len(self.rows)} steps)")
        else:
            lines.append(f"first divergence at step {self.first_divergence + 1} of {len(self.rows)}")
        for number, row in enumerate(self.rows, start=1):
            mark = ">>" if number - 1 == self.first_divergence else "  "
            if row.same:
                assert row.a is not None
                lines.append(f"{mark} {number:>3}   {row.a.text}")
                continue
            if row.a is not None:
                lines.append(f"{mark} {number:>3} A {row.a.text}")
            if row.b is not None:
                lines.append(f"{'  ' if row.a is not None else mark} {number:>3} B {row.b.text}")
        return "\n".join(lines)


def _side_line(name: str, side: Side) -> str:
    cost = "cost unknown" if side.cost is None else f"${side.cost:.4f}"
    models = ", ".join(side.models) or "no model"
    return (
        f"{name}: {side.id}: {side.turns} turns, {side.input_tokens} input + {side.output_tokens} output tokens, "
        f"{cost}, {side.seconds:.1f} s, {side.tool_calls} tool calls ({models})"
    )


def _short(text: str, limit: int = 160) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _json(value: object) -> str:
    return json.dumps(thaw(value), sort_keys=True, ensure_ascii=False, default=repr)


def _call(call: ToolCall) -> str:
    args = ", ".join(f"{name}={_json(value)}" for name, value in call.args.items())
    return f"{call.name}({args})"


def _content_text(content: ToolResultContent) -> str:
    if isinstance(content, str):
        return content
    return " ".join(
        block.text
        if isinstance(block, TextBlock)
        else (f"[image {block.media_type}]" if isinstance(block, Image) else "")
        for block in content
    )


def _message_step(kind: str, message: Message, index: int) -> Step:
    text = _content_text(tuple(block for block in message.content if isinstance(block, TextBlock | Image)))
    return Step(kind, f"{kind}: {_short(text)}", index, _json([kind, text]))


def _step(entry: HistoryEntry, index: int) -> list[Step]:
    if entry.kind == "user" or entry.kind == "notice":
        return [_message_step(entry.kind, entry.message, index)]
    if entry.kind == "model_reply":
        reply = entry.content
        calls = [_call(call) for call in reply.tool_calls]
        said = _short(reply.text) if reply.text else ""
        text = "reply: " + " · ".join(part for part in (said, *(f"calls {call}" for call in calls)) if part)
        return [Step("reply", text if said or calls else "reply: (empty)", index, _json(["reply", reply.text, calls]))]
    if entry.kind == "tool_result":
        content = _content_text(entry.content)
        text = f"result of {_call(entry.call)}: {_short(content)} ({entry.outcome.value})"
        return [Step("result", text, index, _json(["result", _call(entry.call), content, entry.outcome.value]))]
    if entry.kind == "context_change":
        change = entry.content
        if change.kind == "import":
            return [_message_step(message.role, message, index) for message in change.messages]
        text = f"context: {change.kind}" + (f": {_short(change.summary)}" if change.summary else "")
        return [Step("context", text, index, _json(["context", change.kind, change.summary, list(change.cleared)]))]
    if entry.kind == "ask" or entry.kind == "human":
        answer = _json(entry.content.answer)
        text = f"{entry.kind}: {_short(entry.content.question, 80)} → {_short(answer, 80)}"
        return [Step(entry.kind, text, index, _json([entry.kind, entry.content.question, answer]))]
    if entry.kind == "error":
        return [Step("error", f"error: {_short(entry.content)}", index, _json(["error", entry.content]))]
    if entry.kind == "stop" and entry.content is not None:
        said = str(entry.content)
        return [Step("stop", f"stop: {_short(said)}", index, _json(["stop", said]))]
    if entry.kind == "extra_data":
        text = f"extra data: {_short(_json(entry.content))}"
        return [Step("extra_data", text, index, _json(["extra_data", entry.content, list(entry.removed)]))]
    return []  # run_start, model_request, model_event, a cleared stop: bookkeeping, not something the run did


def steps(history: tuple[HistoryEntry, ...]) -> list[Step]:
    """The steps of a history, in order."""
    return [step for index, entry in enumerate(history) for step in _step(entry, index)]


def _running_seconds(history: tuple[HistoryEntry, ...]) -> float:
    """The seconds of each run added up: from its `run_start` to its `stop` (or, for a run that ended without
    one, to the last entry before the next `run_start`), so the time between runs is not counted."""
    total = 0.0
    start: datetime | None = None
    last: datetime | None = None
    for entry in history:
        if entry.kind == "run_start":
            if start is not None and last is not None:
                total += (last - start).total_seconds()
            start = last = entry.at
        elif start is not None:
            last = entry.at
            if entry.kind == "stop":
                total += (last - start).total_seconds()
                start = last = None
    if start is not None and last is not None:
        total += (last - start).total_seconds()
    return total


def side(state: State) -> Side:
    """The totals of `state`."""
    history = state.history
    usage = state.usage
    seconds = _running_seconds(history)
    models = dict.fromkeys(
        entry.content.model or "" for entry in history if entry.kind == "model_reply" and entry.content.model
    )
    if not models:
        models = dict.fromkeys(entry.content for entry in history if entry.kind == "model_request")
    calls = sum(1 for entry in history if entry.kind == "tool_result" and not entry.late)
    return Side(
        id=state.id,
        turns=state.turn,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost=usage.cost,
        seconds=seconds,
        tool_calls=calls,
        models=tuple(models),
        answer=state.answer,
        stopped=None if state.stopped is None else str(state.stopped),
    )


def diff(a: State, b: State) -> RunDiff:
    """Align the histories of `a` and `b` step by step, mark the first divergence and total each side."""
    for name, given in (("a", a), ("b", b)):
        if not isinstance(given, State):
            raise TypeError(f"diff() compares two States; {name} is {given!r} (load a stored run with store.load(id))")
    left, right = steps(a.history), steps(b.history)
    matcher = difflib.SequenceMatcher(None, [step.key for step in left], [step.key for step in right], autojunk=False)
    rows: list[Row] = []
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(Row(left[i], right[j], True) for i, j in zip(range(a1, a2), range(b1, b2), strict=True))
            continue
        count = max(a2 - a1, b2 - b1)
        for offset in range(count):
            old = left[a1 + offset] if a1 + offset < a2 else None
            new = right[b1 + offset] if b1 + offset < b2 else None
            rows.append(Row(old, new, False))
    first = next((number for number, row in enumerate(rows) if not row.same), None)
    return RunDiff(side(a), side(b), tuple(rows), first)
