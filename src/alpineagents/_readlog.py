"""Reading a whole saved history fast (a private helper of the stores; 06 §6 step 4, §8.6).

`entries_from_dicts(items)` gives what `[entry_from_dict(item) for item in items]` gives. The entries an agent run
writes by the thousand (`model_request`, a `model_reply` of text and tool calls, a plain `tool_result`, a text
`user`/`notice` message) are read here: every value is checked as `_serial` checks it, and the values are built
without repeating their constructors' normalization (the fields are already in normal form). Anything else, and
any entry whose checks fail or whose reading raises, is read by `entry_from_dict`, so a damaged entry raises
exactly the error it raises there.

A tool result whose call equals (strictly: same name, id, and argument keys in the same order with values of the
same JSON type) a call of an earlier reply gets that reply's `ToolCall`, as in the State that recorded it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from alpineagents._frozen import FrozenDict, freeze
from alpineagents._serial import _OUTCOMES, _block_from_dict, entry_from_dict  # pyright: ignore[reportPrivateUsage]
from alpineagents.types import (
    HistoryEntry,
    Message,
    MessageEntry,
    ModelReplyEntry,
    ModelRequestEntry,
    Reply,
    TextBlock,
    ToolCall,
    ToolResultEntry,
    Usage,
)

__all__ = ["entries_from_dicts"]

_fromiso = datetime.fromisoformat
_new = object.__new__
_dict_new = dict.__new__
_dict_update = dict.update


def _setters(cls: type, *names: str) -> tuple[Any, ...]:
    return tuple(cls.__dict__[name].__set__ for name in names)


_request_kind, _request_content, _request_turn, _request_at = _setters(
    ModelRequestEntry, "kind", "content", "turn", "at"
)
_reply_kind, _reply_content, _reply_turn, _reply_at = _setters(ModelReplyEntry, "kind", "content", "turn", "at")
_message_kind, _message_content, _message_turn, _message_at = _setters(MessageEntry, "kind", "content", "turn", "at")
(
    _result_kind,
    _result_content,
    _result_call,
    _result_outcome,
    _result_late,
    _result_error,
    _result_child_ids,
    _result_usage,
    _result_turn,
    _result_at,
) = _setters(ToolResultEntry, "kind", "content", "call", "outcome", "late", "error", "child_ids", "usage", "turn", "at")
_r_message, _r_usage, _r_context_tokens, _r_stop_reason, _r_model = _setters(
    Reply, "message", "usage", "context_tokens", "stop_reason", "model"
)
_m_role, _m_content, _m_tokens, _m_stop_reason = _setters(Message, "role", "content", "tokens", "stop_reason")
_u_input, _u_output, _u_cache_read, _u_cache_write, _u_requests, _u_cost = _setters(
    Usage, "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "requests", "cost"
)
(_text_text,) = _setters(TextBlock, "text")
_call_name, _call_args, _call_id = _setters(ToolCall, "name", "args", "id")

_ATOMIC = frozenset({str, int, float, bool, type(None)})  # values a frozen dict keeps as they are
_EXACT = frozenset({str, int, bool, type(None)})  # values that are equal only when they are the same JSON value


def _usage(u: Any) -> Usage | None:
    """`usage_from_dict(u)` for a dict whose counts are integers and whose cost is null or a number, else `None`."""
    if type(u) is not dict:
        return None
    get = u.get
    i, o, r, w, n, cost = (
        get("input_tokens", 0),
        get("output_tokens", 0),
        get("cache_read_tokens", 0),
        get("cache_write_tokens", 0),
        get("requests", 0),
        get("cost"),
    )
    if type(i) is not int or type(o) is not int or type(r) is not int or type(w) is not int or type(n) is not int:
        return None
    if cost is not None and type(cost) is not float and type(cost) is not int:
        return None
    usage = _new(Usage)
    _u_input(usage, i)
    _u_output(usage, o)
    _u_cache_read(usage, r)
    _u_cache_write(usage, w)
    _u_requests(usage, n)
    _u_cost(usage, cost)
    return usage


def _frozen_args(args: dict[str, Any]) -> Any:
    """`freeze(args)` for a plain dict."""
    for value in args.values():
        if type(value) not in _ATOMIC:
            return freeze(args)
    frozen = _dict_new(FrozenDict)
    _dict_update(frozen, args)
    return frozen


def _same_args(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two argument objects read from JSON are the same value: equal, keys in the same order, and each value
    a string, integer, bool or null of the same type (so `1`, `1.0` and `true` differ)."""
    if a != b:
        return False
    for (key_a, value_a), (key_b, value_b) in zip(a.items(), b.items(), strict=True):
        cls = type(value_a)
        if key_a != key_b or cls is not type(value_b) or cls not in _EXACT:
            return False
    return True


def _reply(d: dict[str, Any], turn: int, at: datetime, seen: dict[str, tuple[ToolCall, dict[str, Any]]]) -> Any:
    c = d["content"]
    if type(c) is not dict:
        return None
    context_tokens, stop_reason, model = c["context_tokens"], c["stop_reason"], c["model"]
    if (
        (context_tokens is not None and type(context_tokens) is not int)
        or (stop_reason is not None and type(stop_reason) is not str)
        or (model is not None and type(model) is not str)
    ):
        return None
    m = c["message"]
    if type(m) is not dict:
        return None
    role, content, tokens, message_stop = m["role"], m["content"], m["tokens"], m.get("stop_reason")
    if (
        type(role) is not str
        or type(content) is not list
        or (tokens is not None and type(tokens) is not int)
        or (message_stop is not None and type(message_stop) is not str)
    ):
        return None
    blocks: list[Any] = []
    for b in content:
        if type(b) is not dict:
            return None
        kind = b["type"]
        if kind == "text":
            text = b["text"]
            if type(text) is not str:
                return None
            block = _new(TextBlock)
            _text_text(block, text)
        elif kind == "tool_call":
            name, args, call_id = b["name"], b["args"], b["id"]
            if type(name) is not str or type(call_id) is not str or type(args) is not dict:
                return None
            block = _new(ToolCall)
            _call_name(block, name)
            _call_args(block, _frozen_args(args))
            _call_id(block, call_id)
            seen[call_id] = (block, args)
        else:
            block = _block_from_dict(b)
        blocks.append(block)
    usage = _usage(c["usage"])
    if usage is None:
        return None
    message = _new(Message)
    _m_role(message, role)
    _m_content(message, tuple(blocks))
    _m_tokens(message, tokens)
    _m_stop_reason(message, message_stop)
    reply = _new(Reply)
    _r_message(reply, message)
    _r_usage(reply, usage)
    _r_context_tokens(reply, context_tokens)
    _r_stop_reason(reply, stop_reason)
    _r_model(reply, model)
    entry = _new(ModelReplyEntry)
    _reply_kind(entry, "model_reply")
    _reply_content(entry, reply)
    _reply_turn(entry, turn)
    _reply_at(entry, at)
    return entry


def _result(d: dict[str, Any], turn: int, at: datetime, seen: dict[str, tuple[ToolCall, dict[str, Any]]]) -> Any:
    content = d["content"]
    late = d.get("late", False)
    c = d.get("call")
    if type(content) is not str or type(late) is not bool or type(c) is not dict or "child_ids" in d:
        return None
    name, args, call_id = c["name"], c["args"], c["id"]
    if type(name) is not str or type(call_id) is not str or type(args) is not dict:
        return None
    usage = d.get("usage")
    if usage is not None:
        usage = _usage(usage)
        if usage is None:
            return None
    outcome = _OUTCOMES[d["outcome"]]
    known = seen.get(call_id)
    if known is not None and known[0].name == name and _same_args(args, known[1]):
        call = known[0]
    else:
        call = _new(ToolCall)
        _call_name(call, name)
        _call_args(call, _frozen_args(args))
        _call_id(call, call_id)
    entry = _new(ToolResultEntry)
    _result_kind(entry, "tool_result")
    _result_content(entry, content)
    _result_call(entry, call)
    _result_outcome(entry, outcome)
    _result_late(entry, late)
    _result_error(entry, None)
    _result_child_ids(entry, ())
    _result_usage(entry, usage)
    _result_turn(entry, turn)
    _result_at(entry, at)
    return entry


def entries_from_dicts(items: list[Any]) -> list[HistoryEntry]:
    """`[entry_from_dict(item) for item in items]`, with the usual entries read by a faster path (see the module).

    Raises:
        ValueError: What `entry_from_dict` raises for the first entry that cannot be read.
    """
    fromiso = _fromiso
    seen: dict[str, tuple[ToolCall, dict[str, Any]]] = {}
    out: list[HistoryEntry] = []
    append = out.append
    for d in items:
        entry: Any = None
        if type(d) is dict:
            try:
                kind, turn, at = d["kind"], d["turn"], d["at"]
                if type(turn) is int and type(at) is str:
                    if kind == "model_request":
                        content = d["content"]
                        if type(content) is str:
                            entry = _new(ModelRequestEntry)
                            _request_kind(entry, "model_request")
                            _request_content(entry, content)
                            _request_turn(entry, turn)
                            _request_at(entry, fromiso(at))
                    elif kind == "tool_result":
                        entry = _result(d, turn, fromiso(at), seen)
                    elif kind == "model_reply":
                        entry = _reply(d, turn, fromiso(at), seen)
                    elif kind == "user" or kind == "notice":
                        content = d["content"]
                        if type(content) is str:
                            entry = _new(MessageEntry)
                            _message_kind(entry, kind)
                            _message_content(entry, content)
                            _message_turn(entry, turn)
                            _message_at(entry, fromiso(at))
            except Exception:  # noqa: BLE001 - entry_from_dict raises this entry's error
                entry = None
        append(entry if entry is not None else entry_from_dict(d))
    return out
