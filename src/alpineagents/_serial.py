"""The saved form of history: history entries, the info dict and the values inside them, as plain JSON values.

Not public API, but a fixed module: the stores and tests import these names. Anything that changes what they write
needs a new `VERSION`. The reading side lives in `alpineagents._history.decode` and is re-exported here.

Writing (`*_to_dict`) builds fresh `dict`/`list` values made only of JSON types (never tuples or frozen
containers). Reading (`*_from_dict`) builds each value as its class would, so lists become tuples and JSON
values are frozen again, and a loaded value compares equal to the saved one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from alpineagents._history.decode import (
    agent_info_from_dict,
    entry_from_dict,
    message_from_dict,
    stopped_from_dict,
    time_from_str,
    usage_from_dict,
)
from alpineagents._history.json_values import answer, plain
from alpineagents._values.budget import StoppedForBudget, budget_stop_to_dict
from alpineagents.errors import fix_message
from alpineagents.types import (
    AgentInfo,
    ContextChange,
    ErrorEntry,
    Exchange,
    ExchangeEntry,
    ExtraDataEntry,
    HistoryEntry,
    Image,
    Message,
    ModelEvent,
    ModelRequestEntry,
    RawBlock,
    Reply,
    RequestInput,
    RunStartEntry,
    Stopped,
    StoppedByFinish,
    StoppedByLimit,
    StoppedByPermission,
    StoppedByUntil,
    StoppedForApproval,
    TextBlock,
    ToolCall,
    ToolResultBlock,
    ToolResultEntry,
    Usage,
)

__all__ = [
    "VERSION",
    "MIN_VERSION",
    "InfoDict",
    "check_version",
    "info_to_dict",
    "info_from_dict",
    "plain",
    "answer",
    "entry_to_dict",
    "entry_from_dict",
    "message_to_dict",
    "message_from_dict",
    "usage_to_dict",
    "usage_from_dict",
    "time_to_str",
    "time_from_str",
    "stopped_to_dict",
    "stopped_from_dict",
    "agent_info_to_dict",
    "agent_info_from_dict",
]

VERSION = 5
"""The format this library writes."""

MIN_VERSION = 4
"""The oldest format this library reads."""


class InfoDict(TypedDict):
    """The info dict of one saved State: what a listing shows, plus the format version `v`."""

    v: int
    first_message: str | None
    created_at: str | None
    updated_at: str | None
    turn: int
    stopped: dict[str, Any] | None
    finished: bool
    parent_id: NotRequired[str | None]


_INFO_KEYS = ("first_message", "created_at", "updated_at", "turn", "stopped", "finished")


# ---------------------------------------------------------------------------------------------------------------
# Versions and the info dict


def check_version(state_id: str, data: Mapping[str, Any]) -> None:
    """Raise `ValueError` unless `data["v"]` is a format this library reads (`MIN_VERSION` to `VERSION`)."""
    v = data.get("v")
    if type(v) is not int:
        raise ValueError(
            fix_message(
                f"saved State {state_id!r} has no format version in its info, so it was not saved by alpineagents "
                "or is damaged",
                "check that the Store returns what it was given to write",
            )
        )
    if v < MIN_VERSION:
        release = ", 0.4.x" if v == 3 else ""
        raise ValueError(
            fix_message(
                f"saved State {state_id!r} was saved by an older alpineagents (format {v}{release}); 0.5 cannot load it",
                "open it with the alpineagents version that saved it, or start a new State",
            )
        )
    if v > VERSION:
        raise ValueError(
            fix_message(
                f"saved State {state_id!r} was saved by a newer alpineagents (format {v}); this alpineagents reads "
                f"formats {MIN_VERSION} to {VERSION}",
                "upgrade alpineagents to load it",
            )
        )


def info_to_dict(
    *,
    first_message: str | Message | None,
    created_at: datetime | None,
    updated_at: datetime | None,
    turn: int,
    stopped: Stopped | None,
    finished: bool,
    parent_id: str | None = None,
) -> InfoDict:
    """The info dict: exactly the keys `v`, `first_message`, `created_at`, `updated_at`, `turn`, `stopped`, `finished`,
    `parent_id`, in that order.

    `first_message` is the text of the State's first user message (a `Message` is reduced to its text); `""`
    becomes `None`.
    """
    if isinstance(first_message, Message):
        first_message = first_message.text
    return {
        "v": VERSION,
        "first_message": first_message or None,
        "created_at": None if created_at is None else created_at.isoformat(),
        "updated_at": None if updated_at is None else updated_at.isoformat(),
        "turn": turn,
        "stopped": stopped_to_dict(stopped),
        "finished": bool(finished),
        "parent_id": parent_id,
    }


def info_from_dict(state_id: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The `StateInfo` keyword arguments (all but `id`) read from an info dict (a format-5 info needs `parent_id`).

    Raises:
        ValueError: No, an older or a newer format version; a required key is missing.
    """
    check_version(state_id, data)
    required = _INFO_KEYS + ("parent_id",) if data["v"] >= 5 else _INFO_KEYS
    missing = [key for key in required if key not in data]
    if missing:
        raise ValueError(
            fix_message(
                f"saved State {state_id!r} is damaged: its info has no {', '.join(missing)}",
                "check that the Store returns what it was given to write",
            )
        )
    created, updated = data["created_at"], data["updated_at"]
    return {
        "first_message": data["first_message"],
        "created_at": None if created is None else time_from_str(created),
        "updated_at": None if updated is None else time_from_str(updated),
        "turn": data["turn"],
        "stopped": stopped_from_dict(data["stopped"]),
        "finished": data["finished"],
        "parent_id": data.get("parent_id"),
    }


# ---------------------------------------------------------------------------------------------------------------
# Times, usage, calls, stops, agent info


def time_to_str(at: datetime) -> str:
    """`at.isoformat()`, e.g. `"2026-01-01T09:00:00+00:00"`."""
    return at.isoformat()


def usage_to_dict(usage: Usage) -> dict[str, Any]:
    """The usage object: all six keys, `cost` a number or `null`."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "requests": usage.requests,
        "cost": plain(usage.cost, "Usage.cost"),
    }


def _call_to_dict(call: ToolCall) -> dict[str, Any]:
    return {"name": call.name, "args": plain(call.args, f"tool call {call.name} args"), "id": call.id}


def stopped_to_dict(stopped: Stopped | None) -> dict[str, Any] | None:
    """The stop object (`{"kind": "until" | "limit" | "finish" | "permission", ...}`), or `None`.

    Raises:
        TypeError: `stopped` is not one of the four stop classes (or the finish answer is not JSON).
    """
    if stopped is None:
        return None
    cls = type(stopped)
    if cls is StoppedByUntil:
        return {"kind": "until", "name": stopped.name}  # pyright: ignore[reportAttributeAccessIssue]
    if cls is StoppedByLimit:
        return {"kind": "limit", "turns": stopped.turns}  # pyright: ignore[reportAttributeAccessIssue]
    if cls is StoppedByFinish:
        return {"kind": "finish", "answer": plain(stopped.answer, "the finish() answer")}  # pyright: ignore
    if cls is StoppedForBudget:  # a limit stop to a reader that does not know "budget"
        return {"kind": "limit", "turns": 0, "budget": budget_stop_to_dict(stopped)}  # pyright: ignore
    if cls is StoppedForApproval:  # a permission stop to a reader that does not know "waiting"
        return {
            "kind": "permission",
            "call": _call_to_dict(stopped.call),  # pyright: ignore[reportAttributeAccessIssue]
            "permission": stopped.permission,  # pyright: ignore[reportAttributeAccessIssue]
            "waiting": [_call_to_dict(call) for call in stopped.calls],  # pyright: ignore[reportAttributeAccessIssue]
        }
    if cls is StoppedByPermission:
        return {
            "kind": "permission",
            "call": _call_to_dict(stopped.call),  # pyright: ignore[reportAttributeAccessIssue]
            "permission": stopped.permission,  # pyright: ignore[reportAttributeAccessIssue]
        }
    raise TypeError(f"cannot save a stop reason of type {cls.__name__}")


def agent_info_to_dict(info: AgentInfo) -> dict[str, Any]:
    """The agent object of a `run_start` entry."""
    return {
        "name": info.name,
        "model": info.model,
        "system_sha256": info.system_sha256,
        "tools": list(info.tools),
        "mcp_servers": list(info.mcp_servers),
    }


# ---------------------------------------------------------------------------------------------------------------
# Blocks and messages


def _image_to_dict(image: Image) -> dict[str, Any]:
    return {"type": "image", "media_type": image.media_type, "data": image.base64}


def _result_to_json(content: str | tuple[TextBlock | Image, ...]) -> Any:
    if isinstance(content, str):
        return content
    return [
        _image_to_dict(block) if isinstance(block, Image) else {"type": "text", "text": block.text} for block in content
    ]


def _block_to_dict(block: object) -> dict[str, Any]:
    if type(block) is TextBlock:
        return {"type": "text", "text": block.text}
    if type(block) is ToolCall:
        return {
            "type": "tool_call",
            "name": block.name,
            "args": plain(block.args, f"tool call {block.name} args"),
            "id": block.id,
        }
    if type(block) is ToolResultBlock:
        return {
            "type": "tool_result",
            "call_id": block.call_id,
            "content": _result_to_json(block.content),
            "name": block.name,
            "is_error": block.is_error,
        }
    if type(block) is Image:
        return _image_to_dict(block)
    if type(block) is RawBlock:
        return {"type": "raw", "provider": block.provider, "data": plain(block.data, f"{block.provider} block")}
    raise TypeError(f"cannot save a message block of type {type(block).__name__}")


def message_to_dict(message: Message) -> dict[str, Any]:
    """The message object; `stop_reason` only when it is set.

    Raises:
        TypeError: A block of an unknown type, or a value that is not JSON.
    """
    result: dict[str, Any] = {
        "role": message.role,
        "content": [_block_to_dict(block) for block in message.content],
        "tokens": message.tokens,
    }
    if message.stop_reason is not None:
        result["stop_reason"] = message.stop_reason
    return result


# ---------------------------------------------------------------------------------------------------------------
# Entries


def _reply_to_json(reply: Reply) -> dict[str, Any]:
    return {
        "message": message_to_dict(reply.message),
        "usage": usage_to_dict(reply.usage),
        "context_tokens": reply.context_tokens,
        "stop_reason": reply.stop_reason,
        "model": reply.model,
    }


def _exchange_to_json(exchange: Exchange) -> dict[str, Any]:
    return {"question": exchange.question, "answer": plain(exchange.answer, f"answer to {exchange.question!r}")}


def _event_to_json(event: ModelEvent) -> dict[str, Any]:
    return {"kind": event.kind, "message": event.message, "data": plain(event.data, "ModelEvent.data")}


def _change_to_json(change: ContextChange) -> dict[str, Any]:
    return {
        "kind": change.kind,
        "before_tokens": change.before_tokens,
        "after_tokens": change.after_tokens,
        "summary": change.summary,
        "kept": change.kept,
        "cleared": list(change.cleared),
        "messages": [message_to_dict(message) for message in change.messages],
        "restored_to": change.restored_to,
        "usage": None if change.usage is None else usage_to_dict(change.usage),
    }


def _same(content: str) -> str:
    return content


def _extra_data_to_json(content: Mapping[str, Any]) -> Any:
    return plain(content, "state.extra_data")


_CONTENT_TO_JSON: dict[str, Callable[[Any], Any]] = {
    "model_request": _same,
    "error": _same,
    "tool_result": _result_to_json,
    "user": _result_to_json,
    "notice": _result_to_json,
    "model_reply": _reply_to_json,
    "run_start": agent_info_to_dict,
    "stop": stopped_to_dict,
    "extra_data": _extra_data_to_json,
    "ask": _exchange_to_json,
    "human": _exchange_to_json,
    "model_event": _event_to_json,
    "context_change": _change_to_json,
}
"""The JSON form of an entry's ``content``, by the entry's kind."""


def _content_to_json(entry: HistoryEntry) -> Any:
    to_json = _CONTENT_TO_JSON.get(entry.kind)
    if to_json is None:
        raise TypeError(f"cannot save a history entry of kind {entry.kind!r}")
    return to_json(entry.content)


def _request_input_to_dict(sent: RequestInput) -> dict[str, Any]:
    """The JSON object of a request's input: both digests, then each text this request is the first to hold."""
    result: dict[str, Any] = {"system_sha256": sent.system_sha256, "tools_sha256": sent.tools_sha256}
    if sent.system is not None:
        result["system"] = sent.system
    if sent.tools is not None:
        result["tools"] = plain(sent.tools, "the tool specs of a request")
    return result


def entry_to_dict(entry: HistoryEntry, seq: int) -> dict[str, Any]:
    """The JSON object of one history entry: `seq`, `kind`, `turn`, `at`, `content`, then the keys that
    are set (`call`, `outcome`, `late`, `usage`, `child_ids`, `parent_id`, `parent_call_id`, `removed`).

    Raises:
        TypeError: A value inside cannot be saved as JSON (the message says where).
    """
    result: dict[str, Any] = {
        "seq": seq,
        "kind": entry.kind,
        "turn": entry.turn,
        "at": entry.at.isoformat(),
        "content": _content_to_json(entry),
    }
    if isinstance(entry, ToolResultEntry):
        result["call"] = _call_to_dict(entry.call)
        result["outcome"] = entry.outcome.value
        if entry.late:
            result["late"] = True
        if entry.usage is not None:
            result["usage"] = usage_to_dict(entry.usage)
        if entry.child_ids:
            result["child_ids"] = list(entry.child_ids)
    elif isinstance(entry, ErrorEntry):
        if entry.call is not None:
            result["call"] = _call_to_dict(entry.call)
        if entry.traceback is not None:
            result["traceback"] = entry.traceback
    elif type(entry) is ModelRequestEntry:
        if entry.input is not None:
            result["input"] = _request_input_to_dict(entry.input)
    elif isinstance(entry, ExchangeEntry):
        if entry.usage is not None:
            result["usage"] = usage_to_dict(entry.usage)
    elif isinstance(entry, RunStartEntry):
        if entry.parent_id is not None:
            result["parent_id"] = entry.parent_id
            result["parent_call_id"] = entry.parent_call_id
    elif isinstance(entry, ExtraDataEntry):
        if entry.removed:
            result["removed"] = list(entry.removed)
    return result
