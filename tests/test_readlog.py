"""The fast log reader (`_readlog.entries_from_dicts`) against the reference reader (`_serial.entry_from_dict`).

Loading reads the usual entries on a fast path that skips the value constructors' normalization. These tests prove
that it builds exactly the same values for valid entries, and that every damaged entry (each field of every kind
replaced by an odd value, deleted or renamed) gives exactly the same value or the same error as the reference.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import test_serial as ts
from alpineagents import _serial
from alpineagents._history.decode import entries_from_dicts
from alpineagents.types import (
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

CALL = ToolCall("read_file", {"path": "a.py", "n": 1, "f": True, "z": None}, "c1")
CALL2 = ToolCall("t", {"x": 1.5, "l": [1, {"a": 2}]}, "c2")
ODD: list[Any] = [None, True, False, 0, 1, -1, 1.0, 0.0, -0.0, float("nan"), "", "x", "done", [], [1], {}, {"a": 1},
                  "2026-01-01T09:00:00+00:00", "model_reply", "text", "tool_call"]  # fmt: skip


def strict(value: Any) -> Any:
    """A form of `value` that tells apart everything `==` forgets: classes, container types, `at`, `error`."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = tuple((f.name, strict(getattr(value, f.name))) for f in dataclasses.fields(value))
        return (type(value).__name__, *fields)
    if isinstance(value, dict):
        return (type(value).__name__, *((key, strict(item)) for key, item in value.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, *(strict(item) for item in value))
    if isinstance(value, datetime):
        return ("datetime", value.isoformat(), repr(value.tzinfo))
    return (type(value).__name__, repr(value))


def reference(data: dict[str, Any]) -> Any:
    try:
        return ("ok", [strict(_serial.entry_from_dict(data))])
    except Exception as error:  # noqa: BLE001 - the error itself is what is compared
        return ("error", type(error).__name__, str(error))


def fast(items: list[dict[str, Any]]) -> Any:
    try:
        return ("ok", [strict(entry) for entry in entries_from_dicts(items)])
    except Exception as error:  # noqa: BLE001
        return ("error", type(error).__name__, str(error))


def base_dicts() -> list[dict[str, Any]]:
    entries = [
        *ts.every_kind(),
        ModelRequestEntry(content="fake/fake", turn=1, at=ts.AT),
        ModelReplyEntry(
            content=Reply(
                Message("assistant", (TextBlock("hi"), CALL, CALL2), tokens=5, stop_reason="tool_use"),
                Usage(1, 2, 3, 4, 1, 0.25),
                7,
                "tool_use",
                "m",
            ),
            turn=1,
            at=ts.AT,
        ),
        ToolResultEntry(content="out", call=CALL, outcome="done", turn=1, at=ts.AT),
        ToolResultEntry(content="out", call=CALL2, outcome="error", late=True, usage=Usage(requests=1, cost=1), turn=1, at=ts.AT),
        ToolResultEntry(content=(TextBlock("a"),), call=CALL2, outcome="error", child_ids=("k",), turn=1, at=ts.AT),
        MessageEntry(kind="user", content="hello", turn=0, at=ts.AT),
        MessageEntry(kind="notice", content="[notice] x", turn=0, at=ts.AT),
    ]  # fmt: skip
    return json.loads(json.dumps([_serial.entry_to_dict(entry, seq) for seq, entry in enumerate(entries)]))


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def damaged(data: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], str, dict[str, Any]]]:
    """Every copy of `data` with one field replaced by an odd value, deleted, or (in a dict) renamed."""
    for path in list(paths(data)):
        for change in [*ODD, "DELETE", "RENAME"]:
            copied = copy.deepcopy(data)
            parent = copied
            for key in path[:-1]:
                parent = parent[key]
            if change == "DELETE":
                del parent[path[-1]]
            elif change == "RENAME":
                if not isinstance(parent, dict):
                    continue
                parent["zz_" + str(path[-1])] = parent.pop(path[-1])
            else:
                parent[path[-1]] = copy.deepcopy(change)
            yield path, repr(change), copied


def test_valid_entries_read_the_same() -> None:
    dicts = base_dicts()
    assert fast(dicts) == ("ok", [reference(data)[1][0] for data in dicts])


def test_every_damaged_entry_gives_the_same_value_or_error() -> None:
    cases = 0
    for data in base_dicts():
        for path, change, copied in damaged(data):
            assert fast([copied]) == reference(copied), (data["kind"], path, change)
            cases += 1
    assert cases > 5000


def test_a_result_shares_the_call_of_its_reply_only_when_the_call_is_the_same() -> None:
    dicts = base_dicts()
    first = len(ts.every_kind())  # the request, reply and results added after every kind
    reply, result = dicts[first + 1], dicts[first + 2]
    entries = entries_from_dicts([reply, result])
    assert entries[1].call is entries[0].content.message.content[1]
    for change in ODD:
        for key in ["path", "n", "f", "z", "new"]:
            changed = copy.deepcopy(result)
            changed["call"]["args"][key] = copy.deepcopy(change)
            got = entries_from_dicts([reply, changed])
            want = [_serial.entry_from_dict(reply), _serial.entry_from_dict(changed)]
            assert [strict(entry) for entry in got] == [strict(entry) for entry in want], (key, change)
    reordered = copy.deepcopy(result)
    reordered["call"]["args"] = dict(reversed(list(reordered["call"]["args"].items())))
    assert strict(entries_from_dicts([reply, reordered])[1]) == strict(_serial.entry_from_dict(reordered))
