"""Tests of alpineagents.state: construction, properties, the fold, public methods and recording operations.

The State is driven through its public methods and its recording operations (the underscore methods the Agent,
the runner and the stores use; no Agent needed), except where an Agent is part of the behaviour.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import pickle
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import alpineagents.types as types_module
from alpineagents._frozen import FrozenDict
from alpineagents.state import (
    CLEARED,
    INTERRUPTED,
    LATE_RESULT,
    NOT_RUN_YET,
    STOPPED_TURN,
    STOPPED_WAITING,
    SUMMARY_PREFIX,
    UNSAVED_RESULT,
    State,
    StateSnapshot,
    check_id,
    closed_outcome,
    closed_result,
    fold,
)
from alpineagents.types import (
    AgentInfo,
    ContextChange,
    ContextChangeEntry,
    ErrorEntry,
    ExtraDataEntry,
    Image,
    Message,
    MessageEntry,
    ModelEvent,
    ModelReplyEntry,
    ModelRequestEntry,
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
from conftest import kinds, results, slowness, task, timed

PNG = b"\x89PNG\r\n\x1a\n" + bytes(100)
MODEL = "fake/fake"


def make_reply(text: str = "", *calls: ToolCall, usage: Usage | None = None, **kw: Any) -> Reply:
    content: tuple[Any, ...] = ((TextBlock(text),) if text else ()) + calls
    return Reply(Message("assistant", content), usage if usage is not None else Usage(requests=1), **kw)


def think(state: State, text: str = "", *calls: ToolCall, **kw: Any) -> Reply:
    state._begin_think(MODEL)
    reply = make_reply(text, *calls, **kw)
    state._record_reply(reply)
    return reply


def same_as_replay(state: State) -> bool:
    rebuilt = State(history=state.history).snapshot()
    snap = state.snapshot()
    if rebuilt != snap:
        return False
    for f in dataclasses.fields(StateSnapshot):
        if f.name.startswith("_") and f.name != "_memo" and getattr(rebuilt, f.name) != getattr(snap, f.name):
            return False
    return True


def echo_turns(state: State, n: int, tokens: bool = False) -> list[ToolCall]:
    calls = []
    for i in range(1, n + 1):
        call = ToolCall("echo", {"i": i}, f"id{i}")
        think(state, "", call, context_tokens=100 * i if tokens else None)
        state._tool_result(call, f"result{i}", ToolOutcomeKind.DONE)
        calls.append(call)
    return calls


# --- construction, the fold and the public methods -----------------------------------------------------------------------------------------


def test_an_empty_state_has_no_history_and_default_values() -> None:
    state = State()
    assert state.history == ()
    assert state.messages == ()
    assert state.turn == 0
    assert state.usage == Usage()
    assert state.answer is None
    assert state.stopped is None
    assert state.finished is False
    assert dict(state.extra_data) == {}
    assert state.created_at is None and state.updated_at is None
    assert state.snapshot() == StateSnapshot()
    assert str(state) == ""


def test_messages_and_extra_data_are_recorded_as_import_and_extra_data_entries() -> None:
    state = State(messages=[Message.user("Fix")], extra_data={"repo": "api"})
    assert kinds(state) == ["context_change", "extra_data"]
    assert all(entry.turn == 0 for entry in state.history)
    change = state.history[0].content
    assert change.kind == "import"
    assert change.before_tokens == 0
    assert change.after_tokens > 0
    assert state.extra_data == {"repo": "api"}


def test_a_positional_argument_is_refused_with_the_keyword_form() -> None:
    with pytest.raises(TypeError) as info:
        State("Fix")  # type: ignore[misc]
    assert "keyword arguments only" in str(info.value)
    assert "State(messages=[Message.user" in str(info.value)


def test_messages_that_are_not_a_list_of_message_objects_are_refused() -> None:
    for bad in ("Fix", Message.user("x"), 42):
        with pytest.raises(TypeError, match=re.escape("State(messages=...)")):
            State(messages=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes Message objects only"):
        State(messages=[Message.user("a"), "b"])  # type: ignore[list-item]


def test_unknown_and_retired_keywords_are_refused_with_guidance() -> None:
    with pytest.raises(TypeError) as info:
        State(task="x")  # type: ignore[call-arg]
    text = str(info.value)
    assert "State has no task in 0.5" in text and "Fix:" in text and "Example:" in text
    with pytest.raises(TypeError) as info:
        State(turn=1)  # type: ignore[call-arg]
    assert "turn=" in str(info.value) and "derived from history" in str(info.value)
    with pytest.raises(TypeError) as info:
        State(mesages=[])  # type: ignore[call-arg]
    text = str(info.value)
    assert "'mesages'" in text
    for keyword in ("id", "messages", "extra_data", "history"):
        assert keyword in text


def test_history_cannot_be_combined_with_messages_or_extra_data() -> None:
    s = task("x")
    with pytest.raises(TypeError, match="history already holds them"):
        State(history=s.history, extra_data={})
    assert State(history=s.history, messages=()).snapshot() == s.snapshot()


def test_ids_are_checked_and_random_ids_are_32_hex_characters() -> None:
    with pytest.raises(ValueError, match="letters, digits"):
        State(id="a b")
    with pytest.raises(TypeError, match="needs the id as a string"):
        State(id=5)  # type: ignore[arg-type]
    assert re.fullmatch(r"[0-9a-f]{32}", State().id)
    assert State(id="x" * 128).id == "x" * 128


def test_extra_data_must_be_json() -> None:
    with pytest.raises(TypeError, match=re.escape("State(extra_data=...)['seen'] must be JSON (got set)")):
        State(extra_data={"seen": {1}})
    with pytest.raises(TypeError, match="its key 1 is a int"):
        State(extra_data={1: "x"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="must be JSON"):
        State(extra_data={"x": float("nan")})


def test_an_inconsistent_history_names_the_entry_that_cannot_follow() -> None:
    s = task("x")
    bad = [s.history[0], ModelReplyEntry(content=make_reply("hi"), turn=0)]
    with pytest.raises(ValueError, match=re.escape("history entry 1 (model_reply)")):
        State(history=bad)
    call = ToolCall("a", {}, "c1")
    think(s, "", call)
    stranger = ToolResultEntry(content="x", call=ToolCall("a", {}, "nope"), outcome="done", turn=1)
    with pytest.raises(ValueError, match=re.escape("(tool_result)")):
        State(history=[*s.history, stranger])


def test_a_text_reply_ends_the_turn_and_becomes_the_answer() -> None:
    state = task("q")
    reply = think(state, "the answer", context_tokens=42, stop_reason="end_turn")
    assert state.turn == 1
    assert state.answer == "the answer"
    last = state.messages[-1]
    assert last.role == "assistant" and last.text == "the answer"
    assert last.tokens == reply.context_tokens == 42
    assert last.stop_reason == reply.stop_reason == "end_turn"


def test_results_enter_the_messages_in_request_order() -> None:
    state = task("q")
    a = ToolCall("a", {}, "c1")
    b = ToolCall("b", {}, "c2")
    think(state, "", a, b)
    assert state.pending_calls == (a, b)
    state._tool_result(b, "rb", ToolOutcomeKind.DONE)
    assert state.pending_calls == (a,)
    state._tool_result(a, "ra", ToolOutcomeKind.DONE)
    assert [block.call_id for block in state.messages[-1].content] == ["c1", "c2"]
    assert state.messages[-1].content[0] == ToolResultBlock("c1", "ra", name="a")
    assert state.pending_calls == ()


def test_messages_added_while_calls_are_pending_wait_for_the_results() -> None:
    state = task("q")
    call = ToolCall("a", {}, "c1")
    think(state, "", call)
    before = state.messages
    state.add_message(Message.user("first"))
    state.add_message(Message.notice("second"))
    assert kinds(state)[-2:] == ["user", "notice"]
    assert state.messages == before
    state._tool_result(call, "r", ToolOutcomeKind.DONE)
    assert [m.text for m in state.messages[-2:]] == ["first", "[notice] second"]
    assert isinstance(state.messages[-3].content[0], ToolResultBlock)


def test_a_message_added_while_the_model_is_waited_on_follows_the_reply() -> None:
    state = task("q1")
    state._begin_think(MODEL)
    state.add_message(Message.user("q2"))
    state._record_reply(make_reply("a1"))
    assert [m.text for m in state.messages[-2:]] == ["a1", "q2"]

    failed = task("q1")
    failed._begin_think(MODEL)
    failed.add_message(Message.user("q2"))
    assert failed.turn == 1
    failed._record_error(TimeoutError("timed out"))
    assert failed.turn == 0
    assert failed.messages[-1].text == "q2"


def test_a_failed_request_takes_its_turn_back() -> None:
    state = task("q")
    before = state.snapshot()
    state._begin_think(MODEL)
    state._record_error(TimeoutError("timed out"))
    assert kinds(state)[-2:] == ["model_request", "error"]
    assert state.history[-1].turn == 1
    assert state.history[-1].content == "TimeoutError: timed out"
    assert state.turn == before.turn and state.messages == before.messages
    state._begin_think(MODEL)
    assert state.history[-1].turn == 1


def test_add_message_refuses_what_is_not_a_user_message() -> None:
    state = task("q")
    history = state.history
    with pytest.raises(TypeError, match="takes a Message"):
        state.add_message("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="user messages only"):
        state.add_message(Message.assistant("x"))
    with pytest.raises(ValueError, match="no text and no image"):
        state.add_message(Message.user("  "))
    with pytest.raises(ValueError, match="text and images only"):
        state.add_message(Message("user", (TextBlock("hi"), ToolCall("t", {}, "c"))))
    assert state.history == history


def test_an_added_message_is_a_user_or_notice_entry_by_its_text() -> None:
    state = State()
    img = Image(PNG)
    state.add_message(Message.user("[notice] typed"))
    state.add_message(Message.user("see [notice] x"))
    state.add_message(Message.user("", img))
    state.add_message(Message.user("plain"))
    entries = state.history
    assert [e.kind for e in entries] == ["notice", "user", "user", "user"]
    assert entries[2].content == (img,)
    assert entries[3].content == "plain" and type(entries[3].content) is str


def test_the_last_non_none_finish_answer_wins() -> None:
    state = task("q")
    state.finish("first")
    state.finish("second")
    state.finish()
    stops = [e for e in state.history if isinstance(e, StopEntry)]
    assert [e.content.answer for e in stops] == ["first", "second", None]
    assert state.finished is True
    assert state.stopped == StoppedByFinish(None)
    assert state.answer == "second"


@dataclasses.dataclass
class Found:
    files: tuple[str, ...]
    count: int


def test_a_finish_answer_is_kept_in_its_json_form() -> None:
    state = State()
    with pytest.raises(TypeError, match=re.escape("the finish() answer holds set")):
        state.finish({1, 2})
    assert state.history == ()
    state.finish(Found(("a", "b"), 2))
    assert state.answer == dataclasses.asdict(Found(("a", "b"), 2)) | {"files": ["a", "b"]}
    assert isinstance(state.answer, FrozenDict)
    with pytest.raises(TypeError):
        state.answer["count"] = 3


def test_a_finished_state_refuses_think_but_takes_messages() -> None:
    state = task("q")
    state.finish()
    with pytest.raises(ValueError, match=re.escape("cannot call think() on a finished State")):
        state._begin_think(MODEL)
    state.compact("summary")
    state.add_message(Message.user("more"))
    with state.edit_extra_data() as data:
        data["k"] = 1
    assert state.extra_data == {"k": 1}


def test_compact_keeps_the_first_user_message_and_the_summary() -> None:
    state = State(messages=[Message.user("Fix"), Message.assistant("ok"), Message.user("more")])
    state.finish("done")
    turn, usage, answer = state.turn, state.usage, state.answer
    state.compact("what I know")
    assert [m.text for m in state.messages] == ["Fix", "[notice] Summary so far:\nwhat I know"]
    change = state.history[-1].content
    assert change.kept == 0 and change.usage is None and change.before_tokens > 0
    assert (state.turn, state.usage, state.answer) == (turn, usage, answer)


def test_compact_of_an_empty_state_and_bad_summaries() -> None:
    state = State()
    state.compact("s")
    assert [m.text for m in state.messages] == ["[notice] Summary so far:\ns"]
    with pytest.raises(ValueError, match="empty summary"):
        state.compact("")
    with pytest.raises(TypeError, match="needs summary to be a string"):
        state.compact(None)  # type: ignore[arg-type]


def test_compact_keeps_the_first_user_message_after_a_notice() -> None:
    state = State()
    state.add_message(Message.notice("note"))
    state.add_message(Message.user("task"))
    state.compact("s")
    assert [m.text for m in state.messages] == ["task", SUMMARY_PREFIX + "s"]


def test_a_model_compaction_keeps_the_messages_added_meanwhile() -> None:
    state = State(messages=[Message.user("first"), Message.assistant("a")])
    state._begin_compact()
    state.add_message(Message.user("m1"))
    state.add_message(Message.notice("m2"))
    usage = Usage(input_tokens=10, output_tokens=5, requests=1, cost=0.5)
    state._compact_done("sum", usage)
    state._end_compact()
    change = state.history[-1].content
    assert change.kept == 2 and change.usage == usage
    assert [m.text for m in state.messages] == ["first", SUMMARY_PREFIX + "sum", "m1", "[notice] m2"]
    assert state.usage == usage
    assert State(history=state.history).messages == state.messages


def test_clear_tool_results_blanks_all_but_the_last_results() -> None:
    state = task("go")
    echo_turns(state, 3, tokens=True)
    assert any(m.tokens is not None for m in state.messages)
    state.clear_tool_results(keep_last=1)
    blocks = [b for m in state.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert [b.content for b in blocks] == [CLEARED, CLEARED, "result3"]
    assert [b.name for b in blocks] == ["echo"] * 3
    assert state.history[-1].content.cleared == ("id1", "id2")
    assert all(m.tokens is None for m in state.messages)
    assert [e.content for e in results(state)] == ["result1", "result2", "result3"]


def test_clear_tool_results_records_nothing_when_nothing_changes() -> None:
    state = task("go")
    echo_turns(state, 3)
    state.clear_tool_results(keep_last=1)
    n = len(state.history)
    state.clear_tool_results(keep_last=1)
    assert len(state.history) == n
    other = task("go")
    echo_turns(other, 2)
    n = len(other.history)
    other.clear_tool_results(keep_last=10)
    assert len(other.history) == n
    for bad in (-1, True, 1.5, "5", None):
        with pytest.raises(ValueError, match=re.escape("keep_last must be an integer >= 0")):
            other.clear_tool_results(bad)  # type: ignore[arg-type]


def test_pending_calls_block_compact_clear_and_restore() -> None:
    state = task("go")
    before = state.snapshot()
    think(state, "", ToolCall("bash", {"cmd": "ls"}, "c1"))
    history = state.history
    for action in (
        lambda: state.compact("s"),
        lambda: state.clear_tool_results(),
        lambda: state.restore(before),
    ):
        with pytest.raises(ValueError, match="calls are pending"):
            action()
    assert state.history == history
    with pytest.raises(ValueError, match=re.escape('cannot call compact() while calls are pending (bash(cmd="ls"))')):
        state.compact("s")
    with state.edit_extra_data() as data:
        data["x"] = 1
    state.finish("submitted")
    assert state.finished and state.pending_calls


def test_an_extra_data_edit_records_what_changed_and_what_was_removed() -> None:
    state = State(extra_data={"a": 1, "b": 2, "c": 3})
    with state.edit_extra_data() as data:
        del data["a"]
        data["b"] = 5
        data["z"] = 0
    entry = state.history[-1]
    assert isinstance(entry, ExtraDataEntry)
    assert entry.content == {"b": 5, "z": 0}
    assert entry.removed == ("a",)
    assert list(state.extra_data) == ["b", "c", "z"]


def test_an_extra_data_edit_compares_values_by_their_json() -> None:
    state = State(extra_data={"a": 1, "d": {"x": 1, "y": 2}, "l": [1]})
    with state.edit_extra_data() as data:
        data["a"] = 1.0
    n = len(state.history)
    with state.edit_extra_data() as data:
        data["a"] = True
    assert len(state.history) == n + 1
    n, updated = len(state.history), state.updated_at
    with state.edit_extra_data() as data:
        data["d"] = {"y": 2, "x": 1}
        data["l"].append(2)
        data["l"].pop()
    assert len(state.history) == n
    assert state.updated_at == updated


def test_an_extra_data_block_that_raises_or_holds_non_json_records_nothing() -> None:
    state = State(extra_data={"a": 1})
    n = len(state.history)
    with pytest.raises(RuntimeError), state.edit_extra_data() as data:
        data["a"] = 2
        raise RuntimeError("boom")
    assert len(state.history) == n and state.extra_data == {"a": 1}

    def other_thread() -> None:
        with state.edit_extra_data() as data:
            data["b"] = 1

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join(5)
    assert not worker.is_alive()
    assert state.extra_data == {"a": 1, "b": 1}
    with pytest.raises(TypeError) as info, state.edit_extra_data() as data:
        data["seen"] = {"a.py"}
    assert "state.extra_data['seen'] must be JSON (got set); use a list: sorted(seen)" in str(info.value)
    with pytest.raises(TypeError, match=re.escape("state.extra_data['k']['deep'][1] must be JSON (got set)")):
        with state.edit_extra_data() as data:
            data["k"] = {"deep": [1, {2}]}
    assert state.extra_data == {"a": 1, "b": 1}


def test_concurrent_extra_data_edits_never_lose_an_update() -> None:
    state = State()

    def work() -> None:
        for _ in range(100):
            with state.edit_extra_data() as data:
                data["n"] = data.get("n", 0) + 1

    workers = [threading.Thread(target=work) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert state.extra_data["n"] == 800
    values = [e.content["n"] for e in state.history if isinstance(e, ExtraDataEntry)]
    assert values == list(range(1, 801))

    opened = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with state.edit_extra_data() as data:
            opened.set()
            release.wait(10)
            data["held"] = True

    holder = threading.Thread(target=hold)
    holder.start()
    assert opened.wait(5)
    state.add_message(Message.user("not blocked"))
    state.finish("also not blocked")
    release.set()
    holder.join(5)
    assert state.extra_data["held"] is True
    assert kinds(state)[-3:] == ["user", "stop", "extra_data"]


def test_extra_data_is_read_only_outside_an_edit_block() -> None:
    state = State(extra_data={"notes": ["a"]})
    with pytest.raises(TypeError, match="edit_extra_data"):
        state.extra_data["x"] = 1
    with pytest.raises(TypeError):
        state.extra_data["notes"].append("b")
    assert json.loads(json.dumps(state.extra_data)) == {"notes": ["a"]}


def test_restore_goes_back_to_a_snapshot_and_keeps_the_usage() -> None:
    state = State(messages=[Message.user("q")], extra_data={"k": 1})
    think(state, "one")
    before = state.snapshot()
    think(state, "two", usage=Usage(requests=1, output_tokens=7))
    with state.edit_extra_data() as data:
        data["k"] = 2
    state.finish("end")
    usage = state.usage
    state.restore(before)
    assert state.messages == before.messages
    assert state.turn == before.turn
    assert state.extra_data == before.extra_data
    assert state.finished is False
    assert state.answer == before.answer == "one"
    assert state.stopped == before.stopped
    assert state.usage == usage
    last = state.history[-1]
    assert last.kind == "context_change" and last.content.restored_to == len(before.history)
    assert same_as_replay(state)


def test_a_restore_lets_the_next_think_reuse_the_turn_number() -> None:
    state = task("q")
    think(state, "one")
    before = state.snapshot()
    think(state, "two")
    state.restore(before)
    think(state, "two again")
    assert [e.turn for e in state.history if isinstance(e, ModelRequestEntry)] == [1, 2, 2]


def test_restore_takes_only_a_snapshot_of_this_state() -> None:
    state = task("q")
    other = task("other")
    with pytest.raises(ValueError) as info:
        state.restore(other.snapshot())
    assert "restore takes a snapshot taken from this State" in str(info.value)
    assert "State(history=snapshot.history)" in str(info.value)
    with pytest.raises(TypeError, match="takes a StateSnapshot"):
        state.restore(state.history)  # type: ignore[arg-type]
    fork_snap = state.fork().snapshot()
    think(state, "a")
    state.restore(fork_snap)
    assert state.turn == 0


def test_restoring_a_snapshot_taken_mid_turn_reopens_its_calls() -> None:
    state = task("q")
    a = ToolCall("a", {}, "c1")
    b = ToolCall("b", {}, "c2")
    think(state, "", a, b)
    state._tool_result(a, "ra", ToolOutcomeKind.DONE)
    mid = state.snapshot()
    state._tool_result(b, "rb", ToolOutcomeKind.DONE)
    state.restore(mid)
    assert state.pending_calls == mid.pending_calls == (b,)
    state._tool_result(b, "rb2", ToolOutcomeKind.DONE)
    results = [blk for blk in state.messages[-1].content if isinstance(blk, ToolResultBlock)]
    assert [r.call_id for r in results] == ["c1", "c2"]
    assert [r.content for r in results] == ["ra", "rb2"]
    assert same_as_replay(state)


def test_restore_is_refused_while_or_to_when_the_model_is_waited_on() -> None:
    state = task("q")
    before = state.snapshot()
    state._begin_think(MODEL)
    waiting = state.snapshot()
    with pytest.raises(ValueError, match="the model is being waited on"):
        state.restore(before)
    state._record_reply(make_reply("a"))
    with pytest.raises(ValueError, match="taken while the model was being waited on"):
        state.restore(waiting)


def test_restores_in_any_order_replay_to_the_same_snapshot() -> None:
    state = task("q")
    s0 = state.snapshot()
    think(state, "one")
    s1 = state.snapshot()
    think(state, "two")
    s2 = state.snapshot()
    for snap, turn in ((s1, 1), (s2, 2), (s0, 0)):
        state.restore(snap)
        assert state.turn == turn
        assert State(history=state.history).snapshot() == state.snapshot()
        assert same_as_replay(state)


def test_a_fork_is_an_independent_state_with_the_same_history() -> None:
    state = task("q")
    think(state, "a")
    fork = state.fork()
    assert re.fullmatch(r"[0-9a-f]{32}", fork.id) and fork.id != state.id
    assert fork.history == state.history
    assert fork.snapshot() == state.snapshot()
    n = len(state.history)
    fork.add_message(Message.user("only in the fork"))
    assert len(state.history) == n
    state._begin_think(MODEL)
    with pytest.raises(ValueError) as info:
        state.fork()
    assert "cannot call fork() while the model is being waited on" in str(info.value)
    assert "on_think_end" in str(info.value)


def test_a_snapshot_is_the_same_object_until_a_record_and_is_frozen() -> None:
    state = task("q")
    snap = state.snapshot()
    assert state.snapshot() is snap
    messages = snap.messages
    state.add_message(Message.user("next"))
    assert state.snapshot() is not snap
    assert snap.messages == messages and len(snap.history) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.turn = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap._queued = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del snap.turn  # type: ignore[misc]
    assert repr(snap) == "<StateSnapshot turn=0 history=1 messages=1 pending=0>"


def test_the_repr_of_a_state() -> None:
    state = State(id="bug-1", messages=[Message.user("x")])
    assert repr(state) == "<State id='bug-1' turn=0 history=1 messages=1 pending=0>"
    state.finish()
    assert repr(state).endswith("pending=0 finished>")


def test_str_of_a_state_has_a_line_per_entry_and_a_done_line() -> None:
    state = task("Find the bug")
    state._start_run(None, AgentInfo(model="fake/fake"))
    call = ToolCall("read_file", {"path": "a.py"}, "c1")
    think(state, "", call)
    state._tool_result(call, "x" * 1300, ToolOutcomeKind.DONE)
    think(state, "The bug is on line 3")
    state._record_stop(StoppedByUntil("waiting_for_user"))
    state._end_run()
    lines = str(state).split("\n")
    assert len(lines) == len(state.history) + 1
    assert "[turn 1] tool_result read_file: 1.3KB" in lines
    assert lines[-1] == "done: stopped by waiting_for_user (2 turns)"
    assert lines[:3] == [
        "[turn 0] context_change import: 1 messages",
        "[turn 0] run_start: fake/fake",
        "[turn 1] model_request: fake/fake",
    ]


def test_a_late_result_becomes_a_notice_and_never_fills_a_later_slot() -> None:
    state = task("q")
    old = ToolCall("bash", {"cmd": "1.0"}, "call_0")
    think(state, "", old)
    state._close_pending(KeyboardInterrupt())
    assert state.history[-1].content == INTERRUPTED
    new = ToolCall("bash", {"cmd": "2.0"}, "call_0")
    think(state, "", new)
    state._late_result(old, "done 1.0", ToolOutcomeKind.DONE)
    assert state.pending_calls == (new,)
    assert state.history[-1].late is True
    state._tool_result(new, "done 2.0", ToolOutcomeKind.DONE)
    state._begin_think(MODEL)
    assert state.messages[-1].text == '[notice] interrupted bash(cmd="1.0") finished later: done 1.0'
    assert state.messages[-1].text == LATE_RESULT.format(call='bash(cmd="1.0")', content="done 1.0")
    late_line = [line for line in str(state).split("\n") if "(late)" in line]
    assert len(late_line) == 1 and late_line[0].endswith(" (late)")
    assert same_as_replay(state)


def test_a_permission_stop_denies_the_call_and_cancels_the_others() -> None:
    state = task("q")
    c1 = ToolCall("bash", {"cmd": "rm -rf /"}, "c1")
    c2 = ToolCall("bash", {"cmd": "ls"}, "c2")
    think(state, "", c1, c2)
    cancelled = state._stop_turn(c1, "too risky", "DenyAll()")
    assert cancelled == [c2]
    denied, cancel, stop = state.history[-3:]
    assert denied.outcome is ToolOutcomeKind.DENIED and denied.content == "too risky"
    assert cancel.outcome is ToolOutcomeKind.CANCELLED and cancel.content == STOPPED_TURN
    assert stop.content == StoppedByPermission(c1, "DenyAll()")
    assert state.finished is False
    assert "[turn 1] tool_result bash (denied): too risky" in str(state).split("\n")
    assert state.pending_calls == ()


def test_the_result_text_of_a_call_closed_by_an_exception() -> None:
    assert closed_result(TimeoutError()) == "(aborted: TimeoutError)"
    assert closed_result(KeyboardInterrupt()) == INTERRUPTED == "(interrupted by user)"
    assert closed_result(asyncio.CancelledError()) == INTERRUPTED
    assert closed_outcome(KeyboardInterrupt()).kind is ToolOutcomeKind.INTERRUPTED
    error = ValueError("x")
    outcome = closed_outcome(error)
    assert outcome.kind is ToolOutcomeKind.ABORTED and outcome.error is error


def test_an_exception_is_recorded_once() -> None:
    state = task("q")
    call = ToolCall("t", {}, "c1")
    think(state, "", call)
    error = RuntimeError("bad thing")
    state._record_error(error, call)
    state._record_error(error)
    errors = [e for e in state.history if isinstance(e, ErrorEntry)]
    assert len(errors) == 1 and errors[0].content == "RuntimeError: bad thing" and errors[0].call == call
    state._record_error(KeyboardInterrupt())
    assert state.history[-1].content == "KeyboardInterrupt"


def test_assigning_a_public_attribute_is_refused_with_guidance() -> None:
    state = State()
    with pytest.raises(AttributeError) as info:
        state.messages = []  # type: ignore[misc]
    assert "state.messages is read-only" in str(info.value) and "only through its commands" in str(info.value)
    with pytest.raises(AttributeError) as info:
        state.mesages = []  # type: ignore[attr-defined]
    assert "State has no attribute 'mesages' and does not accept new attributes" in str(info.value)
    with pytest.raises(AttributeError, match="State method"):
        state.add_message = None  # type: ignore[method-assign, assignment]
    state._mine = 1  # type: ignore[attr-defined]
    assert state._mine == 1  # type: ignore[attr-defined]


def test_reading_a_retired_name_gives_guidance_and_hasattr_is_false() -> None:
    state = State()
    with pytest.raises(AttributeError) as info:
        state.data  # type: ignore[attr-defined]  # noqa: B018
    assert "extra_data" in str(info.value) and "Fix:" in str(info.value)
    assert hasattr(state, "data") is False
    assert getattr(state, "data", "default") == "default"
    with pytest.raises(AttributeError) as info:
        state.nothing  # type: ignore[attr-defined]  # noqa: B018
    assert str(info.value) == "'State' object has no attribute 'nothing'"


def test_child_lookup_errors_name_the_missing_child_or_store() -> None:
    state = task("q")
    with pytest.raises(KeyError, match="not a subagent"):
        state.child("stranger")
    call = ToolCall("sub", {}, "c1")
    think(state, "", call)
    kid = State(id="kid1", messages=[Message.user("sub task")])
    state._add_child("c1", kid, call)
    assert state._children_of("c1") == ("kid1",)
    state._tool_result(call, "done", ToolOutcomeKind.DONE)
    assert state.child("kid1") is kid
    assert state.history[-1].child_ids == ("kid1",)
    copy_ = State(history=state.history)
    with pytest.raises(ValueError) as info:
        copy_.child("kid1")
    assert "no store" in str(info.value) and "Agent(store=" in str(info.value)


def test_imported_replies_set_no_answer_and_an_empty_reply_sets_an_empty_one() -> None:
    assert State(messages=[Message.user("a"), Message.assistant("b")]).answer is None
    state = task("a")
    think(state, "")
    assert state.answer == ""
    assert str(state).split("\n")[-1] == "[turn 1] model_reply: (empty reply)"


def test_the_clock_is_read_once_per_recorded_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    t0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    readings = iter(range(1000))

    def clock() -> datetime:
        return t0 + timedelta(minutes=next(readings))

    monkeypatch.setattr(types_module, "_now", clock)
    state = task("x")
    with state.edit_extra_data() as data:
        data["a"] = 1
    with state.edit_extra_data() as data:
        data["a"] = 1
    with state.edit_extra_data() as data:
        data["b"] = 2
    stamps = [e.at for e in state.history if isinstance(e, ExtraDataEntry)]
    assert stamps == [t0 + timedelta(minutes=1), t0 + timedelta(minutes=2)]
    assert state.updated_at == t0 + timedelta(minutes=2)
    assert state.created_at == t0


def test_the_private_snapshot_fields_are_named_and_ignored_by_equality() -> None:
    names = [f.name for f in dataclasses.fields(StateSnapshot) if f.name.startswith("_")]
    assert names == [
        "_turn_calls",
        "_turn_results",
        "_queued",
        "_waiting",
        "_late_notices",
        "_first_user_message",
        "_last_reply_text",
        "_finish_answer",
        "_parent_id",
        "_parent_call_id",
        "_memo",
    ]
    state = task("q")
    snap = state.snapshot()
    changed = dataclasses.replace(
        snap,
        _queued=(Message.user("h"),),
        _waiting=True,
        _late_notices=("x",),
        _last_reply_text="y",
        _finish_answer="z",
    )
    assert changed == snap
    state._begin_think(MODEL)
    assert state.snapshot()._waiting is True
    state.add_message(Message.user("held"))
    assert len(state.snapshot()._queued) == 1


def test_a_new_state_and_a_fork_are_not_running_and_linked_to_no_agent() -> None:
    state = task("q")
    assert state._running is False and state._agent is None
    agent = object()
    state._start_run(agent, AgentInfo(model="m"))
    assert state._running is True and state._agent is agent
    fork = state.fork()
    assert fork._running is False and fork._agent is None
    state._end_run()
    assert state._running is False and state._agent is agent
    assert state._compacting is None
    state._begin_compact()
    assert state._compacting == 0
    state._end_compact()
    state._end_compact()
    assert state._compacting is None
    state._ensure_no_pending("compact")
    assert state._compacting is None


def test_no_attribute_is_named_stop_requested() -> None:
    assert hasattr(State, "stop_requested") is False
    assert not [name for name in dir(State()) if "stop_request" in name]


# --- further behaviour ------------------------------------------------------------------------------


def test_snapshot_public_names_and_construction() -> None:
    public = [name for name in dir(StateSnapshot()) if not name.startswith("_")]
    assert sorted(public) == sorted(
        [
            "history",
            "messages",
            "pending_calls",
            "turn",
            "usage",
            "extra_data",
            "finished",
            "answer",
            "stopped",
            "created_at",
            "updated_at",
        ]
    )
    assert StateSnapshot(turn=3).turn == 3
    with pytest.raises(TypeError):
        StateSnapshot((), ())  # type: ignore[misc]
    assert StateSnapshot() != "x"
    assert repr(StateSnapshot(finished=True)) == "<StateSnapshot turn=0 history=0 messages=0 pending=0 finished>"
    state = task("q")
    assert public == [name for name in dir(state.snapshot()) if not name.startswith("_")]


def test_snapshots_of_equal_histories_are_equal_at_other_times() -> None:
    a = task("q")
    time.sleep(0.001)
    b = task("q")
    assert a.snapshot() == b.snapshot()
    assert a.created_at != b.created_at


def test_check_id_accepts_letters_digits_underscore_and_dash_only() -> None:
    for bad in ("ü", "", "a b", "a/b", "../x", "dot.id", "x" * 129, "a\n"):
        with pytest.raises(ValueError) as info:
            check_id(bad, "load()")
        assert str(info.value).startswith(f"load() got the id {bad!r}, which may only have")
    with pytest.raises(TypeError, match=re.escape("load() needs the id as a string (got: NoneType)")):
        check_id(None, "load()")
    assert check_id("Ab_-9", "x") == "Ab_-9"


def test_constructor_takes_any_iterable_once() -> None:
    state = State(messages=(m for m in [Message.user("a"), Message.assistant("b")]))
    assert [m.text for m in state.messages] == ["a", "b"]
    extra = {"l": (1, 2)}
    state = State(extra_data=extra)
    extra["l"] = (3,)
    assert state.extra_data == {"l": [1, 2]}
    assert State(messages=[]).history == ()
    assert State(messages=[], extra_data={}).history == ()
    with pytest.raises(TypeError, match=re.escape("State(extra_data=...) takes a dict (got: list)")):
        State(extra_data=[1])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=re.escape("State(history=...) takes history entries (history[1] is 'x')")):
        State(history=[task("q").history[0], "x"])  # type: ignore[list-item]
    for name, text in (("context", "is State(messages=...) in 0.5"), ("data", "is State(extra_data=...) in 0.5")):
        with pytest.raises(TypeError, match=re.escape(text)):
            State(**{name: 1})


def test_history_replay_keeps_the_same_entries() -> None:
    state = task("q")
    think(state, "a")
    copy_ = State(history=state.history)
    assert all(a is b for a, b in zip(copy_.history, state.history, strict=True))
    assert copy_.created_at == state.created_at and copy_.updated_at == state.updated_at


def test_fold_errors() -> None:
    empty = StateSnapshot()
    with pytest.raises(ValueError, match="no request is waiting for this reply"):
        fold(empty, ModelReplyEntry(content=make_reply("x"), turn=0))
    waiting = fold(empty, ModelRequestEntry(content=MODEL, turn=1))
    with pytest.raises(ValueError, match="a request is already waiting on the model"):
        fold(waiting, ModelRequestEntry(content=MODEL, turn=1))
    with pytest.raises(ValueError, match="messages can only be imported between turns"):
        fold(waiting, ContextChangeEntry(content=ContextChange("import", 0, 0, messages=()), turn=1))
    call = ToolCall("t", {"a": 1}, "c1")
    pending = fold(waiting, ModelReplyEntry(content=make_reply("", call), turn=1))
    with pytest.raises(ValueError, match="calls of the last reply have no result yet"):
        fold(pending, ModelRequestEntry(content=MODEL, turn=2))
    with pytest.raises(ValueError, match="cannot compact while calls are pending"):
        fold(pending, ContextChangeEntry(content=ContextChange("compact", 0, 0, summary="s"), turn=1))
    other = ToolCall("t", {"a": 2}, "zz")
    with pytest.raises(ValueError, match=re.escape("t(a=2) is not a pending call, so it cannot get a result")):
        fold(pending, ToolResultEntry(content="r", call=other, outcome="done", turn=1))
    with pytest.raises(ValueError, match="a compact entry needs its summary"):
        fold(empty, ContextChangeEntry(content=ContextChange("compact", 0, 0), turn=0))
    with pytest.raises(ValueError, match="a compact entry cannot keep -1 messages"):
        fold(empty, ContextChangeEntry(content=ContextChange("compact", 0, 0, summary="s", kept=-1), turn=0))
    with pytest.raises(ValueError, match="unknown context change kind 'shrink'"):
        fold(empty, ContextChangeEntry(content=ContextChange("shrink", 0, 0), turn=0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=re.escape("cannot restore to 3: the history has 0 entries before it")):
        fold(empty, ContextChangeEntry(content=ContextChange("restore", 0, 0, restored_to=3), turn=0))
    with pytest.raises(ValueError, match="cannot record an entry of type str"):
        fold(empty, "entry")  # type: ignore[arg-type]
    assert empty == StateSnapshot() and len(waiting.history) == 1


def test_fold_is_pure_on_old_snapshots() -> None:
    state = task("q")
    old = state.snapshot()
    state.add_message(Message.user("live"))
    branch = fold(old, MessageEntry(kind="user", content="branch", turn=0))
    assert [m.text for m in branch.messages] == ["q", "branch"]
    assert [m.text for m in state.messages] == ["q", "live"]
    assert len(old.history) == 1 and len(old.messages) == 1
    state.add_message(Message.user("more"))
    assert [m.text for m in state.messages] == ["q", "live", "more"]
    assert [m.text for m in branch.messages] == ["q", "branch"]


def test_commit_failure_leaves_state_unchanged() -> None:
    state = task("q")
    snap = state.snapshot()
    with pytest.raises(ValueError, match="no request is waiting"):
        state._commit(ModelReplyEntry(content=make_reply("x"), turn=0))
    assert state.snapshot() is snap
    with pytest.raises(ValueError, match="cannot record a result for a call that is not pending: t()"):
        state._tool_result(ToolCall("t", {}, "c9"), "x", ToolOutcomeKind.DONE)
    assert state._tool_result(ToolCall("t", {}, "c9"), "x", ToolOutcomeKind.DONE, if_pending=True) is False
    assert state.snapshot() is snap


def test_begin_think_checks() -> None:
    empty = State()
    with pytest.raises(ValueError, match="on a State with no messages"):
        empty._begin_think(MODEL)
    assert empty.history == ()
    state = task("q")
    state._begin_think(MODEL)
    with pytest.raises(ValueError, match=re.escape("cannot call think() while another think() is waiting")):
        state._begin_think(MODEL)
    state._record_reply(make_reply("", ToolCall("bash", {"cmd": "ls"}, "c1")))
    with pytest.raises(ValueError, match=re.escape('cannot call think() while calls are pending (bash(cmd="ls"))')):
        state._begin_think(MODEL)


def test_run_marks_and_stops() -> None:
    state = task("q")
    info = AgentInfo(model="m", name="bob")
    state._start_run("agent", info, parent=("p1", "call_1"), parent_depth=0, context="ctx")
    assert state._run_context == "ctx" and state._depth == 1
    assert state.parent_id == "p1" and state.parent_call_id == "call_1"
    with pytest.raises(ValueError, match="already being run"):
        state._start_run("agent", info)
    state._record_stop(StoppedByLimit(3))
    assert state.stopped == StoppedByLimit(3)
    state._clear_stop()
    state._clear_stop()
    assert state.stopped is None
    assert kinds(state)[-2:] == ["stop", "stop"]
    state._end_run()
    assert state._run_context is None
    state._start_run("agent", info, parent=("p2", "call_2"))
    assert state.parent_id == "p1" and state._depth == 0
    assert "[turn 0] run_start: m (bob)" in str(state)


def test_model_event_and_exchanges() -> None:
    state = task("q")
    state._record_model_event(ModelEvent("fallback", "a failed"))
    state._record_ask("Which?", {"a": (1, 2)}, Usage(requests=2, cost=0.1))
    state._record_ask("Set?", {1, 2})
    state._record_human("Go on?", True)
    asks = [e for e in state.history if e.kind in ("ask", "human")]
    assert asks[0].content.answer == {"a": [1, 2]}
    assert asks[1].content.answer == repr({1, 2})
    assert asks[2].kind == "human" and asks[2].usage is None
    assert state.usage == Usage(requests=2, cost=0.1)
    assert state.messages == (Message.user("q"),)
    lines = str(state).split("\n")
    assert lines[1].startswith("[turn 0] model_event: ModelEvent(")
    assert lines[2] == "[turn 0] ask: Which? → {'a': [1, 2]}"
    assert lines[4] == "[turn 0] human: Go on? → True"


def test_context_for_question() -> None:
    state = task("q")
    assert state._context_for_question() == state.messages
    a, b = ToolCall("a", {}, "c1"), ToolCall("b", {}, "c2")
    think(state, "", a, b)
    state._tool_result(b, "rb", ToolOutcomeKind.DONE)
    state.add_message(Message.user("held"))
    context = state._context_for_question()
    assert context[:-1] == state.messages
    assert context[-1].content == (
        ToolResultBlock("c1", NOT_RUN_YET, name="a"),
        ToolResultBlock("c2", "rb", name="b"),
    )


def test_str_lines_of_other_entries() -> None:
    state = State(messages=[Message.user("look", Image(PNG))], extra_data={"a": 1})
    with state.edit_extra_data() as data:
        del data["a"]
        data["b"] = 2
    call = ToolCall("fetch_url", {"u": "x"}, "c1")
    think(state, "let me", call, ToolCall("bash", {"cmd": "pwd"}, "c2"))
    state._tool_result(call, "HTTP 404: not found", ToolOutcomeKind.ERROR)
    state._record_error(RuntimeError("bad thing"), ToolCall("boom", {}, "c2"))
    state._close_pending(TimeoutError("t"))
    state.compact("sum")
    state.add_message(Message.user("new\n\nline  here"))
    lines = str(state).split("\n")
    assert "[turn 0] extra_data: set b; removed a" in lines
    assert '[turn 1] model_reply: let me; fetch_url(u="x"); bash(cmd="pwd")' in lines
    assert "[turn 1] tool_result fetch_url (error): HTTP 404: not found" in lines
    assert "[turn 1] error boom: RuntimeError: bad thing" in lines
    assert "[turn 1] tool_result bash (error): (aborted: TimeoutError)" in lines
    assert any(re.fullmatch(r"\[turn 1\] context_change compact: \d+ → \d+ tokens", line) for line in lines)
    assert lines[-1] == "[turn 1] user: new line here"
    image_state = State()
    image_state.add_message(Message.user("look", Image(PNG)))
    assert str(image_state) == "[turn 0] user: look (image/png)"
    long = State()
    long.add_message(Message.user("y" * 100))
    assert str(long) == "[turn 0] user: " + "y" * 59 + "…"


def test_restore_of_hand_built_snapshot_uses_history() -> None:
    state = task("q")
    think(state, "a")
    fake = StateSnapshot(history=state.history[:1], turn=7)
    state.restore(fake)
    assert state.turn == 0
    assert same_as_replay(state)


def test_many_restores_replay_quickly() -> None:
    state = task("q")
    snaps = [state.snapshot()]
    for i in range(60):
        state.add_message(Message.user(f"m{i}"))
        snaps.append(state.snapshot())
        state.restore(snaps[i // 2])
        snaps.append(state.snapshot())
    rebuilt = State(history=state.history)
    assert rebuilt.snapshot() == state.snapshot()
    assert min(timed(lambda: State(history=state.history)) for _ in range(3)) < 0.5 * slowness()
    assert same_as_replay(state)


def test_restore_to_snapshot_taken_after_restores() -> None:
    state = task("q")
    s0 = state.snapshot()
    think(state, "a")
    state.restore(s0)
    think(state, "b")
    after = state.snapshot()
    state.finish("x")
    state.restore(after)
    assert state.answer == "b" and state.turn == 1 and not state.finished
    assert same_as_replay(state)


def test_subagent_usage_accounting() -> None:
    parent = task("q")
    call = ToolCall("sub", {}, "c1")
    think(parent, "", call)
    kid = State(id="kid", messages=[Message.user("sub")])
    think(kid, "warmup", usage=Usage(requests=1, input_tokens=5, cost=1.0))
    parent._add_child("c1", kid, call)
    parent._add_child("c1", kid, call)
    assert parent._children_of("c1") == ("kid",)
    assert kid._depth == 1
    kid.add_message(Message.user("more"))
    think(kid, "work", usage=Usage(requests=2, input_tokens=10, cost=0.5))
    before = parent.usage
    parent._tool_result(call, "done", ToolOutcomeKind.DONE)
    entry = parent.history[-1]
    assert entry.child_ids == ("kid",)
    assert entry.usage == Usage(requests=2, input_tokens=10, cost=0.5)
    assert parent.usage == before + entry.usage
    assert parent._children_of("c1") == ()
    # the tool goes on after its call was closed and the kid works more: a late result counts only that
    kid.add_message(Message.user("again"))
    think(kid, "late work", usage=Usage(requests=1, output_tokens=3, cost=0.25))
    late_kid = State(id="late-kid", messages=[Message.user("x")])
    parent._add_child("c1", late_kid, call)
    assert parent._children_of("c1") == ()
    parent._late_result(call, "finished", ToolOutcomeKind.DONE)
    late = parent.history[-1]
    assert late.late and late.child_ids == ("kid", "late-kid")
    assert late.usage == Usage(requests=1, output_tokens=3, cost=0.25)


def test_call_without_children_has_no_usage() -> None:
    state = task("q")
    call = ToolCall("t", {}, "c1")
    think(state, "", call)
    state._tool_result(call, "x", ToolOutcomeKind.DONE)
    assert state.history[-1].child_ids == () and state.history[-1].usage is None
    state._late_result(call, "y", ToolOutcomeKind.DONE)
    assert state.history[-1].usage is None and state.history[-1].child_ids == ()


def test_fork_carries_children_and_child_store() -> None:
    state = task("q")
    call = ToolCall("t", {}, "c1")
    think(state, "", call)
    kid = State(id="kid")
    state._add_child("c1", kid, call)
    state._child_store = "store"
    fork = state.fork()
    assert fork.child("kid") is kid
    assert fork._child_store == "store" and fork._saved_store is None
    assert fork._children_of("c1") == ()
    fork._children["other"] = State()
    assert "other" not in state._children
    assert fork.pending_calls == (call,)


class _Store:
    """A minimal object standing for a store in the binding and loading hooks (only ==, repr and load)."""

    def __init__(self, name: str, states: dict[str, State] | None = None) -> None:
        self.name = name
        self.states = states or {}
        self.loaded: list[str] = []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Store) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"_Store({self.name!r})"

    def load(self, state_id: str) -> State:
        self.loaded.append(state_id)
        return State(history=self.states[state_id].history)

    async def aload(self, state_id: str) -> State:
        return self.load(state_id)


def test_save_batch_and_binding() -> None:
    state = State(id="s1", messages=[Message.user("q")])
    a = _Store("a")
    create, start, end, snap = state._save_batch(a)
    assert (create, start, end) == (True, 0, 1) and snap is state.snapshot()
    state._mark_saved(a, end)
    assert state._saved_store is a and state._child_store is a and state._saved_count == 1
    state.add_message(Message.user("more"))
    assert state._save_batch(_Store("a"))[:3] == (False, 1, 2)
    with pytest.raises(ValueError) as info:
        state._save_batch(_Store("b"))
    assert str(info.value).startswith(
        "State 's1' is saved in another store (_Store('a')), and a State is saved in one store only "
        "(this one is _Store('b'))"
    )
    state._mark_saved(a, 1)
    assert state._saved_count == 1 or state._saved_count == 2
    fork = state.fork()
    assert fork._save_batch(_Store("b"))[:3] == (True, 0, 2)


def test_from_saved_closes_an_open_turn() -> None:
    state = State(id="run1", messages=[Message.user("q")])
    state._start_run(None, AgentInfo(model="m1"))
    a, b = ToolCall("a", {}, "c1"), ToolCall("b", {}, "c2")
    think(state, "", a, b)
    state._tool_result(a, "ra", ToolOutcomeKind.DONE)
    state.add_message(Message.user("held"))
    store = _Store("s")
    loaded = State._from_saved("run1", state.history, store)
    assert type(loaded) is State and loaded.id == "run1"
    assert loaded._saved_store is store and loaded._child_store is store
    assert loaded._saved_count == len(state.history)
    assert loaded._resume_info == AgentInfo(model="m1")
    last = loaded.history[-1]
    assert last.content == UNSAVED_RESULT and last.outcome is ToolOutcomeKind.ABORTED and last.call == b
    assert loaded.pending_calls == ()
    assert [m.text for m in loaded.messages[-1:]] == ["held"]
    results = loaded.messages[-2].content
    assert [r.content for r in results] == ["ra", UNSAVED_RESULT]

    waiting = State(id="w", messages=[Message.user("q")])
    waiting._begin_think(MODEL)
    loaded = State._from_saved("w", waiting.history, store)
    assert loaded.history[-1].content == STOPPED_WAITING and loaded.turn == 0
    assert loaded._resume_info is None

    bad = [state.history[0], ModelReplyEntry(content=make_reply("x"), turn=0)]
    with pytest.raises(ValueError) as info:
        State._from_saved("bad", bad, store)
    assert str(info.value).startswith("saved State 'bad' is damaged: history entry 1 (model_reply)")
    assert "restore the store's data from a backup, or start a new State" in str(info.value)


def test_child_loads_from_store_every_time() -> None:
    kid = State(id="kid", messages=[Message.user("sub")])
    parent = State(id="p", messages=[Message.user("q")])
    call = ToolCall("t", {}, "c1")
    think(parent, "", call)
    parent._add_child("c1", kid, call)
    parent._tool_result(call, "done", ToolOutcomeKind.DONE)
    store = _Store("s", {"kid": kid})
    loaded = State._from_saved("p", parent.history, store)
    first, second = loaded.child("kid"), loaded.child("kid")
    assert first is not second and first.snapshot() == second.snapshot() == kid.snapshot()
    assert asyncio.run(loaded.achild("kid")).snapshot() == kid.snapshot()
    assert store.loaded == ["kid", "kid", "kid"]


def test_copy_and_pickle() -> None:
    state = task("q")
    think(state, "a")
    clone = copy.copy(state)
    assert clone.history == state.history and clone.id == state.id
    with pytest.raises(TypeError):
        pickle.dumps(state)
    rebuilt = State(history=pickle.loads(pickle.dumps(state.history)))
    assert rebuilt.snapshot() == state.snapshot()
    assert pickle.loads(pickle.dumps(state.snapshot())) == state.snapshot()


def test_a_shallow_copy_records_apart_from_the_original() -> None:
    state = task("q")
    think(state, "a")
    before = state.snapshot()
    clone = copy.copy(state)
    clone.add_message(Message.user("only in the copy"))
    state.add_message(Message.user("only in the original"))
    assert [m.text for m in clone.messages][-1] == "only in the copy"
    assert [m.text for m in state.messages][-1] == "only in the original"
    assert len(state.history) == len(clone.history) == len(before.history) + 1
    assert before.messages == state.messages[:-1] and same_as_replay(state) and same_as_replay(clone)


def test_a_snapshot_shares_no_values_with_its_state() -> None:
    state = task("q")
    snap = state.snapshot()
    assert vars(snap) is not vars(state) and all(value is not vars(snap) for value in vars(state).values())
    think(state, "a")
    state.finish("done")
    assert snap.turn == 0 and snap.answer is None and not snap.finished and len(snap.messages) == 1
    assert vars(state.snapshot()) is not vars(snap)


def test_state_compares_by_identity() -> None:
    a = State(id="x")
    b = State(id="x")
    assert a != b and a == a
    assert len({a, b}) == 2


def test_guard_rules_for_other_names() -> None:
    state = State()
    with pytest.raises(AttributeError, match=re.escape("state.data is gone in 0.5")):
        state.data = {}  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match=re.escape("state.wants_tools() is gone in 0.5")):
        state.wants_tools = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match=re.escape("state.id is read-only")):
        state.id = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="State method"):
        state.snapshot = None  # type: ignore[method-assign, assignment]
    with pytest.raises(AttributeError) as info:
        state.is_answered  # type: ignore[attr-defined]  # noqa: B018
    assert "\n    \n" in str(info.value)

    class Mine(State):
        pass

    mine = Mine()
    with pytest.raises(AttributeError, match="does not accept new attributes"):
        mine.x = 1  # type: ignore[attr-defined]
    mine._x = 1  # type: ignore[attr-defined]


def test_replay_builds_2400_entries_fast() -> None:
    state = task("q")
    for i in range(800):
        call = ToolCall("t", {"i": i}, f"c{i}")
        think(state, "", call)
        state._tool_result(call, "ok", ToolOutcomeKind.DONE)
    history = state.history
    best = min(timed(lambda: State(history=history)) for _ in range(3))
    assert best < 0.05 * slowness()  # the benchmark checks the 5 ms target; this only catches a quadratic replay


def test_waiting_snapshot_carries_no_stop_and_stops_clear() -> None:
    state = task("q")
    state._record_stop(StoppedByUntil("x"))
    state._start_run(None, AgentInfo(model="m"))
    assert state.stopped is None
    state._record_stop(StoppedByFinish("a"))
    state._record_stop(None)
    assert state.finished and state.stopped is None and state.answer == "a"
    assert isinstance(state.history[-1], StopEntry)


def test_entry_after_finish_and_run_start_entries_fold() -> None:
    state = task("q")
    state.finish()
    entries = [*state.history, RunStartEntry(content=AgentInfo(model="m"), turn=0)]
    rebuilt = State(history=entries)
    assert rebuilt.finished and rebuilt.stopped is None


# --- checks that use an Agent -----------------------------------------------------------------------------------


def _echo_agent(replies: list[Any], reporter: Any) -> Any:
    from alpineagents.agent import Agent
    from alpineagents.testing import FakeModel
    from alpineagents.tool import tool

    @tool
    def echo(text: str) -> str:
        """Return the text.

        Args:
            text: What to return.
        """
        return text

    @tool
    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: The file.
        """
        return "x" * 1300

    return Agent(model=FakeModel(replies), tools=[echo, read_file], reporter=reporter, human=None)


def test_context_changes_notify_the_linked_agents_reporter_once() -> None:
    from alpineagents.reporter import Reporter
    from alpineagents.testing import tool_call

    class Changes(Reporter):
        def __init__(self) -> None:
            self.changes: list[tuple[State, ContextChange]] = []

        def on_context_change(self, state: Any, change: ContextChange) -> None:
            self.changes.append((state, change))

    reporter = Changes()
    agent = _echo_agent([tool_call("echo", text="a"), tool_call("echo", text="b"), "done"], reporter)
    state = task("go")
    untouched = task("go")
    untouched.compact("nobody hears this")
    before = state.snapshot()
    agent.think(state)
    agent.use_tools(state)
    agent.think(state)
    agent.use_tools(state)
    agent.think(state)
    assert reporter.changes == []
    state.clear_tool_results(keep_last=0)
    state.clear_tool_results(keep_last=0)  # nothing to clear: nothing recorded, nobody notified
    state.compact("summary")
    state.restore(before)
    recorded = [e.content for e in state.history if isinstance(e, ContextChangeEntry)][1:]
    assert [change.kind for change in recorded] == ["clear_tool_results", "compact", "restore"]
    assert len(reporter.changes) == 3
    for (seen_state, change), entry_change in zip(reporter.changes, recorded, strict=True):
        assert seen_state is state and change is entry_change


def test_str_of_an_agent_run() -> None:
    from alpineagents.testing import tool_call

    agent = _echo_agent([tool_call("read_file", path="a.py"), "The bug is on line 3"], None)
    state = task("Find the bug")
    assert agent.run(state) == "The bug is on line 3"
    lines = str(state).split("\n")
    assert len(lines) == len(state.history) + 1
    assert "[turn 1] tool_result read_file: 1.3KB" in lines
    assert lines[-1] == "done: stopped by waiting_for_user (2 turns)"
    assert lines[1].startswith("[turn 0] run_start: fake/fake")
    assert same_as_replay(state)


def test_child_started_after_its_call_was_closed() -> None:
    parent = task("q")
    call = ToolCall("sub", {}, "c1")
    think(parent, "", call)
    parent._close_pending(KeyboardInterrupt())
    assert parent.history[-1].child_ids == () and parent.history[-1].usage is None
    again = ToolCall("sub", {}, "c1")  # a later turn reuses the id
    think(parent, "", again)
    kid = State(id="kid", messages=[Message.user("x")])
    parent._add_child("c1", kid, call)  # the old tool, still running, starts a child
    assert parent._children_of("c1") == ()
    assert parent.child("kid") is kid and kid._depth == 1
    think(kid, "work", usage=Usage(requests=1, cost=0.5))
    parent._late_result(call, "finished late", ToolOutcomeKind.DONE)
    late = parent.history[-1]
    assert late.late and late.child_ids == ("kid",) and late.usage == Usage(requests=1, cost=0.5)
    assert parent.pending_calls == (again,)
    stranger = ToolCall("sub", {}, "c1")  # never a call of this State: goes to the list of its id
    other = State(id="other")
    parent._add_child("c1", other, stranger)
    assert parent._children_of("c1") == ("other",)
    parent._tool_result(again, "done", ToolOutcomeKind.DONE)
    assert parent.history[-1].child_ids == ("other",) and parent.history[-1].usage == Usage()


def test_child_of_a_loaded_state_comes_from_its_store(tmp_path: Any) -> None:
    from alpineagents.agent import Agent
    from alpineagents.store import FileStore
    from alpineagents.testing import FakeModel, tool_call

    store = FileStore(tmp_path)
    helper = Agent(model=FakeModel(["helped"]), name="helper", description="Helps.", reporter=None, human=None)
    boss = Agent(
        model=FakeModel([tool_call("helper", prompt="help me"), "all done"]),
        tools=[helper],
        store=store,
        reporter=None,
        human=None,
    )
    state = task("go")
    assert boss.run(state) == "all done"
    result = results(state)[0]
    (child_id,) = result.child_ids
    child = state.child(child_id)
    assert child is state.child(child_id) and child.parent_id == state.id
    loaded = store.load(state.id)
    assert loaded.snapshot() == state.snapshot()
    first, second = loaded.child(child_id), loaded.child(child_id)
    assert first is not second and first.snapshot() == child.snapshot()
    assert asyncio.run(loaded.achild(child_id)).snapshot() == child.snapshot()
    assert loaded.fork().child(child_id).snapshot() == child.snapshot()
    with pytest.raises(KeyError, match="not a subagent"):
        loaded.child("stranger")


def test_history_slice_for_saves() -> None:
    state = task("q")
    think(state, "a")
    create, start, end, snap = state._save_batch(_Store("s"))
    state.add_message(Message.user("later"))
    assert State._history_slice(snap, 1, end) == list(snap.history[1:end])
    assert State._history_slice(snap, 0, 99) == list(snap.history)
