"""Comparing a request with the one a stored run recorded: the first place they differ, in words, both sides shown.

The order of the checks is the order a reader wants: the settings (another model or temperature explains
everything after), the system prompt, the tools (by name, then each tool's description and input schema), then
the messages, one block at a time. The system prompt is compared by its SHA-256, the only thing a history keeps of
it, and the text says so. Tool specs and settings are compared only when the run was recorded with them (through
a `Recorder`); otherwise only the tool names its `run_start` keeps are compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from alpineagents._frozen import thaw
from alpineagents._replay.recorded import Recorded, sha256
from alpineagents.errors import fix_message
from alpineagents.types import Block, Image, Message, RawBlock, Request, TextBlock, ToolCall, ToolResultBlock

__all__ = ["IGNORABLE", "check_ignore", "first_difference", "shown"]

IGNORABLE = ("system", "tools", "tool_descriptions", "tool_schemas", "settings", "messages")
"""What a replay can be told not to compare: the system prompt, the tool specs altogether, only the tools'
descriptions, only their input schemas, the settings, the messages."""

_LIMIT = 240


def check_ignore(ignore: Iterable[str]) -> frozenset[str]:
    """`ignore` as a set, each item one of `IGNORABLE` (else a `ValueError` that lists them)."""
    if isinstance(ignore, str):
        ignore = (ignore,)
    chosen = frozenset(ignore)
    unknown = sorted(item for item in chosen if item not in IGNORABLE)
    if unknown:
        raise ValueError(
            fix_message(
                f"Replay(ignore=...) got {', '.join(map(repr, unknown))}, which it cannot ignore",
                f"Choose among {', '.join(IGNORABLE)}",
                'Replay(state, ignore={"tool_descriptions"})',
            )
        )
    return chosen


def shown(value: object, other: object = None) -> str:
    """`value` for a reader, on one line: a string as its `repr`, anything else as JSON. A long string is cut
    around the first character where it differs from `other` (when given)."""
    if isinstance(value, str):
        if len(value) <= _LIMIT:
            return repr(value)
        start = 0
        if isinstance(other, str):
            same = next((i for i, (a, b) in enumerate(zip(value, other, strict=False)) if a != b), len(other))
            start = max(0, same - _LIMIT // 3)
        cut = value[start : start + _LIMIT]
        return ("…" if start else "") + repr(cut) + ("…" if start + _LIMIT < len(value) else "")
    try:
        text = json.dumps(thaw(value), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _LIMIT * 2 else text[: _LIMIT * 2] + "…"


def _both(place: str, recorded: object, now: object) -> str:
    return f"{place}\n  recorded: {shown(recorded, now)}\n  now:      {shown(now, recorded)}"


def _block_name(block: Block) -> str:
    if isinstance(block, TextBlock):
        return "text"
    if isinstance(block, ToolCall):
        return f"tool call {block.name} ({block.id})"
    if isinstance(block, ToolResultBlock):
        return f"tool result of {block.name or 'a call'} ({block.call_id})"
    if isinstance(block, Image):
        return "image"
    if isinstance(block, RawBlock):
        return f"{block.provider} block"
    return type(block).__name__


def _block_parts(block: Block) -> dict[str, Any]:
    """The parts of a block a reader compares, by name."""
    if isinstance(block, TextBlock):
        return {"text": block.text}
    if isinstance(block, ToolCall):
        return {"name": block.name, "arguments": block.args, "id": block.id}
    if isinstance(block, ToolResultBlock):
        content = block.content
        if not isinstance(content, str):
            content = [part.text if isinstance(part, TextBlock) else _block_name(part) for part in content]
        return {"call id": block.call_id, "tool": block.name, "content": content, "is_error": block.is_error}
    if isinstance(block, Image):
        return {"media type": block.media_type, "bytes": len(block.data), "same image": hash(block.data)}
    if isinstance(block, RawBlock):
        return {"provider": block.provider, "data": block.data}
    return {"block": block}


def _message_difference(number: int, recorded: Message, now: Message) -> str | None:
    where = f"message {number} ({recorded.role})"
    if recorded.role != now.role:
        return _both(f"{where}: its role", recorded.role, now.role)
    for place, (old, new) in enumerate(zip(recorded.content, now.content, strict=False), start=1):
        if old == new:
            continue
        name = _block_name(old)
        if type(old) is not type(new):
            return _both(f"{where}, block {place}: the kind of block", name, _block_name(new))
        old_parts, new_parts = _block_parts(old), _block_parts(new)
        for part, value in old_parts.items():
            if new_parts.get(part) != value:
                return _both(f"{where}, block {place} ({name}): its {part}", value, new_parts.get(part))
    if len(recorded.content) != len(now.content):
        return _both(
            f"{where}: the blocks ({len(recorded.content)} recorded, {len(now.content)} now)",
            [_block_name(block) for block in recorded.content],
            [_block_name(block) for block in now.content],
        )
    return None


def _messages(recorded: Sequence[Message], now: Sequence[Message], skip: int = 0) -> str | None:
    """The first message that differs; the first `skip` are known to be the same."""
    for number in range(skip + 1, min(len(recorded), len(now)) + 1):
        found = _message_difference(number, recorded[number - 1], now[number - 1])
        if found is not None:
            return found
    if len(recorded) != len(now):
        longer, side = (recorded, "the recorded request") if len(recorded) > len(now) else (now, "this request")
        extra = longer[min(len(recorded), len(now))]
        return _both(
            f"the number of messages ({len(recorded)} recorded, {len(now)} now); the first one only {side} has is "
            f"message {min(len(recorded), len(now)) + 1} ({extra.role})",
            [_block_name(block) for block in recorded[len(now)].content] if len(recorded) > len(now) else None,
            [_block_name(block) for block in now[len(recorded)].content] if len(now) > len(recorded) else None,
        )
    return None


def _system(recorded: Recorded, request: Request) -> str | None:
    agent = recorded.agent
    facts = recorded.facts
    if facts is not None:
        old = facts.get("system_sha256")
    elif agent is not None:
        old = agent.system_sha256
    else:
        return None
    new = sha256(request.system)
    if old == new:
        return None
    start = "" if request.system is None else f" (this one starts {shown(request.system[:120])})"
    return (
        "the system prompt. The stored run keeps only the SHA-256 of its system prompt, so the hashes are compared"
        f"{start}\n  recorded: sha256 {old}\n  now:      sha256 {new}"
    )


def _tools(recorded: Recorded, request: Request, ignore: frozenset[str]) -> str | None:
    now = {spec.name: spec for spec in request.tools}
    facts = recorded.facts
    if facts is None:  # only the names of the Agent's own tools are kept (MCP tools are named server__tool)
        if recorded.agent is None:
            return None
        servers = tuple(f"{name}__" for name in recorded.agent.mcp_servers)
        names = sorted(name for name in now if not name.startswith(servers) or not servers)
        old_names = sorted(recorded.agent.tools)
        return None if names == old_names else _both("the names of the tools", old_names, names)
    old = {item["name"]: item for item in facts.get("tools", ())}
    if sorted(old) != sorted(now):
        return _both("the names of the tools", sorted(old), sorted(now))
    for name, item in old.items():
        spec = now[name]
        if "tool_descriptions" not in ignore and item.get("description") != spec.description:
            return _both(f"tool {name!r}: its description", item.get("description"), spec.description)
        if "tool_schemas" not in ignore and thaw(item.get("input_schema")) != thaw(spec.input_schema):
            return _both(f"tool {name!r}: its input schema", item.get("input_schema"), spec.input_schema)
    return None


def _settings(recorded: Recorded, request: Request, settings: Mapping[str, Any] | None) -> str | None:
    old = (recorded.facts or {}).get("settings") or {}
    now: dict[str, Any] = dict(settings or {})
    now["tool_choice"] = request.tool_choice
    for key, value in old.items():
        if key in now and now[key] != value:
            return _both(f"the setting {key}", value, now[key])
    return None


def first_difference(
    recorded: Recorded, request: Request, settings: Mapping[str, Any] | None, ignore: frozenset[str], skip: int = 0
) -> str | None:
    """Where `request` first differs from `recorded` and how (both sides shown), or `None` when it does not. The
    first `skip` messages are known to be the same (checked with an earlier request)."""
    checks = (
        ("settings", lambda: _settings(recorded, request, settings)),
        ("system", lambda: _system(recorded, request)),
        ("tools", lambda: _tools(recorded, request, ignore)),
        ("messages", lambda: _messages(recorded.messages, request.messages, skip)),
    )
    for name, check in checks:
        if name not in ignore:
            found = check()
            if found is not None:
                return found
    return None
