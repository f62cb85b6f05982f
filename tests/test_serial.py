"""The saved JSON form of history and its format versions: alpineagents._serial."""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pydantic
import pytest

from alpineagents import _serial as S
from alpineagents._frozen import FrozenDict, FrozenList
from alpineagents.types import (
    AgentInfo,
    ContextChange,
    ContextChangeEntry,
    ErrorEntry,
    Exchange,
    ExchangeEntry,
    ExtraDataEntry,
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

PNG = b"\x89PNG\r\n\x1a\n" + bytes(100)
AT = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
CALL = ToolCall("add", {"a": 1, "b": [2, {"c": None}]}, "c1")


def every_kind() -> list[Any]:
    """One entry of every kind, with every optional key both set and unset somewhere."""
    reply = Reply(
        Message("assistant", (TextBlock("x"), CALL, RawBlock("anthropic", {"type": "thinking", "t": [1]}))),
        Usage(input_tokens=10, output_tokens=2, requests=1, cost=0.5),
        context_tokens=12,
        stop_reason="tool_use",
        model="fake",
    )
    return [
        MessageEntry(kind="user", content="Find the bug", turn=0, at=AT),
        MessageEntry(kind="user", content=(TextBlock("look"), Image(PNG)), turn=0, at=AT),
        MessageEntry(kind="notice", content="[notice] hurry", turn=0, at=AT),
        ContextChangeEntry(
            content=ContextChange("import", 0, 11, messages=(Message.user("a"), Message.assistant("b"))), turn=0
        ),
        RunStartEntry(content=AgentInfo(name="n", model="fake/fake", tools=("add",)), turn=0, at=AT),
        RunStartEntry(content=AgentInfo(model="fake/fake"), parent_id="p", parent_call_id="c9", turn=0, at=AT),
        ModelRequestEntry(content="fake/fake", turn=1, at=AT),
        ModelEventEntry(content=ModelEvent("fallback", "a failed", {"chain": ["a", "b"]}), turn=1, at=AT),
        ModelReplyEntry(content=reply, turn=1, at=AT),
        ToolResultEntry(content="3", call=CALL, outcome=ToolOutcomeKind.DONE, turn=1, at=AT),
        ToolResultEntry(
            content=(TextBlock("Loaded x.dev"), Image(PNG)),
            call=CALL,
            outcome="aborted",
            late=True,
            child_ids=("kid1", "kid2"),
            usage=Usage(input_tokens=3, requests=1),
            error=RuntimeError("boom"),
            turn=1,
            at=AT,
        ),
        ExchangeEntry(kind="ask", content=Exchange("q?", {"ok": [True]}), usage=Usage(requests=1), turn=1, at=AT),
        ExchangeEntry(kind="human", content=Exchange("Run it?", None), turn=1, at=AT),
        ContextChangeEntry(
            content=ContextChange("compact", 50, 10, summary="done so far", kept=1, usage=Usage(requests=1)),
            turn=1,
            at=AT,
        ),
        ContextChangeEntry(content=ContextChange("clear_tool_results", 50, 10, cleared=("c1",)), turn=1, at=AT),
        ContextChangeEntry(content=ContextChange("restore", 50, 10, restored_to=3), turn=1, at=AT),
        StopEntry(content=StoppedByUntil("waiting_for_user"), turn=1, at=AT),
        StopEntry(content=StoppedByLimit(3), turn=1, at=AT),
        StopEntry(content=StoppedByFinish({"summary": "done"}), turn=1, at=AT),
        StopEntry(content=StoppedByPermission(CALL, "DecideByHuman()"), turn=1, at=AT),
        StopEntry(content=None, turn=1, at=AT),
        ExtraDataEntry(content={"seen": ["x", {"n": 1}]}, turn=0, at=AT),
        ExtraDataEntry(content={}, removed=("old",), turn=0, at=AT),
        ErrorEntry(content="ValueError: x", error=ValueError("x"), turn=1, at=AT),
        ErrorEntry(content="RuntimeError: boom", call=CALL, turn=1, at=AT),
    ]


def roundtrip(entry: Any, seq: int = 0) -> Any:
    return S.entry_from_dict(json.loads(json.dumps(S.entry_to_dict(entry, seq))))


def test_the_format_versions_and_the_names_of_the_saved_form() -> None:
    assert S.VERSION == 5
    assert S.MIN_VERSION == 4
    for name in S.__all__:
        assert hasattr(S, name)
    assert S.__all__[:3] == ["VERSION", "MIN_VERSION", "InfoDict"]


def test_every_kind_round_trips_through_json() -> None:
    kinds = set()
    for seq, entry in enumerate(every_kind()):
        data = S.entry_to_dict(entry, seq)
        assert list(data)[:5] == ["seq", "kind", "turn", "at", "content"]
        assert data["seq"] == seq
        assert "v" not in data and "error" not in data
        back = roundtrip(entry, seq)
        assert back == entry
        assert type(back) is type(entry)
        assert back.at == entry.at
        kinds.add(entry.kind)
    assert len(kinds) == 13


def test_optional_keys_only_when_set() -> None:
    plain_result = S.entry_to_dict(ToolResultEntry(content="3", call=CALL, outcome="done", turn=1), 0)
    assert list(plain_result) == ["seq", "kind", "turn", "at", "content", "call", "outcome"]
    full = S.entry_to_dict(every_kind()[10], 0)
    assert list(full)[5:] == ["call", "outcome", "late", "usage", "child_ids"]
    assert full["late"] is True and full["child_ids"] == ["kid1", "kid2"]
    run = S.entry_to_dict(every_kind()[4], 0)
    assert "parent_id" not in run and "parent_call_id" not in run
    child_run = S.entry_to_dict(every_kind()[5], 0)
    assert (child_run["parent_id"], child_run["parent_call_id"]) == ("p", "c9")
    assert "call" not in S.entry_to_dict(every_kind()[-2], 0)
    assert S.entry_to_dict(every_kind()[-1], 0)["call"] == {
        "name": "add",
        "args": {"a": 1, "b": [2, {"c": None}]},
        "id": "c1",
    }
    assert "removed" not in S.entry_to_dict(every_kind()[-4], 0)
    assert S.entry_to_dict(every_kind()[-3], 0)["removed"] == ["old"]
    assert "usage" not in S.entry_to_dict(every_kind()[12], 0)


def test_child_ids_usage_and_parent_keys_are_written_only_when_set() -> None:
    closing = ToolResultEntry(content="r", call=CALL, outcome="done", child_ids=("kid1",), usage=Usage(), turn=1)
    data = S.entry_to_dict(closing, 4)
    assert data["child_ids"] == ["kid1"]
    assert data["usage"] == {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "requests": 0,
        "cost": None,
    }
    assert roundtrip(closing) == closing


def test_format_4_entries_read_with_the_defaults() -> None:
    old = {"seq": 2, "kind": "tool_result", "turn": 1, "at": "2026-01-01T09:00:00+00:00", "content": "x"}
    old |= {"call": {"name": "add", "args": {}, "id": "c1"}, "outcome": "done"}
    entry = S.entry_from_dict(old)
    assert entry.child_ids == () and entry.usage is None and entry.late is False
    assert S.entry_from_dict({**old, "late": True}).late is True
    with pytest.raises(ValueError, match="is damaged"):
        S.entry_from_dict({**old, "child_ids": "kid1"})
    run = {"seq": 0, "kind": "run_start", "turn": 0, "at": "2026-01-01T09:00:00+00:00"}
    run["content"] = {"name": None, "model": "m", "system_sha256": None, "tools": [], "mcp_servers": []}
    loaded = S.entry_from_dict(run)
    assert loaded.parent_id is None and loaded.parent_call_id is None


def test_stop_objects_round_trip() -> None:
    call = ToolCall("delete_file", {"path": "main.py"}, "c9")
    cases: list[tuple[Any, Any]] = [
        (StoppedByUntil("waiting_for_user"), {"kind": "until", "name": "waiting_for_user"}),
        (StoppedByLimit(3), {"kind": "limit", "turns": 3}),
        (StoppedByFinish({"x": 1}), {"kind": "finish", "answer": {"x": 1}}),
        (StoppedByFinish(), {"kind": "finish", "answer": None}),
        (
            StoppedByPermission(call, "DecideByHuman()"),
            {
                "kind": "permission",
                "call": {"name": "delete_file", "args": {"path": "main.py"}, "id": "c9"},
                "permission": "DecideByHuman()",
            },
        ),
    ]
    for value, expected in cases:
        assert S.stopped_to_dict(value) == expected
        assert S.stopped_from_dict(expected) == value
    assert S.stopped_to_dict(None) is None and S.stopped_from_dict(None) is None
    assert S.stopped_from_dict({"kind": "finish"}) == StoppedByFinish(None)
    with pytest.raises(ValueError, match="unknown stop kind 'timeout'"):
        S.stopped_from_dict({"kind": "timeout"})
    with pytest.raises(TypeError, match="cannot save a stop reason of type str"):
        S.stopped_to_dict("done")  # type: ignore[arg-type]


def test_a_message_stop_reason_is_written_only_when_set() -> None:
    message = Message("assistant", (TextBlock("x"),), tokens=5, stop_reason="length")
    data = S.message_to_dict(message)
    assert data["stop_reason"] == "length"
    assert S.message_from_dict(data) == message
    assert S.message_from_dict({"role": "assistant", "content": [], "tokens": None}).stop_reason is None
    assert "stop_reason" not in S.message_to_dict(Message.user("hi"))


def test_the_error_field_of_an_entry_is_not_saved() -> None:
    entry = ErrorEntry(content="ValueError: x", error=ValueError("x"), turn=0)
    back = roundtrip(entry)
    assert back == entry and back.error is None


def test_times_are_iso_strings_and_read_back_in_utc() -> None:
    assert S.time_to_str(AT) == "2026-01-01T09:00:00+00:00"
    assert S.time_to_str(AT + timedelta(microseconds=250000)) == "2026-01-01T09:00:00.250000+00:00"
    assert S.time_from_str("2026-01-01T09:00:00+00:00").tzinfo is UTC
    other = S.time_from_str("2026-01-01T09:00:00+02:00")
    assert other.utcoffset() == timedelta(hours=2)
    entry = StopEntry(content=None, turn=0, at=AT)
    assert S.entry_to_dict(entry, 0)["at"] == "2026-01-01T09:00:00+00:00"
    assert roundtrip(entry).at.tzinfo is UTC


def test_values_that_are_not_json_cannot_be_saved_and_say_where() -> None:
    with pytest.raises(TypeError) as info:
        S.entry_to_dict(
            ModelReplyEntry(content=Reply(Message("assistant", (ToolCall("x", {"s": {1, 2}}, "c"),)), Usage()), turn=1),
            0,
        )
    assert str(info.value).splitlines()[0] == "tool call x args['s'] holds set {1, 2}, which cannot be saved as JSON"
    with pytest.raises(TypeError, match=r"^tool call x args key 1 holds int 1, which cannot be saved as JSON"):
        S.plain({1: "a"}, "tool call x args")
    with pytest.raises(TypeError, match=r"state.extra_data\['k'\]\[1\] holds float nan"):
        S.plain({"k": [1, float("nan")]}, "state.extra_data")
    long = "x" * 100
    with pytest.raises(TypeError) as info:
        S.plain({long.encode()}, "w")
    first = str(info.value).splitlines()[0]
    assert first.startswith("w holds set {b'xxx") and "…, which" in first
    shown = first[len("w holds set ") : first.index(", which")]
    assert len(shown) == 60
    out = S.plain(FrozenDict({"a": FrozenList([1, (2, 3)])}), "w")
    assert type(out) is dict and type(out["a"]) is list and type(out["a"][1]) is list
    assert S.plain(ToolOutcomeKind.DONE, "w") == "done" and type(S.plain(ToolOutcomeKind.DONE, "w")) is str


def test_answers_take_their_json_form() -> None:
    @dataclasses.dataclass
    class Verdict:
        ok: bool

    class Score(pydantic.BaseModel):
        score: int

    assert S.answer(Verdict(True), "answer to 'x'") == {"ok": True}
    frozen = S.answer(Score(score=3), "the finish() answer")
    assert frozen == {"score": 3} and type(frozen) is FrozenDict
    assert S.answer([1, (2,)], "w") == [1, [2]]


def test_images_are_saved_as_base64() -> None:
    entry = MessageEntry(kind="user", content=(TextBlock("see"), Image(PNG)), turn=0)
    data = S.entry_to_dict(entry, 0)
    assert data["content"][1] == {"type": "image", "media_type": "image/png", "data": base64.b64encode(PNG).decode()}
    result = ToolResultBlock("c1", (TextBlock("Loaded"), Image(PNG)), name="load")
    message = S.message_to_dict(Message("user", (result,)))
    assert message["content"][0]["content"][1]["data"] == base64.b64encode(PNG).decode()
    assert S.message_from_dict(message) == Message("user", (result,))


def test_entry_from_dict_errors() -> None:
    base = {"seq": 3, "kind": "stop", "turn": 1, "at": "2026-01-01T09:00:00+00:00", "content": None}
    assert S.entry_from_dict(base) == StopEntry(content=None, turn=1)
    assert S.entry_from_dict({**base, "new_key": 1}) == StopEntry(content=None, turn=1)
    with pytest.raises(ValueError, match=r"^saved history entry 3 is damaged \(KeyError: 'turn'\)$"):
        S.entry_from_dict({k: v for k, v in base.items() if k != "turn"})
    with pytest.raises(ValueError, match="unknown history entry kind 'telepathy'"):
        S.entry_from_dict({**base, "kind": "telepathy"})
    with pytest.raises(ValueError, match="a saved tool_result history entry has no call"):
        S.entry_from_dict({**base, "kind": "tool_result", "content": "x", "outcome": "done", "call": None})
    with pytest.raises(ValueError, match="is not a valid ToolOutcomeKind"):
        S.entry_from_dict(
            {**base, "kind": "tool_result", "content": "x", "outcome": "x", "call": S._call_to_dict(CALL)}
        )  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(ValueError, match="unknown message block type 'hologram'"):
        S.entry_from_dict({**base, "kind": "user", "content": [{"type": "hologram"}]})
    with pytest.raises(ValueError, match="Invalid isoformat"):
        S.entry_from_dict({**base, "at": "yesterday"})
    with pytest.raises(ValueError):
        S.entry_from_dict(
            {**base, "kind": "user", "content": [{"type": "image", "media_type": "image/png", "data": "!!"}]}
        )
    with pytest.raises(ValueError, match="is not supported"):
        S.entry_from_dict(
            {**base, "kind": "user", "content": [{"type": "image", "media_type": "image/svg", "data": "AAAA"}]}
        )
    with pytest.raises(ValueError, match=r"saved history entry 3 is damaged \(TypeError: turn is not an integer"):
        S.entry_from_dict({**base, "turn": "1"})
    with pytest.raises(ValueError, match=r"saved history entry None is damaged"):
        S.entry_from_dict(["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="is damaged"):
        S.entry_from_dict({**base, "kind": "model_request", "content": 5})


def info_args(**changes: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "first_message": "Fix the failing test",
        "created_at": AT,
        "updated_at": AT + timedelta(minutes=7),
        "turn": 2,
        "stopped": StoppedByUntil("waiting_for_user"),
        "finished": False,
    }
    return args | changes


def test_info_dict_shape_and_example() -> None:
    info = S.info_to_dict(**info_args())
    assert json.dumps(info, separators=(",", ":")) == (
        '{"v":5,"first_message":"Fix the failing test","created_at":"2026-01-01T09:00:00+00:00",'
        '"updated_at":"2026-01-01T09:07:00+00:00","turn":2,"stopped":{"kind":"until","name":"waiting_for_user"},'
        '"finished":false,"parent_id":null}'
    )
    assert S.info_to_dict(**info_args(first_message="", parent_id="p"))["first_message"] is None
    assert S.info_to_dict(**info_args(first_message=Message.user("hi")))["first_message"] == "hi"
    back = S.info_from_dict("x", info)
    assert back == info_args() | {"parent_id": None}


def test_the_texts_of_a_format_version_that_cannot_be_read() -> None:
    with pytest.raises(ValueError) as info:
        S.check_version("old", {"v": 3})
    lines = str(info.value).splitlines()
    assert lines[0] == "saved State 'old' was saved by an older alpineagents (format 3, 0.4.x); 0.5 cannot load it"
    assert lines[1].startswith("Fix: ")
    with pytest.raises(ValueError, match=r"^saved State 'older' was saved by an older alpineagents \(format 2\); 0.5"):
        S.check_version("older", {"v": 2})
    for v in (6, 99):
        with pytest.raises(ValueError) as info:
            S.check_version("new", {"v": v})
        assert str(info.value).splitlines()[0] == (
            f"saved State 'new' was saved by a newer alpineagents (format {v}); this alpineagents reads formats 4 to 5"
        )
        assert "upgrade alpineagents" in str(info.value)
    for bad in ({}, {"v": "5"}, {"v": True}, {"v": 5.0}):
        with pytest.raises(ValueError, match="no format version"):
            S.check_version("x", bad)
    S.check_version("x", {"v": 4})
    S.check_version("x", {"v": 5})


def test_the_info_dict_reads_back_as_state_info_arguments() -> None:
    info = dict(S.info_to_dict(**info_args()))
    with pytest.raises(ValueError, match="damaged: its info has no turn, finished"):
        S.info_from_dict("x", {k: v for k, v in info.items() if k not in ("turn", "finished")})
    with pytest.raises(ValueError, match="no parent_id"):
        S.info_from_dict("x", {k: v for k, v in info.items() if k != "parent_id"})
    v4 = {k: v for k, v in info.items() if k != "parent_id"} | {"v": 4, "stopped": {"kind": "limit", "turns": 3}}
    args = S.info_from_dict("x", v4)
    assert args["parent_id"] is None and args["stopped"] == StoppedByLimit(3)
    assert S.info_from_dict("x", info | {"extra": 1})["turn"] == 2


def test_usage_and_agent_info_shapes() -> None:
    usage = Usage(1, 2, 3, 4, 5, 0.25)
    assert S.usage_from_dict(S.usage_to_dict(usage)) == usage
    assert S.usage_from_dict({"requests": 1}) == Usage(requests=1)
    info = AgentInfo(name=None, model="fake/fake", system_sha256="ab", tools=("a", "b"), mcp_servers=("m",))
    data = S.agent_info_to_dict(info)
    assert data == {
        "name": None,
        "model": "fake/fake",
        "system_sha256": "ab",
        "tools": ["a", "b"],
        "mcp_servers": ["m"],
    }
    assert S.agent_info_from_dict(data) == info


def test_other_block_types_cannot_be_saved() -> None:
    class Odd:
        pass

    with pytest.raises(TypeError, match="cannot save a message block of type Odd"):
        S.message_to_dict(Message("assistant", (Odd(),)))  # type: ignore[arg-type]


def test_strange_texts_survive() -> None:
    text = "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\udcff안녕하세요"
    entry = MessageEntry(kind="user", content=text, turn=0)
    assert roundtrip(entry) == entry
