"""The saved form of history: history entries, the info dict and the values inside them, as plain JSON values.

Not public API. Only `State` and the stores call these (06 §1, §3.3, §7, §8). Anything that changes what they
write needs a new `VERSION`.

Writing (`*_to_dict`) builds fresh `dict`/`list` values made only of JSON types (never tuples or frozen
containers). Reading (`*_from_dict`) builds each value with its constructor (01), so lists become tuples and JSON
values are frozen again, and a loaded value compares equal to the saved one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from alpineagents._history.json_values import answer, plain
from alpineagents.errors import fix_message
from alpineagents.types import (
    AgentInfo,
    ContextChange,
    ContextChangeEntry,
    ErrorEntry,
    Exchange,
    ExchangeEntry,
    ExtraDataEntry,
    HistoryEntry,
    Image,
    Message,
    MessageEntry,
    ModelEvent,
    ModelEventEntry,
    ModelReplyEntry,
    ModelRequestEntry,
    RawBlock,
    Reply,
    RunStartEntry,
    StopEntry,
    Stopped,
    StoppedByFinish,
    StoppedByLimit,
    StoppedByPermission,
    StoppedByUntil,
    TextBlock,
    ToolCall,
    ToolOutcomeKind,
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
    """The info dict of one saved State (06 §3.3): what a listing shows, plus the format version `v`."""

    v: int
    first_message: str | None
    created_at: str | None
    updated_at: str | None
    turn: int
    stopped: dict[str, Any] | None
    finished: bool
    parent_id: NotRequired[str | None]


_fromiso = datetime.fromisoformat

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
    """The info dict of 06 §3.3: exactly the keys `v`, `first_message`, ..., `parent_id`, in that order.

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
    """The `StateInfo` keyword arguments (all but `id`) read from an info dict (06 §3.2).

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
# Small checked readers (a wrong type is a damaged entry; entry_from_dict wraps these TypeErrors)


def _int(value: Any, name: str) -> int:
    if type(value) is not int:
        raise TypeError(f"{name} is not an integer (got: {type(value).__name__})")
    return value


def _opt_int(value: Any, name: str) -> int | None:
    return None if value is None else _int(value, name)


def _str(value: Any, name: str) -> str:
    if type(value) is not str:
        raise TypeError(f"{name} is not a string (got: {type(value).__name__})")
    return value


def _opt_str(value: Any, name: str) -> str | None:
    return None if value is None else _str(value, name)


def _list(value: Any, name: str) -> list[Any]:
    if type(value) is not list:
        raise TypeError(f"{name} is not a list (got: {type(value).__name__})")
    return value  # pyright: ignore[reportUnknownVariableType]


def _dict(value: Any, name: str) -> Mapping[str, Any]:
    if type(value) is dict:
        return value  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} is not an object (got: {type(value).__name__})")
    return value  # pyright: ignore[reportUnknownVariableType]


def _bool(value: Any, name: str) -> bool:
    if type(value) is not bool:
        raise TypeError(f"{name} is not true or false (got: {type(value).__name__})")
    return value


def _strs(value: Any, name: str) -> tuple[str, ...]:
    items = _list(value, name)
    for item in items:
        _str(item, f"an item of {name}")
    return tuple(items)


# ---------------------------------------------------------------------------------------------------------------
# Times, usage, calls, stops, agent info


def time_to_str(at: datetime) -> str:
    """`at.isoformat()`, e.g. `"2026-01-01T09:00:00+00:00"`."""
    return at.isoformat()


def time_from_str(text: str) -> datetime:
    """`datetime.fromisoformat(text)`: a `+00:00` stamp reads back with `tzinfo is timezone.utc`.

    Raises:
        TypeError: `text` is not a string.
        ValueError: `text` is not an ISO time.
    """
    if type(text) is not str:
        raise TypeError(f"a time is not a string (got: {type(text).__name__})")
    return datetime.fromisoformat(text)


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


def usage_from_dict(data: Mapping[str, Any]) -> Usage:
    """A `Usage` from its object; absent counts take the `Usage` defaults."""
    data = _dict(data, "usage")
    get = data.get
    i, o, r, w, n, cost = (
        get("input_tokens", 0),
        get("output_tokens", 0),
        get("cache_read_tokens", 0),
        get("cache_write_tokens", 0),
        get("requests", 0),
        get("cost"),
    )
    if type(i) is not int or type(o) is not int or type(r) is not int or type(w) is not int or type(n) is not int:
        for name, value in (("input_tokens", i), ("output_tokens", o), ("cache_read_tokens", r)):
            _int(value, name)
        _int(w, "cache_write_tokens")
        _int(n, "requests")
    if cost is not None and (type(cost) is bool or not isinstance(cost, (int, float))):
        raise TypeError(f"usage cost is not a number (got: {type(cost).__name__})")
    return Usage(i, o, r, w, n, cost)


def _call_to_dict(call: ToolCall) -> dict[str, Any]:
    return {"name": call.name, "args": plain(call.args, f"tool call {call.name} args"), "id": call.id}


def _call_from_dict(data: Any) -> ToolCall:
    if type(data) is not dict:
        data = _dict(data, "call")
    name, args, call_id = data["name"], data["args"], data["id"]
    if type(name) is not str or type(call_id) is not str or type(args) is not dict:
        _str(name, "call name")
        _dict(args, "call args")
        _str(call_id, "call id")
    return ToolCall(name, args, call_id)


def stopped_to_dict(stopped: Stopped | None) -> dict[str, Any] | None:
    """The stop object of 06 §8.5, or `None`.

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
    if cls is StoppedByPermission:
        return {
            "kind": "permission",
            "call": _call_to_dict(stopped.call),  # pyright: ignore[reportAttributeAccessIssue]
            "permission": stopped.permission,  # pyright: ignore[reportAttributeAccessIssue]
        }
    raise TypeError(f"cannot save a stop reason of type {cls.__name__}")


def stopped_from_dict(data: Mapping[str, Any] | None) -> Stopped | None:
    """The stop value of a stop object (`None` for `null`).

    Raises:
        ValueError: `unknown stop kind {kind!r}`.
    """
    if data is None:
        return None
    data = _dict(data, "stop")
    kind = data["kind"]
    if kind == "until":
        return StoppedByUntil(_str(data["name"], "stop name"))
    if kind == "limit":
        return StoppedByLimit(_int(data["turns"], "stop turns"))
    if kind == "finish":
        return StoppedByFinish(data.get("answer"))
    if kind == "permission":
        return StoppedByPermission(_call_from_dict(data["call"]), _str(data["permission"], "stop permission"))
    raise ValueError(f"unknown stop kind {kind!r}")


def agent_info_to_dict(info: AgentInfo) -> dict[str, Any]:
    """The agent object of a `run_start` entry."""
    return {
        "name": info.name,
        "model": info.model,
        "system_sha256": info.system_sha256,
        "tools": list(info.tools),
        "mcp_servers": list(info.mcp_servers),
    }


def agent_info_from_dict(data: Mapping[str, Any]) -> AgentInfo:
    """An `AgentInfo` from its agent object."""
    data = _dict(data, "agent info")
    return AgentInfo(
        name=_opt_str(data["name"], "agent name"),
        model=_str(data["model"], "agent model"),
        system_sha256=_opt_str(data["system_sha256"], "agent system_sha256"),
        tools=_strs(data["tools"], "agent tools"),
        mcp_servers=_strs(data["mcp_servers"], "agent mcp_servers"),
    )


# ---------------------------------------------------------------------------------------------------------------
# Blocks and messages


def _image_to_dict(image: Image) -> dict[str, Any]:
    return {"type": "image", "media_type": image.media_type, "data": image.base64}


def _image_from_dict(data: Mapping[str, Any]) -> Image:
    return Image.from_base64(_str(data["data"], "image data"), _str(data["media_type"], "image media_type"))


def _result_to_json(content: Any) -> Any:
    if type(content) is str:
        return content
    return [
        _image_to_dict(block) if isinstance(block, Image) else {"type": "text", "text": block.text} for block in content
    ]


def _result_from_json(content: Any) -> str | tuple[TextBlock | Image, ...]:
    if type(content) is str:
        return content
    blocks: list[TextBlock | Image] = []
    for item in _list(content, "tool result content"):
        item = _dict(item, "a tool result block")
        kind = item["type"]
        if kind == "text":
            blocks.append(TextBlock(_str(item["text"], "text")))
        elif kind == "image":
            blocks.append(_image_from_dict(item))
        else:
            raise ValueError(f"unknown message block type {kind!r}")
    return tuple(blocks)


def _block_to_dict(block: Any) -> dict[str, Any]:
    cls = type(block)
    if cls is TextBlock:
        return {"type": "text", "text": block.text}
    if cls is ToolCall:
        return {
            "type": "tool_call",
            "name": block.name,
            "args": plain(block.args, f"tool call {block.name} args"),
            "id": block.id,
        }
    if cls is ToolResultBlock:
        return {
            "type": "tool_result",
            "call_id": block.call_id,
            "content": _result_to_json(block.content),
            "name": block.name,
            "is_error": block.is_error,
        }
    if cls is Image:
        return _image_to_dict(block)
    if cls is RawBlock:
        return {"type": "raw", "provider": block.provider, "data": plain(block.data, f"{block.provider} block")}
    raise TypeError(f"cannot save a message block of type {cls.__name__}")


def block_from_dict(data: Any) -> Any:
    if type(data) is not dict:
        data = _dict(data, "a message block")
    kind = data["type"]
    if kind == "text":
        text = data["text"]
        return TextBlock(text if type(text) is str else _str(text, "text"))
    if kind == "tool_call":
        name, args, call_id = data["name"], data["args"], data["id"]
        if type(name) is not str or type(call_id) is not str or type(args) is not dict:
            _str(name, "call name")
            _dict(args, "call args")
            _str(call_id, "call id")
        return ToolCall(name, args, call_id)
    if kind == "tool_result":
        return ToolResultBlock(
            _str(data["call_id"], "call_id"),
            _result_from_json(data["content"]),
            _str(data["name"], "name"),
            _bool(data["is_error"], "is_error"),
        )
    if kind == "image":
        return _image_from_dict(data)
    if kind == "raw":
        return RawBlock(_str(data["provider"], "provider"), _dict(data["data"], "raw data"))
    raise ValueError(f"unknown message block type {kind!r}")


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


def message_from_dict(data: Mapping[str, Any]) -> Message:
    """A `Message` from its object (`stop_reason` is `None` without the key)."""
    if type(data) is not dict:
        data = _dict(data, "message")
    role, content, tokens, stop_reason = data["role"], data["content"], data["tokens"], data.get("stop_reason")
    if type(role) is not str or type(content) is not list:
        _str(role, "role")
        _list(content, "message content")
    if tokens is not None and type(tokens) is not int:
        _int(tokens, "tokens")
    if stop_reason is not None and type(stop_reason) is not str:
        _str(stop_reason, "stop_reason")
    return Message(role, tuple([block_from_dict(block) for block in content]), tokens, stop_reason)  # pyright: ignore


# ---------------------------------------------------------------------------------------------------------------
# Entries


def _content_to_json(entry: Any) -> Any:
    kind = entry.kind
    content = entry.content
    if kind == "model_request" or kind == "error":
        return content
    if kind == "tool_result":
        return _result_to_json(content)
    if kind == "model_reply":
        return {
            "message": message_to_dict(content.message),
            "usage": usage_to_dict(content.usage),
            "context_tokens": content.context_tokens,
            "stop_reason": content.stop_reason,
            "model": content.model,
        }
    if kind == "user" or kind == "notice":
        return _result_to_json(content)
    if kind == "run_start":
        return agent_info_to_dict(content)
    if kind == "stop":
        return stopped_to_dict(content)
    if kind == "extra_data":
        return plain(content, "state.extra_data")
    if kind == "ask" or kind == "human":
        return {"question": content.question, "answer": plain(content.answer, f"answer to {content.question!r}")}
    if kind == "model_event":
        return {"kind": content.kind, "message": content.message, "data": plain(content.data, "ModelEvent.data")}
    if kind == "context_change":
        return {
            "kind": content.kind,
            "before_tokens": content.before_tokens,
            "after_tokens": content.after_tokens,
            "summary": content.summary,
            "kept": content.kept,
            "cleared": list(content.cleared),
            "messages": [message_to_dict(message) for message in content.messages],
            "restored_to": content.restored_to,
            "usage": None if content.usage is None else usage_to_dict(content.usage),
        }
    raise TypeError(f"cannot save a history entry of kind {kind!r}")


def entry_to_dict(entry: HistoryEntry, seq: int) -> dict[str, Any]:
    """The JSON object of one history entry (06 §8.2): `seq`, `kind`, `turn`, `at`, `content`, then the keys that
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


def _read_message(d: Mapping[str, Any], kind: str, turn: int, at: datetime) -> HistoryEntry:
    return MessageEntry(kind=kind, content=_result_from_json(d["content"]), turn=turn, at=at)  # pyright: ignore


def _read_request(d: Mapping[str, Any], kind: str, turn: int, at: datetime) -> HistoryEntry:
    content = d["content"]
    return ModelRequestEntry(content=content if type(content) is str else _str(content, "content"), turn=turn, at=at)


def _read_reply(d: Mapping[str, Any], kind: str, turn: int, at: datetime) -> HistoryEntry:
    c = d["content"]
    if type(c) is not dict:
        c = _dict(c, "content")
    context_tokens, stop_reason, model = c["context_tokens"], c["stop_reason"], c["model"]
    if context_tokens is not None and type(context_tokens) is not int:
        _int(context_tokens, "context_tokens")
    if (stop_reason is not None and type(stop_reason) is not str) or (model is not None and type(model) is not str):
        _opt_str(stop_reason, "stop_reason")
        _opt_str(model, "model")
    reply = Reply(message_from_dict(c["message"]), usage_from_dict(c["usage"]), context_tokens, stop_reason, model)
    return ModelReplyEntry(content=reply, turn=turn, at=at)


def _read_event(d: Mapping[str, Any], kind: str, turn: int, at: datetime) -> HistoryEntry:
    c = _dict(d["content"], "content")
    event = ModelEvent(_str(c["kind"], "event kind"), _str(c["message"], "event message"), _dict(c["data"], "data"))
    return ModelEventEntry(content=event, turn=turn, at=at)


def _read_result(d: Mapping[str, Any], kind: str, turn: int, at: datetime) -> HistoryEntry:
    call = d.get("call")
    if call is None:
        raise ValueError("a saved tool_result history entry has no call")
    usage = d.get("usage")
    outcome = OUTCOMES.get(d["outcome"]) or ToolOutcomeKind(d["outcome"])
    late = d.get("late", False)
    return ToolResultEntry(
        content=_result_from_json(d["content"]),
        call=_call_from_dict(call),
        outcome=outcome,
        late=late if type(late) is bool else _bool(late, "late"),
        child_ids=_strs(d["child_ids"], "child_ids") if "child_ids" in d else (),
        usage=None if usage is None else usage_from_dict(usage),
        turn=turn,
        at=at,
    )


def _read_exchange(d: Mapping[str, Any], kind: str, turn: int, at: datetime) -> HistoryEntry:
    c = _dict(d["content"], "content")
    usage = d.get("usage")
    return ExchangeEntry(
        kind=kind,  # pyright: ignore[reportArgumentType]
        content=Exchange(_str(c["question"], "question"), c["answer"]),
        usage=None if usage is None else usage_from_dict(usage),
        turn=turn,
        at=at,
    )


def _read_change(d: Mapping[str, Any], kind: str, turn: int, at: datetime) -> HistoryEntry:
    c = _dict(d["content"], "content")
    usage = c["usage"]
    change = ContextChange(
        _str(c["kind"], "change kind"),  # pyright: ignore[reportArgumentType]
        _int(c["before_tokens"], "before_tokens"),
        _int(c["after_tokens"], "after_tokens"),
        _opt_str(c["summary"], "summary"),
        _int(c["kept"], "kept"),
        _strs(c["cleared"], "cleared"),
        tuple(message_from_dict(m) for m in _list(c["messages"], "messages")),
        _opt_int(c["restored_to"], "restored_to"),
        None if usage is None else usage_from_dict(usage),
    )
    return ContextChangeEntry(content=change, turn=turn, at=at)


def _read_run_start(d: Mapping[str, Any], kind: str, turn: int, at: datetime) -> HistoryEntry:
    return RunStartEntry(
        content=agent_info_from_dict(d["content"]),
        parent_id=_opt_str(d.get("parent_id"), "parent_id"),
        parent_call_id=_opt_str(d.get("parent_call_id"), "parent_call_id"),
        turn=turn,
        at=at,
    )


def _read_stop(d: Mapping[str, Any], kind: str, turn: int, at: datetime) -> HistoryEntry:
    return StopEntry(content=stopped_from_dict(d["content"]), turn=turn, at=at)


def _read_extra(d: Mapping[str, Any], kind: str, turn: int, at: datetime) -> HistoryEntry:
    removed = d.get("removed")
    return ExtraDataEntry(
        content=_dict(d["content"], "content"),
        removed=() if removed is None else _strs(removed, "removed"),
        turn=turn,
        at=at,
    )


def _read_error(d: Mapping[str, Any], kind: str, turn: int, at: datetime) -> HistoryEntry:
    call = d.get("call")
    return ErrorEntry(
        content=_str(d["content"], "content"),
        call=None if call is None else _call_from_dict(call),
        turn=turn,
        at=at,
    )


OUTCOMES: dict[Any, ToolOutcomeKind] = {kind.value: kind for kind in ToolOutcomeKind}

_READERS: dict[str, Callable[[Mapping[str, Any], str, int, datetime], HistoryEntry]] = {
    "user": _read_message,
    "notice": _read_message,
    "model_request": _read_request,
    "model_reply": _read_reply,
    "model_event": _read_event,
    "tool_result": _read_result,
    "ask": _read_exchange,
    "human": _read_exchange,
    "context_change": _read_change,
    "run_start": _read_run_start,
    "stop": _read_stop,
    "extra_data": _read_extra,
    "error": _read_error,
}


def entry_from_dict(data: Mapping[str, Any]) -> HistoryEntry:
    """The history entry of one saved JSON object (06 §8.6). Unknown keys are ignored; `error` is `None`.

    Raises:
        ValueError: An unknown kind, stop kind, block type or outcome; a `tool_result` without a call; a bad time,
            base64 or image type; or `saved history entry {seq!r} is damaged (...)` for a missing key or a value
            of the wrong type.
    """
    try:
        reader = _READERS.get(data["kind"])
        if reader is None:
            raise ValueError(f"unknown history entry kind {data['kind']!r}")
        turn = data["turn"]
        if type(turn) is not int:
            raise TypeError(f"turn is not an integer (got: {type(turn).__name__})")
        at = data["at"]
        if type(at) is not str:
            raise TypeError(f"at is not a string (got: {type(at).__name__})")
        return reader(data, data["kind"], turn, _fromiso(at))
    except (KeyError, TypeError, AttributeError, IndexError) as error:
        seq = data.get("seq") if isinstance(data, Mapping) else None
        raise ValueError(f"saved history entry {seq!r} is damaged ({type(error).__name__}: {error})") from error
