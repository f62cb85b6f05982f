"""The decoder of saved history (`entries_from_dicts`, `entry_from_dict`) against values written independently.

Loading reads every entry with one decoder. These tests prove that a whole saved history reads back as exactly the
entries that were saved (classes, containers and times included), that every damaged entry (each field of every kind
replaced by an odd value, deleted or renamed) is either refused with one of the errors of the saved form or read as
a valid entry, and that a result shares the call object of its reply only when the call is the same.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

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


def saved_entries() -> list[Any]:
    """The entries of ``base_dicts``, as built by their classes (``error`` is never saved)."""
    return [_serial.entry_from_dict(data) for data in base_dicts()]


def test_a_whole_history_reads_back_as_exactly_the_entries_that_were_saved() -> None:
    entries = [
        *ts.every_kind(),
        ModelRequestEntry(content="fake/fake", turn=1, at=ts.AT),
        ModelReplyEntry(content=Reply(Message("assistant", (TextBlock("hi"), CALL, CALL2)), Usage(1, 2, 3, 4, 1, 0.25), 7, "tool_use", "m"), turn=1, at=ts.AT),
        ToolResultEntry(content="out", call=CALL, outcome="done", turn=1, at=ts.AT),
        MessageEntry(kind="user", content="hello", turn=0, at=ts.AT),
    ]  # fmt: skip
    saved = json.loads(json.dumps([_serial.entry_to_dict(entry, seq) for seq, entry in enumerate(entries)]))
    read = entries_from_dicts(saved)
    expected = [dataclasses.replace(e, error=None) if hasattr(e, "error") else e for e in entries]
    assert [strict(entry) for entry in read] == [strict(entry) for entry in expected]
    assert [strict(_serial.entry_from_dict(data)) for data in saved] == [strict(entry) for entry in expected]
    consumed = copy.deepcopy(saved)
    assert entries_from_dicts(consumed, consume=True) == read and consumed == [None] * len(saved)


# The errors a damaged entry may give: the forms of the saved format, and those of the value parsers it names.
ERRORS = re.compile(
    r"^(saved history entry .* is damaged \((KeyError|TypeError|AttributeError|IndexError): .*\)"
    r"|unknown history entry kind .*|a saved tool_result history entry has no call|unknown message block type .*"
    r"|unknown stop kind .*|.* is not a valid ToolOutcomeKind|Invalid isoformat string: .*"
    r"|.*base64.*|.*Image.*|.*not supported.*)$",
    re.DOTALL,
)


def test_every_damaged_entry_is_refused_with_a_saved_form_error_or_read_as_a_valid_entry() -> None:
    cases = refused = 0
    for data in base_dicts():
        for path, change, copied in damaged(data):
            cases += 1
            try:
                (entry,) = entries_from_dicts([copied])
            except ValueError as error:
                refused += 1
                assert ERRORS.match(str(error)), (data["kind"], path, change, str(error))
                with pytest.raises(ValueError) as again:
                    _serial.entry_from_dict(copied)
                assert str(again.value) == str(error)
                continue
            if change == "nan":
                continue  # NaN is read as it is (json.loads reads it), and saving refuses it: nothing more to check
            # What was read is a valid entry: it can be saved again, and that saved form reads back to itself.
            rewritten = json.loads(json.dumps(_serial.entry_to_dict(entry, 0)))
            again = _serial.entry_to_dict(_serial.entry_from_dict(rewritten), 0)
            assert json.loads(json.dumps(again)) == rewritten, (data["kind"], path, change)
            if path in (("turn",), ("kind",), ("at",)) and change in ("'DELETE'", "'RENAME'"):
                raise AssertionError(f"a {data['kind']} entry without {path[0]} was read")
    assert cases > 5000 and refused > 2000


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
            read = entries_from_dicts([reply, changed])
            got, asked = read[1].call, read[0].content.message.content[1]
            want = ToolCall(changed["call"]["name"], changed["call"]["args"], changed["call"]["id"])
            assert strict(got) == strict(want), (key, change)
            same = key in CALL.args and type(change) is type(CALL.args[key]) and change == CALL.args[key]
            assert (got is asked) == (same and type(change) is not float), (key, change)
    reordered = copy.deepcopy(result)
    reordered["call"]["args"] = dict(reversed(list(reordered["call"]["args"].items())))
    got = entries_from_dicts([reply, reordered])[1].call
    assert got is not entries[0].content.message.content[1] and got == CALL
    assert list(got.args) == list(reversed(list(CALL.args)))


def test_the_first_bad_seq_is_raised_before_any_damaged_entry() -> None:
    dicts = base_dicts()

    def bad_seq(index: int, item: object) -> ValueError | None:
        seq = item.get("seq") if isinstance(item, dict) else None
        return None if seq == index else ValueError(f"history entry {index} has seq {seq!r}")

    assert entries_from_dicts(copy.deepcopy(dicts), bad_seq) == entries_from_dicts(dicts)
    damaged_early = copy.deepcopy(dicts)
    damaged_early[1]["turn"] = "one"
    damaged_early[5]["seq"] = 99
    with pytest.raises(ValueError, match=r"^history entry 5 has seq 99$"):
        entries_from_dicts(damaged_early, bad_seq)
    damaged_early[5]["seq"] = 5
    with pytest.raises(ValueError, match=r"saved history entry 1 is damaged \(TypeError: turn is not an integer"):
        entries_from_dicts(damaged_early, bad_seq)
    with pytest.raises(ValueError, match=r"^history entry 2 has seq None$"):
        entries_from_dicts([dicts[0], dicts[1], ["not", "an", "object"]], bad_seq)
