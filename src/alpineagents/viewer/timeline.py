"""A run's saved history as the items of its timeline page, in history order.

Each entry becomes one `Item`: a heading, small facts, pieces of content (text, thinking, tool calls, results,
JSON), links to the subagent runs it started, and the entry's saved JSON. The text stays plain text here; the
templates escape it. A tool result's duration is the time from the moment its call was ready (the reply that asked
for it, or the latest permission answer or refusal after that reply) to its result: the history keeps no start
time, so for tools that ran one after another it includes the wait for the tools before it. A reply's time is
from its request to the reply. A reply whose model is `program` is a call the program made (`agent.run_tool`): it
shows as "the program called ...", with no usage or time. Images are shown inline from the saved data (PNG, JPEG, GIF and WebP only).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from alpineagents._history.closing import UNSAVED_RESULT
from alpineagents._replay.fork import fork_origin
from alpineagents._turn.program import PROGRAM
from alpineagents.types import (
    IMAGE_TYPES,
    ContextChange,
    HistoryEntry,
    Image,
    Message,
    ModelReplyEntry,
    RawBlock,
    RunStartEntry,
    TextBlock,
    ToolCall,
    ToolOutcomeKind,
    ToolResultBlock,
    ToolResultEntry,
    format_call,
    result_text,
)
from alpineagents.viewer.approvals import approval_label

FOLD_CHARS = 1500
"""Content longer than this many characters is folded (its start shows, the rest opens with a click)."""

FOLD_LINES = 24
"""Content with more lines than this is folded."""

GOOD = frozenset({ToolOutcomeKind.DONE})
REFUSED = frozenset({ToolOutcomeKind.DENIED, ToolOutcomeKind.CANCELLED, ToolOutcomeKind.INPUT_ERROR})


@dataclass(frozen=True)
class Piece:
    """One piece of content: `style` is text, thinking, call, result, json or note."""

    title: str
    text: str
    style: str = "text"

    @property
    def folded(self) -> bool:
        """True when the piece is long enough to be folded (an image never is)."""
        if self.style == "image":
            return False
        return len(self.text) > FOLD_CHARS or self.text.count("\n") > FOLD_LINES

    @property
    def preview(self) -> str:
        """The start of a folded piece."""
        return "\n".join(self.text[: FOLD_CHARS // 3].splitlines()[:8])


@dataclass
class Item:
    """One history entry as the timeline shows it."""

    seq: int
    kind: str
    label: str
    at: datetime
    tone: str = ""
    badge: str = ""
    facts: list[str] = field(default_factory=list)
    pieces: list[Piece] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    raw: str = ""
    duration: float | None = None
    turn: int = 0
    input_summary: str = ""
    """For a model request: what it sent, in a line (its full input opens below it)."""


def duration_text(seconds: float) -> str:
    """A duration to the millisecond: `340 ms` under a second, else `2.481 s`."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.3f} s"


def as_json(value: Any) -> str:
    """`value` as indented JSON text (frozen containers included; anything else through `str`)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(value, (tuple, list)):
        return list(value)  # pyright: ignore[reportUnknownArgumentType]
    return str(value)


def content_pieces(title: str, content: str | Sequence[TextBlock | Image], style: str = "text") -> list[Piece]:
    """The pieces of a user message's or a tool result's content: its text, and each image as an image."""
    if isinstance(content, str):
        return [Piece(title, content, style)]
    return [
        _image_piece(block) if isinstance(block, Image) else Piece(title, _block_text(block), style)
        for block in content
    ]


def _image_piece(image: Image) -> Piece:
    """An image shown inline (as a data: address) when its type is one a browser shows safely."""
    title = f"image {image.media_type or ''} ({len(image.data)} bytes)"
    if image.media_type not in IMAGE_TYPES:
        return Piece(title, "(not shown: unknown image type)", "note")
    return Piece(title, f"data:{image.media_type};base64,{image.base64}", "image")


def _block_text(block: object) -> str:
    return block.text if isinstance(block, TextBlock) else str(block)


def message_pieces(message: Message) -> list[Piece]:
    """The pieces of one message: its text, thinking, tool calls and other provider blocks, in order."""
    pieces: list[Piece] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            pieces.append(Piece("text", block.text))
        elif isinstance(block, Image):
            pieces.append(_image_piece(block))
        elif isinstance(block, ToolCall):
            pieces.append(Piece(format_call(block), as_json(block.args), "call"))
        elif isinstance(block, RawBlock):
            pieces.append(_raw_piece(block))
        elif isinstance(block, ToolResultBlock):  # a tool's result as the next request sends it
            title = f"result of {block.name} ({block.call_id})" + (", an error" if block.is_error else "")
            pieces.append(Piece(title, result_text(block.content), "result"))
        else:
            pieces.append(Piece(type(block).__name__, _block_text(block), "note"))
    return pieces


def _raw_piece(block: RawBlock) -> Piece:
    kind = str(block.data.get("type", ""))
    thinking = block.data.get("thinking")
    if isinstance(thinking, str):
        return Piece("thinking", thinking, "thinking")
    if "redacted" in kind:
        return Piece("thinking (redacted by the provider)", "", "thinking")
    return Piece(f"{block.provider} block {kind}".strip(), as_json(block.data), "json")


def _usage_fact(entry: ModelReplyEntry) -> list[str]:
    usage = entry.content.usage
    facts = [f"{usage.input_tokens} in", f"{usage.output_tokens} out"]
    if usage.cache_read_tokens or usage.cache_write_tokens:
        facts.append(f"cache {usage.cache_read_tokens} read / {usage.cache_write_tokens} written")
    if usage.cost is not None:
        facts.append(f"${usage.cost:.4f}")
    if entry.content.stop_reason:
        facts.append(f"stop: {entry.content.stop_reason}")
    return facts


def _reply(item: Item, entry: ModelReplyEntry, asked: datetime | None) -> None:
    reply = entry.content
    if reply.model == PROGRAM:  # a call the program made with run_tool: no model, no usage, no time
        item.label = "the program called " + ", ".join(call.name for call in reply.tool_calls)
        item.badge = "program"
        item.pieces = message_pieces(reply.message)
        return
    item.label = f"reply from {reply.model or 'the model'}"
    item.facts = _usage_fact(entry)
    if asked is not None:
        item.duration = max(0.0, (entry.at - asked).total_seconds())
        item.facts.insert(0, f"took {duration_text(item.duration)}")
    item.pieces = message_pieces(reply.message)
    if reply.cut_off:
        item.tone, item.badge = "warn", "cut off"


def _tool(item: Item, entry: ToolResultEntry, ready: datetime | None) -> None:
    outcome = entry.outcome
    item.label = f"{format_call(entry.call)}"
    item.badge = outcome.value + (" (late)" if entry.late else "")
    if entry.content == UNSAVED_RESULT:  # the process died while it ran
        item.badge = "effect unknown"
    item.tone = "ok" if outcome in GOOD else ("warn" if outcome in REFUSED else "bad")
    item.pieces = content_pieces("result", entry.content, "result")
    item.links = list(entry.child_ids)
    if ready is not None and outcome not in REFUSED:
        item.duration = max(0.0, (entry.at - ready).total_seconds())
        item.facts.append(duration_text(item.duration))
    if entry.usage is not None:
        item.facts.append(f"subagents: {entry.usage.input_tokens} in, {entry.usage.output_tokens} out")


def _context(item: Item, change: ContextChange) -> None:
    labels = {
        "compact": "context compacted",
        "clear_tool_results": "tool results cleared",
        "import": "context imported",
        "restore": "context restored",
    }
    item.label = labels.get(change.kind, change.kind)
    item.facts = [f"{change.before_tokens} → {change.after_tokens} tokens"]
    if change.kind == "import":
        item.facts = [f"{len(change.messages)} messages"]
        for message in change.messages:
            item.pieces += [Piece(message.role, p.text, p.style) for p in message_pieces(message)] or [
                Piece(message.role, "", "note")
            ]
    elif change.summary is not None:
        item.pieces.append(Piece(f"summary (the latest {change.kept} messages kept)", change.summary))
    if change.cleared:
        item.facts.append(f"{len(change.cleared)} results cleared")
    if change.restored_to is not None:
        item.facts.append(f"back to entry {change.restored_to}")
    item.tone = "warn" if change.kind != "import" else ""


def _run_start(item: Item, entry: RunStartEntry) -> None:
    info = entry.content
    item.label = f"run started by {info.name or 'an agent'} on {info.model}"
    if info.tools:
        item.facts.append("tools: " + ", ".join(info.tools))
    if info.mcp_servers:
        item.facts.append("MCP: " + ", ".join(info.mcp_servers))
    if entry.parent_id is not None:
        item.facts.append(f"subagent of {entry.parent_id} (call {entry.parent_call_id})")
        item.links = [entry.parent_id]


def _simple(item: Item, entry: HistoryEntry) -> None:
    """Fills the item of an entry with one piece of content or none."""
    if entry.kind == "user" or entry.kind == "notice":
        item.label = "user message" if entry.kind == "user" else "notice"
        item.pieces = content_pieces(entry.kind, entry.content)
    elif entry.kind == "model_request":
        what = "the program calls a tool" if entry.content == PROGRAM else f"request to {entry.content}"
        item.label = f"turn {entry.turn}: {what}"
    elif entry.kind == "model_event":
        item.label, item.tone = f"model {entry.content.kind}: {entry.content.message}", "warn"
        item.pieces = [Piece("data", as_json(entry.content.data), "json")] if entry.content.data else []
        origin = fork_origin([entry])
        if origin is not None:  # the copy `alpineagents fork` made: where it came from
            item.label, item.tone, item.badge = entry.content.message, "", "fork"
            item.links = [origin[0]]
    elif entry.kind == "ask" or entry.kind == "human":
        who = "the model" if entry.kind == "ask" else "the person"
        item.label = f"asked {who}"
        marked = approval_label(entry)  # a call waiting for approval, or a person's decision about it
        if marked is not None:
            item.label, item.tone, item.badge = marked
        item.pieces = [
            Piece("question", entry.content.question),
            Piece("answer", as_json(entry.content.answer), "json"),
        ]
    elif entry.kind == "stop":
        item.label = str(entry.content) if entry.content is not None else "stop cleared"
        item.badge = "stop"
        answer = getattr(entry.content, "answer", None)
        item.pieces = [Piece("answer", as_json(answer), "json")] if answer is not None else []
    elif entry.kind == "extra_data":
        item.label = "extra data changed"
        item.pieces = [Piece("set", as_json(entry.content), "json")]
        item.facts = ["removed: " + ", ".join(entry.removed)] if entry.removed else []
    elif entry.kind == "error":
        item.label, item.tone, item.badge = "error", "bad", "error"
        item.pieces = [Piece("error", entry.content, "result")]
        if entry.traceback is not None:
            lines = entry.traceback.count("\n")
            item.pieces.append(Piece(f"traceback ({lines} lines)", entry.traceback, "traceback"))
        item.facts = [f"in {format_call(entry.call)}"] if entry.call is not None else []


def build(history: Sequence[HistoryEntry], raw: Sequence[Mapping[str, Any]]) -> list[Item]:
    """The timeline items of `history`, each with the saved JSON of its entry from `raw`."""
    items: list[Item] = []
    ready: datetime | None = None
    asked: datetime | None = None
    for seq, entry in enumerate(history):
        item = Item(seq, entry.kind, entry.kind, entry.at, turn=entry.turn)
        if entry.kind == "model_reply":
            _reply(item, entry, asked)
        elif entry.kind == "tool_result":
            _tool(item, entry, ready)
        elif entry.kind == "context_change":
            _context(item, entry.content)
        elif entry.kind == "run_start":
            _run_start(item, entry)
        else:
            _simple(item, entry)
        ready = _ready_after(entry, ready)
        asked = entry.at if entry.kind == "model_request" else asked
        item.raw = as_json(raw[seq]) if seq < len(raw) else ""
        items.append(item)
    return items


def _ready_after(entry: HistoryEntry, ready: datetime | None) -> datetime | None:
    """When the next tool call was ready to run, after `entry`."""
    if entry.kind == "model_reply":
        return entry.at if entry.content.tool_calls else None
    if entry.kind == "human" and ready is not None:
        return entry.at
    if entry.kind == "tool_result" and entry.outcome in REFUSED and ready is not None:
        return entry.at
    return ready
