"""Reading a whole saved history fast (a private helper of the stores: 06 §6.1 steps 6 and 7, §8.6).

`entries_from_dicts(items)` gives what `[entry_from_dict(item) for item in items]` gives. The entries an agent run
writes by the thousand (`model_request`, a `model_reply` of text and tool calls, a plain `tool_result`, a text
`user`/`notice` message) are read here: every value is checked as `_serial` checks it, and the values are built
without repeating their constructors' normalization (the fields are already in normal form). Anything else, and
any entry whose checks fail or whose reading raises, is read by `entry_from_dict`, so a damaged entry raises
exactly the error it raises there.

A tool result whose call is the same JSON as a call of an earlier reply (same name and id, the same argument keys in
the same order, each value a string, integer, bool or null of the same type) gets that reply's `ToolCall`, as in
the State that recorded it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, cast

from alpineagents._frozen import FrozenDict, freeze
from alpineagents._serial import OUTCOMES, block_from_dict, entry_from_dict
from alpineagents._values.construct import maker
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
_dict_new = dict.__new__
_dict_update = dict.update


make_request_entry = maker(ModelRequestEntry)
make_reply_entry = maker(ModelReplyEntry)
make_result_entry = maker(ToolResultEntry)
make_message_entry = maker(MessageEntry)
make_reply = maker(Reply)
make_message = maker(Message)
make_usage = maker(Usage)
make_text = maker(TextBlock)
make_call = maker(ToolCall)

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
    return make_usage(i, o, r, w, n, cost)


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
            block = make_text(text)
        elif kind == "tool_call":
            name, args, call_id = b["name"], b["args"], b["id"]
            if type(name) is not str or type(call_id) is not str or type(args) is not dict:
                return None
            block = make_call(name, _frozen_args(args), call_id)
            seen[call_id] = (block, args)
        else:
            block = block_from_dict(b)
        blocks.append(block)
    usage = _usage(c["usage"])
    if usage is None:
        return None
    message = make_message(role, tuple(blocks), tokens, message_stop)
    reply = make_reply(message, usage, context_tokens, stop_reason, model)
    return make_reply_entry("model_reply", reply, turn, at)


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
    outcome = OUTCOMES[d["outcome"]]
    known = seen.get(call_id)
    if known is not None and known[0].name == name and _same_args(args, known[1]):
        call = known[0]
    else:
        call = make_call(name, _frozen_args(args), call_id)
    return make_result_entry("tool_result", content, call, outcome, late, None, (), usage, turn, at)


def entries_from_dicts(
    items: Sequence[Any], bad_seq: Callable[[int, Any], ValueError | None] | None = None, consume: bool = False
) -> list[HistoryEntry]:
    """`[entry_from_dict(item) for item in items]`, with the usual entries read by a faster path (see the module).

    With `consume`, each item of `items` (a list) is replaced by `None` once it is read.

    With `bad_seq`, every item is first checked with it (`bad_seq(index, item)` gives the error of an item whose
    seq is not its index, else `None`) in the same pass: the first bad seq is raised, before the error of any
    entry that cannot be read, as if all seqs were checked first.

    Raises:
        ValueError: What `bad_seq` gives for the first bad seq, else what `entry_from_dict` raises for the first
            entry that cannot be read.
    """
    fromiso = _fromiso
    seen: dict[str, tuple[ToolCall, dict[str, Any]]] = {}
    out: list[HistoryEntry] = []
    append = out.append
    for index, d in enumerate(items):
        entry: Any = None
        if type(d) is dict:
            if bad_seq is not None:
                seq = d.get("seq")
                if type(seq) is not int or seq != index:
                    _raise_bad_seq(bad_seq, index, d)
            try:
                kind, turn, at = d["kind"], d["turn"], d["at"]
                if type(turn) is int and type(at) is str:
                    if kind == "model_request":
                        content = d["content"]
                        if type(content) is str:
                            entry = make_request_entry("model_request", content, turn, fromiso(at))
                    elif kind == "tool_result":
                        entry = _result(d, turn, fromiso(at), seen)
                    elif kind == "model_reply":
                        entry = _reply(d, turn, fromiso(at), seen)
                    elif kind == "user" or kind == "notice":
                        content = d["content"]
                        if type(content) is str:
                            entry = make_message_entry(kind, content, turn, fromiso(at))
            except Exception:  # noqa: BLE001 - entry_from_dict raises this entry's error
                entry = None
        elif bad_seq is not None:
            _raise_bad_seq(bad_seq, index, d)
        if entry is None:
            try:
                entry = entry_from_dict(d)
            except Exception:
                if bad_seq is not None:  # a bad seq further on comes first
                    for later in range(index + 1, len(items)):
                        _raise_bad_seq(bad_seq, later, items[later])
                raise
        append(entry)
        if consume:
            cast("list[Any]", items)[index] = None
    return out


def _raise_bad_seq(bad_seq: Callable[[int, Any], ValueError | None], index: int, item: Any) -> None:
    error = bad_seq(index, item)
    if error is not None:
        raise error
