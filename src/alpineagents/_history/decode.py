"""Reading saved history back: each saved JSON object becomes the history entry it was written from.

This is the one decoder of the saved form (``alpineagents._serial`` re-exports its public names). Every value is
checked before it is built; a missing key, or a value of the wrong type or shape, makes the entry damaged:
``saved history entry {seq!r} is damaged ({ExceptionType}: {exception})``. Keys a reader does not know are ignored.
Values are built with the makers of ``_values.construct`` (the fields are checked here, and the class's own
normalization still runs), which is what keeps loading a long history fast.

``entries_from_dicts`` reads a whole saved history in one pass. A tool result whose call is the same JSON as a call
of an earlier reply (same name and id, the same argument keys in the same order, each value a string, integer, bool
or null of the same type) gets that reply's ``ToolCall`` object, as in the State that recorded it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from alpineagents import types as t
from alpineagents._frozen import FrozenDict, freeze
from alpineagents._values.budget import budget_stop_from_dict
from alpineagents._values.construct import maker
from alpineagents._values.request_input import reference

__all__ = [
    "agent_info_from_dict",
    "block_from_dict",
    "entries_from_dicts",
    "entry_from_dict",
    "message_from_dict",
    "stopped_from_dict",
    "time_from_str",
    "usage_from_dict",
]

_make_text = maker(t.TextBlock)
_make_call = maker(t.ToolCall)
_make_message = maker(t.Message)
_make_usage = maker(t.Usage)
_make_reply = maker(t.Reply)
_make_request_entry = maker(t.ModelRequestEntry)
_make_reply_entry = maker(t.ModelReplyEntry)
_make_result_entry = maker(t.ToolResultEntry)
_make_message_entry = maker(t.MessageEntry)

_fromiso = datetime.fromisoformat
_OUTCOMES: dict[object, t.ToolOutcomeKind] = {kind.value: kind for kind in t.ToolOutcomeKind}

Calls = dict[str, tuple[t.ToolCall, dict[str, Any]]]
"""The calls of the replies read so far, by id, with the arguments they were read from."""


# --- checked values (a wrong type is a damaged entry; entry_from_dict wraps these TypeErrors) ---------------------


def _wrong(name: str, what: str, value: object) -> TypeError:
    return TypeError(f"{name} is not {what} (got: {type(value).__name__})")


def _int(value: object, name: str) -> int:
    if type(value) is not int:
        raise _wrong(name, "an integer", value)
    return value


def _str(value: object, name: str) -> str:
    if type(value) is not str:
        raise _wrong(name, "a string", value)
    return value


def _opt_int(value: object, name: str) -> int | None:
    return None if value is None else _int(value, name)


def _opt_str(value: object, name: str) -> str | None:
    return None if value is None else _str(value, name)


def _list(value: object, name: str) -> list[Any]:
    if type(value) is not list:
        raise _wrong(name, "a list", value)
    return cast("list[Any]", value)


def _dict(value: object, name: str) -> Mapping[str, Any]:
    if type(value) is not dict and not isinstance(value, Mapping):
        raise _wrong(name, "an object", value)
    return cast("Mapping[str, Any]", value)


def _bool(value: object, name: str) -> bool:
    if type(value) is not bool:
        raise _wrong(name, "true or false", value)
    return value


def _strs(value: object, name: str) -> tuple[str, ...]:
    items = _list(value, name)
    for item in items:
        _str(item, f"an item of {name}")
    return tuple(items)


# --- nested values ---------------------------------------------------------------------------------------------


def time_from_str(text: str) -> datetime:
    """``datetime.fromisoformat(text)``: a ``+00:00`` stamp reads back with ``tzinfo is timezone.utc``.

    Raises:
        TypeError: ``text`` is not a string.
        ValueError: ``text`` is not an ISO time.
    """
    if type(text) is not str:
        raise _wrong("a time", "a string", text)
    return _fromiso(text)


_USAGE_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "requests")


def usage_from_dict(data: Mapping[str, Any]) -> t.Usage:
    """A ``Usage`` from its object; absent counts take the ``Usage`` defaults."""
    if type(data) is not dict:
        data = _dict(data, "usage")
    get = data.get
    i, o, r, w, n = (
        get("input_tokens", 0),
        get("output_tokens", 0),
        get("cache_read_tokens", 0),
        get("cache_write_tokens", 0),
        get("requests", 0),
    )
    if type(i) is not int or type(o) is not int or type(r) is not int or type(w) is not int or type(n) is not int:
        for name, count in zip(_USAGE_COUNTS, (i, o, r, w, n), strict=True):
            _int(count, name)
    cost = get("cost")
    if cost is not None and type(cost) is not float and (type(cost) is bool or not isinstance(cost, (int, float))):
        raise _wrong("usage cost", "a number", cost)
    return _make_usage(i, o, r, w, n, cost)


_ATOMIC = frozenset({str, int, float, bool, type(None)})  # values a frozen dict keeps as they are
_EXACT = frozenset({str, int, bool, type(None)})  # values that are equal only when they are the same JSON value


def _frozen_args(args: dict[str, Any]) -> FrozenDict[str, Any]:
    """``freeze(args)``; for the usual arguments (no nested value) the frozen dict is filled in one step, which
    spares ``freeze`` its walk over the values: tool calls are most of what a long history holds."""
    for value in args.values():
        if type(value) not in _ATOMIC:
            return freeze(args)
    frozen: FrozenDict[str, Any] = dict.__new__(FrozenDict)
    dict.update(frozen, args)
    return frozen


def _same_args(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two argument objects read from JSON are the same value: equal, keys in the same order, and each value
    a string, integer, bool or null of the same type (so ``1``, ``1.0`` and ``true`` differ)."""
    if a != b:
        return False
    for (key_a, value_a), (key_b, value_b) in zip(a.items(), b.items(), strict=True):
        cls = type(value_a)
        if key_a != key_b or cls is not type(value_b) or cls not in _EXACT:
            return False
    return True


def _call(data: object, calls: Calls | None = None, *, in_reply: bool = False) -> t.ToolCall:
    """A tool call (a message block or a call object). ``calls``: the calls of earlier replies, to share or add to."""
    if type(data) is not dict:
        data = _dict(data, "a message block" if in_reply else "call")
    name, args, call_id = data["name"], data["args"], data["id"]
    if type(name) is not str or type(call_id) is not str or type(args) is not dict:
        _str(name, "call name")
        _dict(args, "call args")
        _str(call_id, "call id")
    if type(args) is not dict:  # another Mapping: the constructor normalizes it
        return t.ToolCall(name, args, call_id)
    if calls is not None:
        if in_reply:
            call = calls[call_id] = (_make_call(name, _frozen_args(args), call_id), args)
            return call[0]
        known = calls.get(call_id)
        if known is not None and known[0].name == name and _same_args(args, known[1]):
            return known[0]
    return _make_call(name, _frozen_args(args), call_id)


def stopped_from_dict(data: Mapping[str, Any] | None) -> t.Stopped | None:
    """The stop value of a stop object (``None`` for ``null``).

    Raises:
        ValueError: ``unknown stop kind {kind!r}``.
    """
    if data is None:
        return None
    data = _dict(data, "stop")
    kind = data["kind"]
    if kind == "until":
        return t.StoppedByUntil(_str(data["name"], "stop name"))
    if kind == "limit":
        budget = data.get("budget")
        if budget is not None:  # a step waiting for a bigger budget (see `_values.budget`)
            return budget_stop_from_dict(_dict(budget, "stop budget"))
        return t.StoppedByLimit(_int(data["turns"], "stop turns"))
    if kind == "finish":
        return t.StoppedByFinish(data.get("answer"))
    if kind == "permission":
        call, permission = _call(data["call"]), _str(data["permission"], "stop permission")
        waiting = data.get("waiting")
        if waiting is not None:  # calls waiting for approval (see `_values.approval`)
            return t.StoppedForApproval(call, permission, [_call(item) for item in _list(waiting, "stop waiting")])
        return t.StoppedByPermission(call, permission)
    raise ValueError(f"unknown stop kind {kind!r}")


def agent_info_from_dict(data: Mapping[str, Any]) -> t.AgentInfo:
    """An ``AgentInfo`` from its agent object."""
    data = _dict(data, "agent info")
    return t.AgentInfo(
        name=_opt_str(data["name"], "agent name"),
        model=_str(data["model"], "agent model"),
        system_sha256=_opt_str(data["system_sha256"], "agent system_sha256"),
        tools=_strs(data["tools"], "agent tools"),
        mcp_servers=_strs(data["mcp_servers"], "agent mcp_servers"),
    )


def _image(data: Mapping[str, Any]) -> t.Image:
    return t.Image.from_base64(_str(data["data"], "image data"), _str(data["media_type"], "image media_type"))


def _result_content(content: object) -> str | tuple[t.TextBlock | t.Image, ...]:
    """A tool result's (or a user message's) content: a string, or a list of text and image objects."""
    if type(content) is str:
        return content
    blocks: list[t.TextBlock | t.Image] = []
    for item in _list(content, "tool result content"):
        item = _dict(item, "a tool result block")
        kind = item["type"]
        if kind == "text":
            blocks.append(_make_text(_str(item["text"], "text")))
        elif kind == "image":
            blocks.append(_image(item))
        else:
            raise ValueError(f"unknown message block type {kind!r}")
    return tuple(blocks)


def _tool_result_block(data: Mapping[str, Any]) -> t.ToolResultBlock:
    return t.ToolResultBlock(
        _str(data["call_id"], "call_id"),
        _result_content(data["content"]),
        _str(data["name"], "name"),
        _bool(data["is_error"], "is_error"),
    )


def _raw_block(data: Mapping[str, Any]) -> t.RawBlock:
    return t.RawBlock(_str(data["provider"], "provider"), _dict(data["data"], "raw data"))


_BLOCKS: dict[object, Callable[[Mapping[str, Any]], Any]] = {
    "tool_result": _tool_result_block,
    "image": _image,
    "raw": _raw_block,
}


def _block(data: object, calls: Calls | None) -> Any:
    if type(data) is not dict:
        data = _dict(data, "a message block")
    kind = data["type"]
    if kind == "text":
        text = data["text"]
        return _make_text(text if type(text) is str else _str(text, "text"))
    if kind == "tool_call":
        return _call(data, calls, in_reply=True)
    read = _BLOCKS.get(kind)
    if read is None:
        raise ValueError(f"unknown message block type {kind!r}")
    return read(data)


def block_from_dict(data: Mapping[str, Any]) -> Any:
    """A message block from its object.

    Raises:
        ValueError: ``unknown message block type {type!r}``.
    """
    return _block(data, None)


def _message(data: object, calls: Calls | None) -> t.Message:
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
    blocks = tuple([_block(block, calls) for block in content])
    return _make_message(role, blocks, tokens, stop_reason)


def message_from_dict(data: Mapping[str, Any]) -> t.Message:
    """A ``Message`` from its object (``stop_reason`` is ``None`` without the key)."""
    return _message(data, None)


# --- entries, by kind --------------------------------------------------------------------------------------------

Reader = Callable[[Mapping[str, Any], str, int, datetime, "Calls | None"], t.HistoryEntry]


def _read_message(d: Mapping[str, Any], kind: str, turn: int, at: datetime, calls: Calls | None) -> t.HistoryEntry:
    return _make_message_entry(kind, _result_content(d["content"]), turn, at)


def _read_request(d: Mapping[str, Any], kind: str, turn: int, at: datetime, calls: Calls | None) -> t.HistoryEntry:
    content = d["content"]
    sent = d.get("input")
    return _make_request_entry(
        kind,
        content if type(content) is str else _str(content, "content"),
        turn,
        at,
        None if sent is None else _request_input(_dict(sent, "input")),
    )


def _request_input(data: Mapping[str, Any]) -> t.RequestInput:
    """A request's input from its saved object (a text left out means an earlier request holds it)."""
    system_sha = _opt_str(data.get("system_sha256"), "input.system_sha256")
    tools_sha = _opt_str(data.get("tools_sha256"), "input.tools_sha256")
    system, tools = data.get("system"), data.get("tools")
    if system is None and tools is None:  # most requests: one shared value
        return reference(system_sha, tools_sha)
    return t.RequestInput(
        system_sha256=system_sha,
        system=_opt_str(system, "input.system"),
        tools_sha256=tools_sha,
        tools=None if tools is None else [_dict(spec, "input.tools item") for spec in _list(tools, "input.tools")],
    )


def _read_reply(d: Mapping[str, Any], kind: str, turn: int, at: datetime, calls: Calls | None) -> t.HistoryEntry:
    c = d["content"]
    if type(c) is not dict:
        c = _dict(c, "content")
    context_tokens, stop_reason, model = c["context_tokens"], c["stop_reason"], c["model"]
    if context_tokens is not None and type(context_tokens) is not int:
        _int(context_tokens, "context_tokens")
    if (stop_reason is not None and type(stop_reason) is not str) or (model is not None and type(model) is not str):
        _opt_str(stop_reason, "stop_reason")
        _opt_str(model, "model")
    reply = _make_reply(_message(c["message"], calls), usage_from_dict(c["usage"]), context_tokens, stop_reason, model)
    return _make_reply_entry(kind, reply, turn, at)


def _read_event(d: Mapping[str, Any], kind: str, turn: int, at: datetime, calls: Calls | None) -> t.HistoryEntry:
    c = _dict(d["content"], "content")
    event = t.ModelEvent(_str(c["kind"], "event kind"), _str(c["message"], "event message"), _dict(c["data"], "data"))
    return t.ModelEventEntry(content=event, turn=turn, at=at)


def _read_result(d: Mapping[str, Any], kind: str, turn: int, at: datetime, calls: Calls | None) -> t.HistoryEntry:
    call = d.get("call")
    if call is None:
        raise ValueError("a saved tool_result history entry has no call")
    usage = d.get("usage")
    outcome = _OUTCOMES.get(d["outcome"]) or t.ToolOutcomeKind(d["outcome"])
    late = d.get("late", False)
    return _make_result_entry(
        kind,
        _result_content(d["content"]),
        _call(call, calls),
        outcome,
        late if type(late) is bool else _bool(late, "late"),
        None,
        _strs(d["child_ids"], "child_ids") if "child_ids" in d else (),
        None if usage is None else usage_from_dict(usage),
        turn,
        at,
    )


def _read_exchange(d: Mapping[str, Any], kind: str, turn: int, at: datetime, calls: Calls | None) -> t.HistoryEntry:
    c = _dict(d["content"], "content")
    usage = d.get("usage")
    return t.ExchangeEntry(
        kind=kind,  # pyright: ignore[reportArgumentType]
        content=t.Exchange(_str(c["question"], "question"), c["answer"]),
        usage=None if usage is None else usage_from_dict(usage),
        turn=turn,
        at=at,
    )


def _read_change(d: Mapping[str, Any], kind: str, turn: int, at: datetime, calls: Calls | None) -> t.HistoryEntry:
    c = _dict(d["content"], "content")
    usage = c["usage"]
    change = t.ContextChange(
        _str(c["kind"], "change kind"),  # pyright: ignore[reportArgumentType]
        _int(c["before_tokens"], "before_tokens"),
        _int(c["after_tokens"], "after_tokens"),
        _opt_str(c["summary"], "summary"),
        _int(c["kept"], "kept"),
        _strs(c["cleared"], "cleared"),
        tuple(_message(m, None) for m in _list(c["messages"], "messages")),
        _opt_int(c["restored_to"], "restored_to"),
        None if usage is None else usage_from_dict(usage),
    )
    return t.ContextChangeEntry(content=change, turn=turn, at=at)


def _read_run_start(d: Mapping[str, Any], kind: str, turn: int, at: datetime, calls: Calls | None) -> t.HistoryEntry:
    return t.RunStartEntry(
        content=agent_info_from_dict(d["content"]),
        parent_id=_opt_str(d.get("parent_id"), "parent_id"),
        parent_call_id=_opt_str(d.get("parent_call_id"), "parent_call_id"),
        turn=turn,
        at=at,
    )


def _read_stop(d: Mapping[str, Any], kind: str, turn: int, at: datetime, calls: Calls | None) -> t.HistoryEntry:
    return t.StopEntry(content=stopped_from_dict(d["content"]), turn=turn, at=at)


def _read_extra(d: Mapping[str, Any], kind: str, turn: int, at: datetime, calls: Calls | None) -> t.HistoryEntry:
    removed = d.get("removed")
    return t.ExtraDataEntry(
        content=_dict(d["content"], "content"),
        removed=() if removed is None else _strs(removed, "removed"),
        turn=turn,
        at=at,
    )


def _read_error(d: Mapping[str, Any], kind: str, turn: int, at: datetime, calls: Calls | None) -> t.HistoryEntry:
    call = d.get("call")
    return t.ErrorEntry(
        content=_str(d["content"], "content"),
        call=None if call is None else _call(call),
        turn=turn,
        at=at,
        traceback=_opt_str(d.get("traceback"), "traceback"),
    )


_READERS: dict[object, Reader] = {
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


def _entry(data: Mapping[str, Any], calls: Calls | None) -> t.HistoryEntry:
    try:
        kind = data["kind"]
        reader = _READERS.get(kind)
        if reader is None:
            raise ValueError(f"unknown history entry kind {kind!r}")
        turn, at = data["turn"], data["at"]
        if type(turn) is not int:
            _int(turn, "turn")
        return reader(data, kind, turn, _fromiso(at if type(at) is str else _str(at, "at")), calls)
    except (KeyError, TypeError, AttributeError, IndexError) as error:
        seq = data.get("seq") if isinstance(data, Mapping) else None
        raise ValueError(f"saved history entry {seq!r} is damaged ({type(error).__name__}: {error})") from error


def entry_from_dict(data: Mapping[str, Any]) -> t.HistoryEntry:
    """The history entry of one saved JSON object. Unknown keys are ignored; ``error`` is ``None``.

    Raises:
        ValueError: an unknown kind, stop kind, block type or outcome; a ``tool_result`` without a call; a bad time,
            base64 or image type; or ``saved history entry {seq!r} is damaged (...)`` for a missing key or a value
            of the wrong type.
    """
    return _entry(data, None)


BadSeq = Callable[[int, object], "ValueError | None"]
"""Gives the error for an item whose ``seq`` is not its index (``None`` when it is)."""


def entries_from_dicts(
    items: Sequence[Any], bad_seq: BadSeq | None = None, consume: bool = False
) -> list[t.HistoryEntry]:
    """The entries of a whole saved history: ``entry_from_dict`` of each item, in one pass, with the calls of
    results shared with the replies that asked for them (see the module).

    With ``bad_seq``, each item's ``seq`` is checked in the same pass, and the first bad seq is raised before the
    error of any entry that cannot be read, as if all seqs were checked first. With ``consume``, each item of
    ``items`` (a list) is replaced by ``None`` once it is read (it is freed while still in the CPU cache).

    Raises:
        ValueError: what ``bad_seq`` gives for the first bad seq, else what ``entry_from_dict`` raises for the first
            entry that cannot be read.
    """
    calls: Calls = {}
    out: list[t.HistoryEntry] = []
    for index, data in enumerate(items):
        if bad_seq is not None:
            seq = data.get("seq") if type(data) is dict else None
            if type(seq) is not int or seq != index:
                _raise_bad_seq(bad_seq, index, data)
        try:
            out.append(_entry(data, calls))
        except Exception:
            if bad_seq is not None:  # a bad seq further on comes first
                for later in range(index + 1, len(items)):
                    _raise_bad_seq(bad_seq, later, items[later])
            raise
        if consume:
            cast("list[Any]", items)[index] = None
    return out


def _raise_bad_seq(bad_seq: BadSeq, index: int, item: object) -> None:
    error = bad_seq(index, item)
    if error is not None:
        raise error
