"""Property-based tests of the State fold: history is the only source of truth, restore and fork.

Random sequences of operations drive a State through its public methods and its recording operations. An operation
that the State refuses (``ValueError``) must leave it unchanged. After every run:

- ``State(history=h)`` equals the State built by recording the same entries one by one, and ``fold`` from an empty
  snapshot gives the same value (private bookkeeping included, except ``_memo``);
- ``restore(snapshot)`` takes the values of that snapshot back, and replaying the history gives the same State;
- ``fork()`` shares nothing mutable with its source: changing one never changes the other.
"""

from __future__ import annotations

import dataclasses
from functools import reduce
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alpineagents._history.snapshot import history_of, messages_of
from alpineagents.state import State, StateSnapshot, fold
from alpineagents.types import (
    AgentInfo,
    Message,
    Reply,
    StoppedByLimit,
    StoppedByUntil,
    TextBlock,
    ToolCall,
    ToolOutcomeKind,
    Usage,
)

PRIVATE = [f.name for f in dataclasses.fields(StateSnapshot) if f.name.startswith("_") and f.name != "_memo"]
PUBLIC = [f.name for f in dataclasses.fields(StateSnapshot) if not f.name.startswith("_")]

texts = st.text(alphabet="abc xyz", min_size=1, max_size=6).filter(lambda t: t.strip())
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([1.0, 0.5]) | texts,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(texts, inner, max_size=2),
    max_leaves=4,
)

turn_ops = st.tuples(st.just("turn"), st.integers(0, 3))
result_ops = st.tuples(st.just("result"), st.integers(0, 3))
operations = st.lists(
    st.one_of(
        turn_ops,
        result_ops,
        turn_ops,
        result_ops,
        result_ops,
        st.tuples(st.just("user"), texts),
        st.tuples(st.just("notice"), texts),
        st.tuples(st.just("think"), st.just(None)),
        st.tuples(st.just("reply_text"), st.text(alphabet="ab ", max_size=4)),
        st.tuples(st.just("reply_calls"), st.integers(1, 3)),
        st.tuples(st.just("result"), st.integers(0, 3)),
        st.tuples(st.just("error_result"), st.integers(0, 3)),
        st.tuples(st.just("fail"), st.just(None)),
        st.tuples(st.just("tool_error"), st.integers(0, 3)),
        st.tuples(st.just("finish"), st.one_of(st.none(), json_values)),
        st.tuples(st.just("compact"), texts),
        st.tuples(st.just("clear"), st.integers(0, 3)),
        st.tuples(st.just("edit"), st.tuples(texts, json_values, st.booleans())),
        st.tuples(st.just("snapshot"), st.just(None)),
        st.tuples(st.just("restore"), st.integers(0, 20)),
        st.tuples(st.just("run_start"), st.booleans()),
        st.tuples(st.just("stop"), st.integers(0, 2)),
        st.tuples(st.just("close"), st.booleans()),
        st.tuples(st.just("late"), st.integers(0, 5)),
        st.tuples(st.just("deny"), st.integers(0, 3)),
        st.tuples(st.just("ask"), json_values),
        st.tuples(st.just("model_compact"), st.tuples(st.integers(0, 2), texts)),
        st.tuples(st.just("event"), st.just(None)),
    ),
    max_size=50,
)


class Driver:
    """Applies operations to a State; refused operations must not change it."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.snapshots: list[StateSnapshot] = [state.snapshot()]
        self.closed: list[ToolCall] = []
        self.counter = 0

    def call_id(self) -> str:
        self.counter += 1
        return f"c{self.counter % 4}"  # ids repeat across turns on purpose

    def apply(self, op: str, arg: Any) -> None:
        state = self.state
        before = state.snapshot()
        try:
            self._apply(op, arg)
        except ValueError:
            assert state.snapshot() is before, f"{op} was refused but changed the State"
        except TypeError:
            assert state.snapshot() is before, f"{op} was refused but changed the State"

    def _apply(self, op: str, arg: Any) -> None:
        state = self.state
        pending = state.pending_calls
        if op == "user":
            state.add_message(Message.user(arg))
        elif op == "notice":
            state.add_message(Message.notice(arg))
        elif op == "think":
            state._begin_think("fake/fake")
        elif op == "turn":
            state._begin_think("fake/fake")
            if arg:
                self._apply("reply_calls", arg)
            else:
                self._apply("reply_text", "done")
        elif op == "reply_text":
            state._record_reply(Reply(Message.assistant(arg), Usage(requests=1, output_tokens=len(arg))))
        elif op == "reply_calls":
            calls = tuple(ToolCall("t", {"n": i}, self.call_id()) for i in range(arg))
            content = (TextBlock("calling"), *calls)
            reply = Reply(Message("assistant", content), Usage(requests=1, cost=0.01), context_tokens=100)
            state._record_reply(reply)
        elif op in ("result", "error_result"):
            if pending:
                call = pending[arg % len(pending)]
                kind = ToolOutcomeKind.DONE if op == "result" else ToolOutcomeKind.ERROR
                state._tool_result(call, f"out {call.id}", kind)
                self.closed.append(call)
            else:
                state._tool_result(ToolCall("t", {}, "nope"), "x", ToolOutcomeKind.DONE)
        elif op == "fail":
            state._record_error(TimeoutError("timed out"))
        elif op == "tool_error":
            if pending:
                state._record_error(RuntimeError("boom"), pending[arg % len(pending)])
        elif op == "finish":
            state.finish(arg)
        elif op == "compact":
            state.compact(arg)
        elif op == "clear":
            state.clear_tool_results(arg)
        elif op == "edit":
            key, value, delete = arg
            with state.edit_extra_data() as data:
                if delete:
                    data.pop(key, None)
                else:
                    data[key] = value
        elif op == "snapshot":
            self.snapshots.append(state.snapshot())
        elif op == "restore":
            snap = self.snapshots[arg % len(self.snapshots)]
            state.restore(snap)
            check_restored(state, snap)
        elif op == "run_start":
            state._end_run()
            state._start_run(None, AgentInfo(model="m"), parent=("p", "c") if arg else None)
        elif op == "stop":
            state._record_stop([None, StoppedByUntil("x"), StoppedByLimit(2)][arg])
        elif op == "close":
            self.closed.extend(state._close_pending(KeyboardInterrupt() if arg else TimeoutError()))
        elif op == "late":
            if self.closed:
                state._late_result(self.closed[arg % len(self.closed)], "late out", ToolOutcomeKind.DONE)
        elif op == "deny":
            if pending:
                state._stop_turn(pending[arg % len(pending)], "no", "DenyAll()")
        elif op == "ask":
            state._record_ask("q?", arg, Usage(requests=1))
        elif op == "model_compact":
            count, summary = arg
            state._begin_compact()
            try:
                for i in range(count):
                    state.add_message(Message.user(f"during {i}"))
                state._compact_done(summary, Usage(requests=1, input_tokens=3))
            finally:
                state._end_compact()
        elif op == "event":
            from alpineagents.types import ModelEvent

            state._record_model_event(ModelEvent("retry", "again"))


def check_restored(state: State, snap: StateSnapshot) -> None:
    now = state.snapshot()
    for name in ("messages", "pending_calls", "turn", "extra_data", "finished", "answer", "stopped"):
        assert getattr(now, name) == getattr(snap, name), name
    for name in PRIVATE:
        if name not in ("_parent_id", "_parent_call_id"):
            assert getattr(now, name) == getattr(snap, name), name


def private_equal(a: StateSnapshot, b: StateSnapshot) -> None:
    assert a == b
    for name in PUBLIC:
        assert getattr(a, name) == getattr(b, name), name
    for name in PRIVATE:
        assert getattr(a, name) == getattr(b, name), name


def run_ops(ops: list[tuple[str, Any]], state: State | None = None) -> Driver:
    driver = Driver(state if state is not None else State(messages=[Message.user("start")]))
    for op, arg in ops:
        driver.apply(op, arg)
    return driver


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_replay_equals_recording_one_by_one(ops: list[tuple[str, Any]]) -> None:
    state = run_ops(ops).state
    history = state.history
    replayed = State(history=history)
    one_by_one = State()
    for entry in history:
        one_by_one._commit(entry)
    folded = reduce(fold, history, StateSnapshot())
    private_equal(replayed.snapshot(), state.snapshot())
    private_equal(one_by_one.snapshot(), state.snapshot())
    private_equal(folded, state.snapshot())
    assert replayed.history == history
    assert replayed.created_at == state.created_at and replayed.updated_at == state.updated_at


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations, operations, st.integers(0, 40))
def test_restore_then_replay(before: list[tuple[str, Any]], after: list[tuple[str, Any]], pick: int) -> None:
    driver = run_ops(before)
    state = driver.state
    snaps = [s for s in driver.snapshots if not s._waiting] + [state.snapshot()]
    snaps = [s for s in snaps if not s._waiting]
    if not snaps:
        return
    target = snaps[pick % len(snaps)]
    for op, arg in after:
        driver.apply(op, arg)
    if state.pending_calls or state.snapshot()._waiting:
        return
    usage = state.usage
    state.restore(target)
    check_restored(state, target)
    assert state.usage == usage
    private_equal(State(history=state.history).snapshot(), state.snapshot())
    # the restored State goes on like the snapshot did
    copy = State(history=target.history)
    for op, arg in after[:5]:
        Driver(copy).apply(op, arg)
        driver.apply(op, arg)
    private_equal(State(history=state.history).snapshot(), state.snapshot())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations, operations, operations)
def test_fork_shares_nothing_mutable(
    before: list[tuple[str, Any]], on_fork: list[tuple[str, Any]], on_source: list[tuple[str, Any]]
) -> None:
    source = run_ops(before).state
    if source.snapshot()._waiting:
        return
    fork = source.fork()
    assert fork.snapshot() == source.snapshot()
    source_history, source_snap = source.history, source.snapshot()
    fork_history = fork.history
    for name in ("_lock", "_edit_lock", "_children", "_call_children", "_closed_calls"):
        assert getattr(fork, name) is not getattr(source, name), name
    f, s = fork.snapshot(), source.snapshot()
    assert history_of(f).items is not history_of(s).items
    assert messages_of(f).items is not messages_of(s).items
    assert f._memo is not s._memo

    run_ops(on_fork, fork)
    assert source.history == source_history
    assert source.snapshot() is source_snap
    fork_snap, fork_after = fork.snapshot(), fork.history
    run_ops(on_source, source)
    assert fork.snapshot() is fork_snap and fork.history == fork_after
    assert fork_after[: len(fork_history)] == fork_history
    private_equal(State(history=fork.history).snapshot(), fork.snapshot())
    private_equal(State(history=source.history).snapshot(), source.snapshot())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations, st.integers(0, 40))
def test_fold_of_old_snapshots_is_pure(ops: list[tuple[str, Any]], pick: int) -> None:
    driver = run_ops(ops)
    state = driver.state
    history = state.history
    if not history:
        return
    cut = pick % len(history)
    old = reduce(fold, history[:cut], StateSnapshot())
    old_messages = old.messages
    branch = fold(old, history[cut])
    again = fold(old, history[cut])
    assert branch == again
    assert old.messages == old_messages and len(old.history) == cut
    assert state.history == history
    private_equal(State(history=history).snapshot(), state.snapshot())
