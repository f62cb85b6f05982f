"""Tests for alpineagents.types: content blocks, Message, requests and replies, usage, stop reasons, history entries."""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import pickle
import typing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import alpineagents
import alpineagents._values.content as content_module
import alpineagents.types as types_module
from alpineagents._frozen import FrozenDict, FrozenList
from alpineagents.types import (
    CUT_OFF_STOP_REASONS,
    IMAGE_TYPES,
    INVALID_ARGS_KEY,
    NOTICE_PREFIX,
    TRUNCATED_ARGS_MESSAGE,
    AgentInfo,
    Block,
    ContextChange,
    ContextChangeEntry,
    ErrorEntry,
    Exchange,
    ExchangeEntry,
    ExtraDataEntry,
    HistoryEntry,
    HistoryKind,
    Image,
    Message,
    MessageEntry,
    ModelEvent,
    ModelEventEntry,
    ModelReplyEntry,
    ModelRequestEntry,
    Price,
    RawBlock,
    Reply,
    Request,
    RunStartEntry,
    StopEntry,
    Stopped,
    StoppedByFinish,
    StoppedByLimit,
    StoppedByPermission,
    StoppedByUntil,
    TextBlock,
    ToolCall,
    ToolOutcome,
    ToolOutcomeKind,
    ToolResultBlock,
    ToolResultContent,
    ToolResultEntry,
    ToolSpec,
    Usage,
    format_call,
    result_text,
)
from conftest import task

PNG = b"\x89PNG\r\n\x1a\n" + bytes(100)
GIF = b"GIF89a" + bytes(100)
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 " + bytes(100)
JPEG = b"\xff\xd8\xff\xe0" + bytes(10)

ENTRY_CLASSES = (
    MessageEntry,
    ModelRequestEntry,
    ModelReplyEntry,
    ModelEventEntry,
    ToolResultEntry,
    ExchangeEntry,
    ContextChangeEntry,
    RunStartEntry,
    StopEntry,
    ExtraDataEntry,
    ErrorEntry,
)


def sample_entries(at: datetime | None = None) -> list[Any]:
    """One entry of every class (``at`` given or stamped)."""
    call = ToolCall("read", {"path": "a.py"}, "c1")
    reply = Reply(Message("assistant", (TextBlock("hi"), call)), Usage(1, 2, requests=1), 10, "tool_use", "m")
    extra: dict[str, Any] = {} if at is None else {"at": at}
    return [
        MessageEntry(kind="user", content="hi", turn=0, **extra),
        ModelRequestEntry(content="fake/m", turn=1, **extra),
        ModelReplyEntry(content=reply, turn=1, **extra),
        ModelEventEntry(content=ModelEvent("retry", "again", {"n": [1]}), turn=1, **extra),
        ToolResultEntry(content="(done)", call=call, outcome="done", turn=1, **extra),
        ExchangeEntry(kind="ask", content=Exchange("q", {"a": [1]}), usage=Usage(requests=1), turn=1, **extra),
        ContextChangeEntry(content=ContextChange("compact", 10, 5, summary="s"), turn=1, **extra),
        RunStartEntry(content=AgentInfo(model="fake/m"), turn=0, **extra),
        StopEntry(content=StoppedByLimit(3), turn=1, **extra),
        ExtraDataEntry(content={"k": [1]}, removed=["x"], turn=1, **extra),
        ErrorEntry(content="TimeoutError: timed out", error=TimeoutError("timed out"), turn=1, **extra),
    ]


# --- Image -----------------------------------------------------------------------------------------------------


def test_an_image_type_is_read_from_its_bytes() -> None:
    assert Image(PNG).media_type == "image/png"
    assert Image(GIF).media_type == "image/gif"
    assert Image(WEBP).media_type == "image/webp"
    assert Image(JPEG).media_type == "image/jpeg"
    assert Image(b"GIF87a").media_type == "image/gif"
    assert Image(b"\xff\xd8\xff").media_type == "image/jpeg"


def test_an_image_prints_its_type_and_size() -> None:
    assert repr(Image(PNG)) == "Image(image/png, 108B)"
    assert str(Image(PNG)) == "Image(image/png, 108B)"
    assert repr(Image(b"x" * 2048, "image/png")) == "Image(image/png, 2.0KB)"
    assert repr(Image(b"x" * (3 * 1024 * 1024), "image/gif")) == "Image(image/gif, 3.0MB)"


def test_bytes_of_no_known_image_format_are_refused() -> None:
    with pytest.raises(ValueError) as info:
        Image(b"hello")
    text = str(info.value)
    assert "not a PNG, JPEG, GIF or WebP image" in text
    assert "b'hello'" in text
    assert text.splitlines()[0] == "Image data is not a PNG, JPEG, GIF or WebP image (it starts with b'hello')"
    assert "Fix: Pass the bytes of one of those formats, or convert the image first" in text
    assert "Example:" not in text
    with pytest.raises(ValueError):
        Image(b"")
    with pytest.raises(ValueError):
        Image(b"RIFX\x00\x00\x00\x00WEBP")
    with pytest.raises(ValueError, match=r"it starts with b'\\x89PNG\\r\\n\\x1a\\x00'\)"):
        Image(b"\x89PNG\r\n\x1a\x00" + bytes(10))


def test_an_unsupported_media_type_is_refused() -> None:
    with pytest.raises(ValueError) as info:
        Image(b"<svg/>", "image/svg+xml")
    assert "'image/svg+xml' is not supported" in str(info.value)
    assert "leave media_type out to read it from the data" in str(info.value)
    with pytest.raises(ValueError):
        Image(PNG, "image/jpg")
    with pytest.raises(ValueError):
        Image(PNG, "PNG")
    with pytest.raises(ValueError):
        Image(PNG, "IMAGE/PNG")


def test_an_image_needs_bytes() -> None:
    text_b64 = base64.b64encode(PNG).decode()
    with pytest.raises(TypeError) as info:
        Image(text_b64)  # type: ignore[arg-type]
    assert "Image.from_path" in str(info.value)
    assert "(got: str)" in str(info.value)
    assert 'Image(open("chart.png", "rb").read())' in str(info.value)
    for bad in (None, 5, [1, 2]):
        with pytest.raises(TypeError):
            Image(bad)  # type: ignore[arg-type]


def test_bytes_like_data_becomes_bytes_and_a_given_type_is_kept() -> None:
    img = Image(bytearray(PNG))
    assert type(img.data) is bytes
    assert img == Image(PNG)
    assert Image(memoryview(PNG)) == Image(PNG)
    assert type(Image(memoryview(PNG)).data) is bytes
    assert Image(b"not an image", "image/jpeg").media_type == "image/jpeg"
    assert Image(PNG, "image/jpeg") != Image(PNG)
    assert hash(Image(bytearray(PNG))) == hash(Image(PNG))


def test_images_are_read_from_base64_and_from_a_file(tmp_path: Path) -> None:
    assert Image.from_base64(base64.b64encode(PNG).decode()) == Image(PNG)
    assert Image.from_base64(base64.b64encode(b"abc").decode(), "image/png").data == b"abc"
    assert Image(PNG).base64 == base64.b64encode(PNG).decode()
    with pytest.raises(ValueError):
        Image.from_base64("not base64!", "image/png")
    with pytest.raises(ValueError):  # newlines are outside the alphabet
        Image.from_base64(base64.encodebytes(PNG).decode(), "image/png")
    with pytest.raises(ValueError):  # bad padding
        Image.from_base64("iVBORw0", "image/png")
    path = tmp_path / "picture.jpg"
    path.write_bytes(PNG)
    assert Image.from_path(path).media_type == "image/png"
    assert Image.from_path(str(path)) == Image(PNG)
    with pytest.raises(FileNotFoundError):
        Image.from_path(tmp_path / "missing.png")
    text = tmp_path / "notes.png"
    text.write_text("hello")
    with pytest.raises(ValueError):
        Image.from_path(text)


def test_image_base64_is_cached_and_not_a_field() -> None:
    img = Image(PNG)
    assert img.base64 is img.base64
    assert [f.name for f in dataclasses.fields(Image)] == ["data", "media_type"]
    assert img == Image(PNG) and repr(img) == "Image(image/png, 108B)"
    assert pickle.loads(pickle.dumps(img)) == img
    assert copy.deepcopy(img) == img
    with pytest.raises(dataclasses.FrozenInstanceError):
        img.data = b""  # type: ignore[misc]


# --- ToolCall --------------------------------------------------------------------------------------------------


def test_tool_call_args_are_read_only() -> None:
    source: dict[str, Any] = {"path": "a.py", "lines": [1, 2]}
    call = ToolCall("edit", source, "c1")
    assert call.args == {"path": "a.py", "lines": [1, 2]}
    with pytest.raises(TypeError, match="read-only"):
        call.args["path"] = "b"  # type: ignore[index]
    with pytest.raises(TypeError, match="read-only"):
        call.args["lines"].append(3)
    source["path"] = "changed"
    source["lines"].append(9)
    assert call.args == {"path": "a.py", "lines": [1, 2]}
    assert dict(call.args) == {"path": "a.py", "lines": [1, 2]}
    assert json.dumps(call.args) == '{"path": "a.py", "lines": [1, 2]}'

    def f(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    assert f(**call.args) == {"path": "a.py", "lines": [1, 2]}


def test_tool_calls_hash_by_their_id() -> None:
    a = ToolCall("a", {}, "c1")
    b = ToolCall("b", {"x": 1}, "c1")
    assert hash(a) == hash(b) == hash("c1")
    assert a != b
    assert len({a, b}) == 2
    assert {a: 1}[ToolCall("a", {}, "c1")] == 1


def test_tool_call_args_must_be_a_mapping() -> None:
    with pytest.raises(TypeError) as info:
        ToolCall("t", [1], "c")  # type: ignore[arg-type]
    assert "ToolCall args must be a dict (got: list)" in str(info.value)
    assert 'ToolCall("read_file", {"path": "main.py"}, "call_1")' in str(info.value)


def test_tuples_in_tool_call_args_become_lists() -> None:
    args = ToolCall("t", {"a": (1, 2)}, "c").args
    assert args["a"] == [1, 2]
    assert args["a"] != (1, 2)
    assert json.dumps(args) == '{"a": [1, 2]}'


def test_tool_call_keeps_frozen_args_and_repr() -> None:
    frozen = FrozenDict({"a": [1]})
    assert ToolCall("x", frozen, "c").args is frozen
    assert repr(ToolCall("x", {"a": 1}, "c1")) == "ToolCall(name='x', args={'a': 1}, id='c1')"
    assert type(ToolCall("x", {"a": {"b": [1]}}, "c").args["a"]["b"]) is FrozenList


# --- Message ---------------------------------------------------------------------------------------------------


def test_message_content_becomes_a_tuple_and_a_string_is_refused() -> None:
    with pytest.raises(TypeError) as info:
        Message("user", "hi")  # type: ignore[arg-type]
    assert "tuple of blocks" in str(info.value)
    assert "(got: 'hi')" in str(info.value)
    assert Message("user", [TextBlock("a")]).content == (TextBlock("a"),)  # type: ignore[arg-type]
    assert Message("user", iter([TextBlock("a")])).content == (TextBlock("a"),)  # type: ignore[arg-type]


def test_message_user_puts_the_text_before_the_images() -> None:
    assert Message.user("", Image(PNG)).content == (Image(PNG),)
    assert Message.user("").content == (TextBlock(""),)
    assert Message.user(" ", Image(PNG)).content == (TextBlock(" "), Image(PNG))
    assert Message.user("a", Image(PNG), Image(GIF)).content == (TextBlock("a"), Image(PNG), Image(GIF))
    m = Message.user("hi")
    assert m.role == "user" and m.tokens is None and m.stop_reason is None


def test_message_constructors_refuse_arguments_of_the_wrong_type() -> None:
    with pytest.raises(TypeError) as info:
        Message.user("x", b"raw")  # type: ignore[arg-type]
    assert "Image objects after the text (got: bytes)" in str(info.value)
    with pytest.raises(TypeError) as info:
        Message.user(5)  # type: ignore[arg-type]
    assert "takes the text as a string (got: int)" in str(info.value)
    with pytest.raises(TypeError) as info:
        Message.notice(3)  # type: ignore[arg-type]
    assert "Message.notice takes the text as a string (got: int)" in str(info.value)
    with pytest.raises(TypeError) as info:
        Message.assistant(None)  # type: ignore[arg-type]
    assert "Message.assistant takes the text as a string (got: NoneType)" in str(info.value)
    with pytest.raises(TypeError, match=r"\(got: str\)"):
        Message.user("x", "chart.png")  # type: ignore[arg-type]


def test_a_notice_starts_with_the_notice_prefix_once() -> None:
    for text, expected in (("x", "[notice] x"), ("[notice] x", "[notice] x"), ("", "[notice] ")):
        m = Message.notice(text)
        assert m.text == expected
        assert m.is_notice
        assert m.role == "user"
    assert Message.notice("[NOTICE] x").text == "[notice] [NOTICE] x"


def test_is_notice_reads_the_first_text_block_of_a_user_message() -> None:
    assert Message("user", (Image(PNG), TextBlock("[notice] hi"))).is_notice is True
    assert Message("user", (TextBlock("a"), TextBlock("[notice] b"))).is_notice is False
    assert Message.assistant("[notice] x").is_notice is False
    assert Message("user", (TextBlock("[NOTICE] x"),)).is_notice is False
    assert Message("user", (Image(PNG),)).is_notice is False
    assert Message("user", ()).is_notice is False
    assert Message("user", (ToolResultBlock("c", "[notice] x"), TextBlock("[notice] y"))).is_notice is True


def test_message_text_joins_the_text_blocks_and_tool_calls_keep_their_order() -> None:
    m = Message("assistant", (TextBlock("a"), ToolCall("t", {}, "1"), TextBlock("b")))
    assert m.text == "ab"
    assert m.tool_calls == (ToolCall("t", {}, "1"),)
    assert Message("assistant", ()).text == ""
    assert Message("assistant", ()).tool_calls == ()


@pytest.mark.parametrize("reason", ["max_tokens", "model_context_window_exceeded", "length", "max_output_tokens"])
def test_an_output_limit_stop_reason_is_a_cut_off(reason: str) -> None:
    assert Message("assistant", (), stop_reason=reason).cut_off
    assert Reply(Message.assistant("x"), Usage(), stop_reason=reason).cut_off
    assert reason in CUT_OFF_STOP_REASONS


@pytest.mark.parametrize("reason", ["end_turn", None])
def test_other_stop_reasons_are_not_a_cut_off(reason: str | None) -> None:
    assert not Message("assistant", (), stop_reason=reason).cut_off
    assert not Reply(Message.assistant("x"), Usage(), stop_reason=reason).cut_off


def test_reply_cut_off_reads_its_own_stop_reason() -> None:
    message = Message("assistant", (), stop_reason="max_tokens")
    assert not Reply(message, Usage()).cut_off
    reply = Reply(Message("assistant", (TextBlock("a"), ToolCall("t", {}, "1"))), Usage(), stop_reason="length")
    assert reply.text == "a" and reply.tool_calls == (ToolCall("t", {}, "1"),) and reply.cut_off


def test_message_equality_includes_tokens_and_stop_reason() -> None:
    assert Message("user", (TextBlock("a"),), tokens=3) != Message("user", (TextBlock("a"),))
    assert Message("assistant", (), stop_reason="end_turn") != Message("assistant", ())
    assert Message("user", (TextBlock("a"),), 3, "x") == Message("user", (TextBlock("a"),), 3, "x")
    assert hash(Message.user("a")) == hash(Message.user("a"))


# --- Usage and Price -------------------------------------------------------------------------------------------


def test_a_usage_sum_keeps_the_cost_of_the_side_with_requests() -> None:
    assert Usage(requests=1, cost=0.5) + Usage(requests=2, cost=0.25) == Usage(requests=3, cost=0.75)
    assert (Usage(requests=1, cost=0.5) + Usage(requests=1)).cost is None
    assert (Usage(requests=1, cost=0.5) + Usage()).cost == 0.5
    assert (Usage() + Usage(requests=1, cost=0.5)).cost == 0.5


def test_usage_cost_rule_edges() -> None:
    assert (Usage(cost=1.0) + Usage()).cost is None
    assert (Usage(cost=1.0) + Usage(cost=2.0)).cost == 2.0
    assert (Usage(requests=1, cost=1) + Usage(requests=1, cost=2)).cost == 3
    assert type((Usage(requests=1, cost=1) + Usage(requests=1, cost=2)).cost) is int
    assert (Usage(requests=1) + Usage(requests=1, cost=0.5)).cost is None


def test_usage_counts_add_up() -> None:
    total = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4, requests=1) + Usage(
        input_tokens=10, output_tokens=20, cache_read_tokens=30, cache_write_tokens=40, requests=1
    )
    assert total == Usage(11, 22, 33, 44, 2, None)
    assert total.cost is None


def test_usage_adds_only_to_usage() -> None:
    with pytest.raises(TypeError):
        Usage() + 1  # type: ignore[operator]
    with pytest.raises(TypeError):
        1 + Usage()  # type: ignore[operator]
    with pytest.raises(TypeError):
        sum([Usage(requests=1)])  # type: ignore[arg-type]
    assert sum([Usage(requests=1, cost=1.0)] * 2, Usage()).cost == 2.0


def test_cache_hit_rate_is_cache_reads_over_the_total_input() -> None:
    assert Usage(input_tokens=100, cache_read_tokens=300).cache_hit_rate == 0.75
    assert Usage().cache_hit_rate is None
    assert Usage(output_tokens=50).cache_hit_rate is None
    assert Usage(cache_write_tokens=100).cache_hit_rate == 0.0


def test_price_cost_uses_the_input_price_for_unset_cache_prices() -> None:
    assert (
        Price(input=2, output=10).cost(Usage(input_tokens=500_000, output_tokens=100_000, cache_read_tokens=250_000))
        == 2.5
    )
    million = Usage(1_000_000, 1_000_000, 1_000_000, 1_000_000)
    assert Price(input=3, output=15, cache_read=0.3).cost(million) == pytest.approx(21.3)
    assert Price(input=0, output=0).cost(Usage(input_tokens=5)) == 0.0
    assert type(Price(input=0, output=0).cost(Usage(input_tokens=5))) is float
    assert Price(input=3, output=15).cost(Usage(input_tokens=1_000_000, output_tokens=1_000_000)) == 18.0
    assert Price(input=1, output=1, cache_write=5).cost(Usage(cache_write_tokens=1_000_000)) == 5.0
    assert Price(input=1, output=1).cost(Usage(requests=3, cost=9.0)) == 0.0


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.builds(
            Usage,
            st.integers(0, 10**6),
            st.integers(0, 10**6),
            st.integers(0, 10**6),
            st.integers(0, 10**6),
            st.integers(0, 3),
            st.none() | st.integers(0, 100),
        ),
        max_size=6,
    )
)
def test_property_usage_sum_counts(usages: list[Usage]) -> None:
    total = sum(usages, Usage())
    assert total.input_tokens == sum(u.input_tokens for u in usages)
    assert total.output_tokens == sum(u.output_tokens for u in usages)
    assert total.cache_read_tokens == sum(u.cache_read_tokens for u in usages)
    assert total.cache_write_tokens == sum(u.cache_write_tokens for u in usages)
    assert total.requests == sum(u.requests for u in usages)
    counted = [u for u in usages if u.requests]
    if counted and all(u.cost is not None for u in counted):
        assert total.cost == sum(u.cost for u in counted if u.cost is not None)
    elif counted:
        assert total.cost is None


# --- stopped values --------------------------------------------------------------------------------------------


def test_each_stop_reason_prints_its_fixed_text() -> None:
    assert str(StoppedByUntil("waiting_for_user")) == "stopped by waiting_for_user"
    assert str(StoppedByLimit(30)) == "stopped at limit 30"
    assert str(StoppedByFinish({"a": 1})) == "stopped by finish"
    assert (
        str(StoppedByPermission(ToolCall("rm", {}, "c"), "DecideByHuman()")) == "stopped by permission DecideByHuman()"
    )
    assert repr(StoppedByLimit(30)) == "StoppedByLimit(turns=30)"


def test_stop_reasons_compare_by_value_and_are_frozen() -> None:
    assert StoppedByLimit(30) == StoppedByLimit(30) != StoppedByLimit(31)
    with pytest.raises(AttributeError):
        StoppedByLimit(3).turns = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        StoppedByLimit(3).turns = 4  # type: ignore[misc]
    assert StoppedByUntil("finish") != StoppedByFinish()
    assert StoppedByFinish().answer is None


def test_a_finish_answer_is_deep_frozen() -> None:
    s = StoppedByFinish({"files": ["a"]})
    assert s.answer == {"files": ["a"]}
    with pytest.raises(TypeError):
        s.answer["files"].append("b")
    with pytest.raises(TypeError):
        hash(s)
    hash(StoppedByFinish("done"))
    assert StoppedByFinish({"files": ["a"]}) == StoppedByFinish({"files": ["a"]})
    assert type(StoppedByFinish(["a"]).answer) is FrozenList
    hash(StoppedByPermission(ToolCall("rm", {"x": [1]}, "c"), "Deny()"))
    hash(StoppedByUntil("x"))


# --- ToolOutcome -----------------------------------------------------------------------------------------------


def test_a_tool_outcome_kind_given_as_a_string_becomes_its_member() -> None:
    err = RuntimeError("x")
    assert ToolOutcome("aborted", err).kind is ToolOutcomeKind.ABORTED  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ToolOutcome("exploded")  # type: ignore[arg-type]
    assert ToolOutcomeKind.DENIED == "denied"
    assert f"{ToolOutcomeKind.DENIED}" == "denied"
    assert str(ToolOutcomeKind.DENIED) == "denied"
    assert {k.name: k.value for k in ToolOutcomeKind} == {
        "DONE": "done",
        "ERROR": "error",
        "INPUT_ERROR": "input_error",
        "ABORTED": "aborted",
        "INTERRUPTED": "interrupted",
        "DENIED": "denied",
        "CANCELLED": "cancelled",
    }
    assert [k.name for k in ToolOutcomeKind] == [
        "DONE",
        "ERROR",
        "INPUT_ERROR",
        "ABORTED",
        "INTERRUPTED",
        "DENIED",
        "CANCELLED",
    ]
    assert ToolOutcome("done").decided_by is None  # type: ignore[arg-type]
    assert ToolOutcomeKind("done") is ToolOutcomeKind.DONE
    with pytest.raises(ValueError, match="'x' is not a valid ToolOutcomeKind"):
        ToolOutcomeKind("x")


def test_tool_outcome_equality_by_exception_identity() -> None:
    err = RuntimeError("x")
    assert ToolOutcome(ToolOutcomeKind.ABORTED, err) == ToolOutcome("aborted", err)  # type: ignore[arg-type]
    assert ToolOutcome(ToolOutcomeKind.ABORTED, err) != ToolOutcome(ToolOutcomeKind.ABORTED, RuntimeError("x"))
    hash(ToolOutcome(ToolOutcomeKind.DENIED, err, "Deny()"))


# --- entries ---------------------------------------------------------------------------------------------------


def test_a_message_entry_of_one_text_block_holds_the_text() -> None:
    assert MessageEntry(kind="user", content=(TextBlock("hi"),), turn=0).content == "hi"
    both = (TextBlock("hi"), Image(PNG))
    assert MessageEntry(kind="user", content=both, turn=0).content == both
    assert MessageEntry(kind="user", content=[Image(PNG)], turn=0).content == (Image(PNG),)  # type: ignore[arg-type]
    assert MessageEntry(kind="user", content=(), turn=0).content == ()
    two = (TextBlock("a"), TextBlock("b"))
    assert MessageEntry(kind="user", content=two, turn=0).content == two


def test_entries_compare_and_hash_without_their_time_stamp() -> None:
    a = MessageEntry(kind="user", content="Find the bug", turn=0, at=datetime(2024, 1, 1, tzinfo=UTC))
    b = MessageEntry(kind="user", content="Find the bug", turn=0, at=datetime(2025, 6, 1, tzinfo=UTC))
    c = MessageEntry(kind="user", content="Find the bug", turn=0)
    assert a == b == c
    assert hash(a) == hash(b) == hash(c)
    assert "at=datetime.datetime(2024" in repr(a)


def test_a_message_entry_is_made_from_a_user_message_and_gives_it_back() -> None:
    e = MessageEntry.from_message(Message.notice("x"), turn=2)
    assert e.kind == "notice" and e.content == "[notice] x" and e.turn == 2
    with pytest.raises(ValueError) as info:
        MessageEntry.from_message(Message.assistant("x"), turn=0)
    assert "text and images only" in str(info.value)
    with pytest.raises(ValueError, match="text and images only"):
        MessageEntry.from_message(Message("user", (ToolResultBlock("c", "x"),)), turn=0)
    assert MessageEntry(kind="user", content="a", turn=0).message == Message.user("a")
    m = Message.user("look", Image(PNG))
    e2 = MessageEntry.from_message(m, turn=0)
    assert e2.kind == "user" and e2.content == (TextBlock("look"), Image(PNG)) and e2.message == m
    assert MessageEntry.from_message(Message.user("plain"), turn=1).kind == "user"


def test_entries_are_keyword_only_and_need_a_turn() -> None:
    with pytest.raises(TypeError):
        MessageEntry("user", "x", 0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        MessageEntry(kind="user", content="x")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        AgentInfo("n", "m")  # type: ignore[misc]
    with pytest.raises(TypeError):
        AgentInfo()  # type: ignore[call-arg]
    for cls in ENTRY_CLASSES:
        assert any(f.name == "turn" and f.default is dataclasses.MISSING for f in dataclasses.fields(cls))
    with pytest.raises(TypeError):
        StopEntry(turn=0)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        ExchangeEntry(content=Exchange("q", "a"), turn=0)  # type: ignore[call-arg]


def test_a_tool_result_is_an_error_unless_its_outcome_is_done() -> None:
    c = ToolCall("rm", {}, "c")
    e = ToolResultEntry(content="x", call=c, outcome="denied", turn=1)  # type: ignore[arg-type]
    assert e.outcome is ToolOutcomeKind.DENIED
    assert e.is_error is True
    assert ToolResultEntry(content="x", call=c, outcome="done", turn=1).is_error is False  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ToolResultEntry(content="x", call=c, outcome="nope", turn=1)  # type: ignore[arg-type]
    for kind in ToolOutcomeKind:
        assert ToolResultEntry(content="x", call=c, outcome=kind, turn=1).is_error is (kind != "done")


def test_child_ids_become_a_tuple_and_the_error_is_ignored_by_equality() -> None:
    c = ToolCall("task", {}, "c")
    with pytest.raises(TypeError) as info:
        ToolResultEntry(content="x", call=c, outcome="done", child_ids="kid", turn=1)  # type: ignore[arg-type]
    assert "not one string" in str(info.value)
    assert "(got: 'kid')" in str(info.value)
    with pytest.raises(TypeError, match="not one string"):
        ToolResultEntry(content="x", call=c, outcome="done", child_ids=b"kid", turn=1)  # type: ignore[arg-type]
    e = ToolResultEntry(content="x", call=c, outcome="done", child_ids=["a", "b"], turn=1)  # type: ignore[arg-type]
    assert e.child_ids == ("a", "b")
    a = ToolResultEntry(content="x", call=c, outcome="error", error=RuntimeError("1"), turn=1)  # type: ignore[arg-type]
    b = ToolResultEntry(content="x", call=c, outcome="error", error=None, turn=1)  # type: ignore[arg-type]
    assert a == b
    assert hash(a) == hash(b)


def test_lists_given_to_values_become_tuples() -> None:
    e = ExtraDataEntry(content={"a": [1]}, removed=["b"], turn=0)  # type: ignore[arg-type]
    assert type(e.content) is FrozenDict
    assert type(e.content["a"]) is FrozenList
    assert e.removed == ("b",)
    assert AgentInfo(model="x", tools=["t"]).tools == ("t",)  # type: ignore[arg-type]
    assert AgentInfo(model="x") == AgentInfo(model="x", tools=[])  # type: ignore[arg-type]
    assert AgentInfo(model="x", mcp_servers=["s"]).mcp_servers == ("s",)  # type: ignore[arg-type]
    assert ContextChange("clear_tool_results", 10, 5, cleared=["c1"]) == ContextChange(  # type: ignore[arg-type]
        "clear_tool_results", 10, 5, cleared=("c1",)
    )
    imported = ContextChange("import", 0, 5, messages=[Message.user("a")])  # type: ignore[arg-type]
    assert imported.messages == (Message.user("a"),)


def test_json_fields_are_deep_frozen() -> None:
    event = ModelEvent("fallback", "a failed")
    assert type(event.data) is FrozenDict and event.data == {}
    with pytest.raises(TypeError):
        ModelEvent("fallback", "m", {"chain": ["a", "b"]}).data["chain"].append("c")
    assert type(Exchange("q", {"k": [1]}).answer) is FrozenDict
    assert Exchange("q", None).answer is None
    assert type(Exchange("q", (1, 2)).answer) is FrozenList
    assert type(RawBlock("anthropic", {"type": "thinking", "x": [1]}).data["x"]) is FrozenList
    with pytest.raises(TypeError):
        hash(event)
    with pytest.raises(TypeError):
        hash(RawBlock("p", {}))
    with pytest.raises(TypeError):
        hash(ModelEventEntry(content=event, turn=0))
    with pytest.raises(TypeError):
        hash(ExtraDataEntry(content={}, turn=0))


def test_entries_read_the_clock_hook_once_when_built_without_a_stamp(monkeypatch: pytest.MonkeyPatch) -> None:
    assert StopEntry(content=None, turn=0).at.tzinfo is UTC
    assert StopEntry(content=None, turn=0).at.tzinfo is timezone.utc  # noqa: UP017
    fixed = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    calls: list[int] = []

    def fake_now() -> datetime:
        calls.append(1)
        return fixed

    monkeypatch.setattr(types_module, "_now", fake_now)
    assert StopEntry(content=None, turn=0).at == fixed
    assert len(calls) == 1
    explicit = datetime(2020, 1, 1, tzinfo=UTC)
    entry = MessageEntry(kind="user", content="x", turn=0, at=explicit)
    assert entry.at == explicit and len(calls) == 1
    assert dataclasses.replace(entry, turn=5).at == explicit and len(calls) == 1
    for entry in sample_entries():
        assert entry.at == fixed
    assert len(calls) == 1 + len(ENTRY_CLASSES)


def test_default_now_is_current_utc() -> None:
    before = datetime.now(UTC)
    at = types_module._now()
    after = datetime.now(UTC)
    assert before <= at <= after and at.tzinfo is UTC
    stamped = ErrorEntry(content="x", turn=0).at
    assert abs(stamped - datetime.now(UTC)) < timedelta(seconds=5)


def test_every_history_kind_belongs_to_exactly_one_entry_class() -> None:
    assert typing.get_args(HistoryEntry) == ENTRY_CLASSES
    kinds: list[str] = []
    for cls in typing.get_args(HistoryEntry):
        kinds.extend(typing.get_args(typing.get_type_hints(cls)["kind"]))
    assert sorted(kinds) == sorted(typing.get_args(HistoryKind))
    assert len(kinds) == 13
    assert typing.get_args(HistoryKind) == (
        "user",
        "notice",
        "model_request",
        "model_reply",
        "model_event",
        "tool_result",
        "ask",
        "human",
        "context_change",
        "run_start",
        "stop",
        "extra_data",
        "error",
    )


def test_the_package_exports_the_user_facing_types_only() -> None:
    assert alpineagents.Image is types_module.Image  # type: ignore[attr-defined]
    assert not hasattr(alpineagents, "Stopped")
    assert not hasattr(alpineagents, "TextBlock")
    assert not hasattr(alpineagents, "format_call")
    assert types_module.NOTICE_PREFIX == "[notice] "
    assert types_module.INVALID_ARGS_KEY == "__invalid_json__"
    assert "Stopped" not in alpineagents.__all__  # type: ignore[attr-defined]


def test_root_reexports_are_the_same_objects() -> None:
    names = (
        "Price Usage ToolCall Reply Request Message ToolSpec HistoryEntry MessageEntry ModelRequestEntry "
        "ModelReplyEntry ModelEventEntry ToolResultEntry ExchangeEntry ContextChangeEntry RunStartEntry StopEntry "
        "ExtraDataEntry ErrorEntry ContextChange ModelEvent ToolOutcome ToolOutcomeKind StoppedByUntil "
        "StoppedByLimit StoppedByFinish StoppedByPermission AgentInfo Image CUT_OFF_STOP_REASONS"
    ).split()
    for name in names:
        assert name in alpineagents.__all__, name  # type: ignore[attr-defined]
        assert getattr(alpineagents, name) is getattr(types_module, name)
    hidden = (
        "TextBlock ToolResultBlock ToolResultContent RawBlock Block HistoryKind Exchange ContextChangeKind Stopped "
        "NOTICE_PREFIX INVALID_ARGS_KEY TRUNCATED_ARGS_MESSAGE format_call result_text IMAGE_TYPES"
    ).split()
    for name in hidden:
        assert not hasattr(alpineagents, name), name


def test_types_all_in_order() -> None:
    assert (
        types_module.__all__
        == (
            "TextBlock Image ToolCall ToolResultBlock ToolResultContent RawBlock Block Message ToolSpec Request Reply "
            "Usage Price HistoryKind HistoryEntry MessageEntry ModelRequestEntry ModelReplyEntry ModelEventEntry "
            "ToolResultEntry ExchangeEntry ContextChangeEntry RunStartEntry StopEntry ExtraDataEntry ErrorEntry "
            "Exchange ContextChangeKind ContextChange AgentInfo ModelEvent ToolOutcomeKind ToolOutcome StoppedByUntil "
            "StoppedByLimit StoppedByFinish StoppedByPermission Stopped NOTICE_PREFIX INVALID_ARGS_KEY "
            "TRUNCATED_ARGS_MESSAGE CUT_OFF_STOP_REASONS format_call result_text IMAGE_TYPES StoppedForApproval "
            "WaitingCall ApprovalDecision RequestInput StoppedForBudget Budget BudgetWait BudgetRaise BudgetStatus"
        ).split()
    )
    for name in types_module.__all__:
        assert hasattr(types_module, name)


def test_constants_and_aliases() -> None:
    assert NOTICE_PREFIX == "[notice] "
    assert INVALID_ARGS_KEY == "__invalid_json__"
    assert TRUNCATED_ARGS_MESSAGE == (
        "The response hit the output token limit (max_tokens), so these arguments are incomplete. Split the work "
        "into smaller calls and try again."
    )
    assert CUT_OFF_STOP_REASONS == frozenset(
        {"max_tokens", "model_context_window_exceeded", "length", "max_output_tokens"}
    )
    assert type(CUT_OFF_STOP_REASONS) is frozenset
    assert IMAGE_TYPES == ("image/png", "image/jpeg", "image/gif", "image/webp")
    assert typing.get_args(Block) == (TextBlock, Image, ToolCall, ToolResultBlock, RawBlock)
    assert typing.get_args(Stopped) == (
        StoppedByUntil,
        StoppedByLimit,
        StoppedByFinish,
        StoppedByPermission,
        types_module.StoppedForApproval,
        types_module.StoppedForBudget,
    )
    assert typing.get_args(ToolResultContent)[0] is str
    assert typing.get_args(types_module.ContextChangeKind) == ("compact", "clear_tool_results", "import", "restore")


# --- display helpers -------------------------------------------------------------------------------------------


def test_format_call_shows_the_arguments_as_json() -> None:
    assert format_call(ToolCall("read_file", {"path": "main.py"}, "c1")) == 'read_file(path="main.py")'
    assert format_call(ToolCall("ping", {}, "c")) == "ping()"
    assert format_call(ToolCall("w", {"b": True, "z": None, "l": [1, "é"]}, "c")) == 'w(b=true, z=null, l=[1, "é"])'
    assert format_call(ToolCall("w", {"s": {1, 2}}, "c")) == "w(s={1, 2})"
    assert format_call(ToolCall("t", {"s": {1, 2}, "by": b"x"}, "c")) == "t(s={1, 2}, by=b'x')"
    assert format_call(ToolCall("w", {"n": 3, "f": 1.5, "d": {"k": "v"}}, "c")) == 'w(n=3, f=1.5, d={"k": "v"})'
    assert format_call(ToolCall("write_file", {"path": "a.md", "content": "x"}, "c")) == (
        'write_file(path="a.md", content="x")'
    )
    assert format_call(ToolCall("e", {"s": 'a"b\nc'}, "c")) == 'e(s="a\\"b\\nc")'


def test_result_text_joins_texts_and_shows_images_by_type_and_size() -> None:
    assert result_text("plain") == "plain"
    assert result_text((TextBlock("Loaded"), Image(PNG))) == "Loaded\n(image/png, 108B)"
    assert result_text(()) == ""
    assert result_text((TextBlock("a"), TextBlock("b"))) == "a\nb"


def test_size_display() -> None:
    size = content_module.format_size
    assert [size(0), size(1023), size(1024), size(1536), size(1048575), size(1048576)] == [
        "0B",
        "1023B",
        "1.0KB",
        "1.5KB",
        "1024.0KB",
        "1.0MB",
    ]


# --- common rules ----------------------------------------------------------------------------------------------


def test_every_class_is_a_frozen_dataclass() -> None:
    classes = [
        TextBlock,
        Image,
        ToolCall,
        ToolResultBlock,
        RawBlock,
        Message,
        ToolSpec,
        Request,
        Reply,
        Usage,
        Price,
        Exchange,
        ContextChange,
        AgentInfo,
        ModelEvent,
        ToolOutcome,
        StoppedByUntil,
        StoppedByLimit,
        StoppedByFinish,
        StoppedByPermission,
        *ENTRY_CLASSES,
    ]
    for cls in classes:
        assert dataclasses.is_dataclass(cls)
        assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    for cls in ENTRY_CLASSES:
        assert all(f.kw_only for f in dataclasses.fields(cls))
        at = next(f for f in dataclasses.fields(cls) if f.name == "at")
        assert at.compare is False


def test_entries_frozen_replace_pickle_copy() -> None:
    for entry in sample_entries():
        with pytest.raises(dataclasses.FrozenInstanceError):
            entry.turn = 9
        with pytest.raises(dataclasses.FrozenInstanceError):
            del entry.turn
        moved = dataclasses.replace(entry, turn=7)
        assert moved.turn == 7 and moved.at == entry.at and type(moved) is type(entry)
        assert pickle.loads(pickle.dumps(entry)) == entry
        assert copy.deepcopy(entry) == entry
        assert copy.copy(entry) == entry
        assert repr(entry).startswith(type(entry).__name__ + "(kind=")


def test_replace_runs_normalization() -> None:
    c = ToolCall("t", {}, "c")
    e = ToolResultEntry(content="x", call=c, outcome="done", turn=1)  # type: ignore[arg-type]
    assert dataclasses.replace(e, outcome="denied").outcome is ToolOutcomeKind.DENIED  # type: ignore[arg-type]
    assert dataclasses.replace(e, child_ids=["k"]).child_ids == ("k",)  # type: ignore[arg-type]
    assert dataclasses.replace(c, args={"a": (1,)}).args == {"a": [1]}
    assert type(dataclasses.replace(c, args={"a": (1,)}).args["a"]) is FrozenList
    m = MessageEntry(kind="user", content="x", turn=0)
    assert dataclasses.replace(m, content=(TextBlock("y"),)).content == "y"


def test_hashability() -> None:
    call = ToolCall("t", {"a": [1]}, "c")
    for value in (
        TextBlock("a"),
        Image(PNG),
        call,
        Usage(),
        Price(1, 2),
        AgentInfo(model="m"),
        ToolOutcome(ToolOutcomeKind.DONE),
        StoppedByUntil("x"),
        StoppedByLimit(1),
        StoppedByPermission(call, "p"),
        Message("assistant", (TextBlock("a"), call)),
        StopEntry(content=StoppedByLimit(1), turn=0),
        ToolResultEntry(content="x", call=call, outcome=ToolOutcomeKind.DONE, turn=0),
    ):
        hash(value)
    with pytest.raises(TypeError):
        hash(ToolSpec("t", "d", {"type": "object"}))
    with pytest.raises(TypeError):
        hash(Message("assistant", (RawBlock("p", {}),)))
    with pytest.raises(TypeError):
        hash(Exchange("q", {"a": 1}))
    with pytest.raises(TypeError):
        hash(StopEntry(content=StoppedByFinish([1]), turn=0))
    hash(Exchange("q", "a"))
    hash(ContextChange("compact", 1, 2))
    hash(Request(None, (Message.user("a"),)))
    hash(Reply(Message.assistant("a"), Usage()))


def test_different_classes_never_equal() -> None:
    assert TextBlock("a") != StoppedByUntil("a")
    assert StopEntry(content=None, turn=0) != ErrorEntry(content="", turn=0)
    assert ModelRequestEntry(content="m", turn=0) != ErrorEntry(content="m", turn=0)


def test_tool_result_block_and_spec_and_request() -> None:
    assert ToolResultBlock("c", ["a"]).content == ("a",)  # type: ignore[arg-type]
    assert ToolResultBlock("c", "text").content == "text"
    with pytest.raises(TypeError):
        ToolResultBlock("c", 5)  # type: ignore[arg-type]
    block = ToolResultBlock("c", (TextBlock("a"), Image(PNG)), name="shot", is_error=True)
    assert block.name == "shot" and block.is_error
    assert ToolResultBlock("c", "x").name == "" and not ToolResultBlock("c", "x").is_error
    schema: dict[str, Any] = {"type": "object"}
    spec = ToolSpec("t", "d", schema)
    assert spec.input_schema is schema
    request = Request("sys", (Message.user("a"),))
    assert request.tools == () and request.tool_choice == "auto"
    reply = Reply(Message.assistant("a"), Usage(requests=1))
    assert reply.context_tokens is None and reply.stop_reason is None and reply.model is None


def test_caller_containers_are_not_shared() -> None:
    data: dict[str, Any] = {"chain": ["a"]}
    event = ModelEvent("fallback", "m", data)
    data["chain"].append("b")
    data["new"] = 1
    assert event.data == {"chain": ["a"]}
    answer: dict[str, Any] = {"k": [1]}
    exchange = Exchange("q", answer)
    answer["k"].append(2)
    assert exchange.answer == {"k": [1]}
    extra: dict[str, Any] = {"notes": []}
    entry = ExtraDataEntry(content=extra, turn=0)
    extra["notes"].append("x")
    assert entry.content == {"notes": []}
    raw: dict[str, Any] = {"thinking": "x", "sig": ["a"]}
    block = RawBlock("anthropic", raw)
    raw["sig"].append("b")
    assert block.data == {"thinking": "x", "sig": ["a"]}


def test_built_equals_loaded_form() -> None:
    built = ToolResultEntry(
        content=(TextBlock("a"), Image(PNG)),
        call=ToolCall("t", {"a": (1, 2)}, "c"),
        outcome=ToolOutcomeKind.DONE,
        child_ids=("k",),
        usage=Usage(requests=1),
        turn=2,
    )
    loaded = ToolResultEntry(
        content=(TextBlock("a"), Image(bytearray(PNG))),
        call=ToolCall("t", json.loads('{"a": [1, 2]}'), "c"),
        outcome="done",  # type: ignore[arg-type]
        child_ids=["k"],  # type: ignore[arg-type]
        usage=Usage(requests=1),
        turn=2,
        at=datetime(2020, 1, 1, tzinfo=UTC),
    )
    assert built == loaded


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=20), st.integers(0, 3))
def test_property_message_entry_round_trip(text: str, images: int) -> None:
    message = Message.user(text, *([Image(PNG)] * images))
    entry = MessageEntry.from_message(message, turn=0)
    assert entry.message == message
    assert entry.kind == ("notice" if text.startswith(NOTICE_PREFIX) else "user")
    if images == 0:
        assert entry.content == text


# --- values built by the fast constructors -----------------------------------------------------------------------


def sample_values() -> list[Any]:
    """One value of every class of ``alpineagents.types``, each built by its class."""
    call = ToolCall("read", {"path": "a.py"}, "c1")
    return [
        TextBlock("hi"),
        Image(PNG),
        call,
        ToolResultBlock("c1", "done", "read", False),
        RawBlock("anthropic", {"thinking": "x"}),
        Message("assistant", (TextBlock("hi"), call)),
        ToolSpec("read", "Read a file", {"type": "object"}),
        Request("sys", (Message.user("hi"),)),
        Reply(Message.assistant("hi"), Usage(1, 2, requests=1), 10, "end_turn", "m"),
        Usage(1, 2, 3, 4, 1, 0.5),
        Price(3, 15),
        Exchange("q", {"a": [1]}),
        ContextChange("compact", 10, 5, summary="s"),
        AgentInfo(model="fake/m"),
        ModelEvent("retry", "again", {"n": 1}),
        ToolOutcome("denied", None, "DenyAll()"),
        StoppedByUntil("done"),
        StoppedByLimit(3),
        StoppedByFinish({"a": 1}),
        StoppedByPermission(call, "DenyAll()"),
        *sample_entries(),
    ]


def fast_built(value: Any) -> Any:
    """The same value made by the trusted construction the fold, the State and the stores use."""
    from alpineagents._values.construct import maker

    return maker(type(value))(*[getattr(value, f.name) for f in dataclasses.fields(value)])


def attribute_names(value: Any) -> list[str]:
    """Fields, read-only properties and methods of the value's class, and names it does not have."""
    cls = type(value)
    names = [f.name for f in dataclasses.fields(value)]
    names += [n for n in dir(cls) if not n.startswith("_") and n not in names]
    return [*names, "not_a_field", "__class__", "__dict__"]


def attempt(action: Any) -> tuple[type[BaseException], str] | None:
    try:
        action()
    except BaseException as error:  # noqa: BLE001 - the error is what is compared
        return type(error), str(error)
    return None


def test_setting_or_deleting_any_attribute_of_any_value_raises_frozen_instance_error() -> None:
    for value in sample_values():
        for name in attribute_names(value):
            for action in (lambda: setattr(value, name, True), lambda: delattr(value, name)):  # noqa: B023
                outcome = attempt(action)
                assert outcome is not None and outcome[0] is dataclasses.FrozenInstanceError, (value, name, outcome)


def test_a_fast_built_value_refuses_every_change_exactly_as_a_class_built_one() -> None:
    for built in sample_values():
        if type(built) is Image:  # built by its class everywhere
            continue
        fast = fast_built(built)
        assert fast == built and type(fast) is type(built) and repr(fast) == repr(built)
        for name in attribute_names(built):
            expected = attempt(lambda: setattr(built, name, True))  # noqa: B023
            assert expected == (dataclasses.FrozenInstanceError, f"cannot assign to field {name!r}")
            assert attempt(lambda: setattr(fast, name, True)) == expected  # noqa: B023
            assert attempt(lambda: delattr(fast, name)) == attempt(lambda: delattr(built, name))  # noqa: B023
        assert fast == built


def test_entries_of_a_real_run_and_of_a_loaded_state_refuse_every_change(tmp_path: Path) -> None:
    from alpineagents import Agent
    from alpineagents.store import FileStore
    from alpineagents.testing import FakeModel, tool_call
    from alpineagents.tool import tool

    @tool
    def peek(path: str) -> str:
        """Read a file."""
        return "text"

    store = FileStore(tmp_path)
    agent = Agent(FakeModel([tool_call("peek", path="a.py"), "done"]), tools=[peek], store=store, reporter=None)
    state = task("Look at a.py")
    agent.run(state)
    loaded = store.load(state.id)
    values = [*state.history, *loaded.history, *state.messages, *loaded.messages]
    assert any(isinstance(v, ToolResultEntry) for v in loaded.history)
    for value in values:
        rebuilt = dataclasses.replace(value)  # made by its class
        assert rebuilt == value
        for name in attribute_names(value):
            expected = attempt(lambda: setattr(rebuilt, name, True))  # noqa: B023
            assert expected is not None and expected[0] is dataclasses.FrozenInstanceError
            assert attempt(lambda: setattr(value, name, True)) == expected  # noqa: B023
            assert attempt(lambda: delattr(value, name)) == attempt(lambda: delattr(rebuilt, name))  # noqa: B023
    entry = next(v for v in loaded.history if isinstance(v, ToolResultEntry))
    with pytest.raises(AttributeError, match="cannot assign to field 'is_error'"):
        entry.is_error = True  # type: ignore[misc]
    assert entry.is_error is False


def test_a_maker_gives_exactly_the_value_its_class_gives_from_the_same_fields() -> None:
    from alpineagents._values.construct import maker

    make_message = maker(Message)
    assert make_message("user", [TextBlock("hi")], None, None) == Message.user("hi")
    assert type(make_message("user", [TextBlock("hi")], None, None).content) is tuple
    with pytest.raises(TypeError) as made:
        make_message("user", "hi", None, None)
    with pytest.raises(TypeError) as built:
        Message("user", "hi")  # type: ignore[arg-type]
    assert str(made.value) == str(built.value)
    call = maker(ToolCall)("t", {"a": (1, 2)}, "c")
    assert call == ToolCall("t", {"a": [1, 2]}, "c") and type(call.args) is FrozenDict
    entry = maker(ToolResultEntry)("tool_result", "x", call, "denied", False, None, ["k"], None, 1, types_module._now())
    assert entry == ToolResultEntry(content="x", call=call, outcome="denied", child_ids=("k",), turn=1)  # type: ignore[arg-type]
    assert entry.outcome is ToolOutcomeKind.DENIED and entry.child_ids == ("k",)
    assert maker(Message) is make_message  # one maker per class, shared
    with pytest.raises(TypeError, match="not a value class"):
        maker(Image)
