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
        getattr(self, f"_{op}")(arg)

    # One method per operation of the strategy above, named after it.

    def _user(self, text: str) -> None:
        self.state.add_message(Message.user(text))

    def _notice(self, text: str) -> None:
        self.state.add_message(Message.notice(text))

    def _think(self, _: None) -> None:
        self.state._begin_think("fake/fake")

    def _turn(self, calls: int) -> None:
        self.state._begin_think("fake/fake")
        if calls:
            self._reply_calls(calls)
        else:
            self._reply_text("done")

    def _reply_text(self, text: str) -> None:
        self.state._record_reply(Reply(Message.assistant(text), Usage(requests=1, output_tokens=len(text))))

    def _reply_calls(self, count: int) -> None:
        calls = tuple(ToolCall("t", {"n": i}, self.call_id()) for i in range(count))
        content = (TextBlock("calling"), *calls)
        reply = Reply(Message("assistant", content), Usage(requests=1, cost=0.01), context_tokens=100)
        self.state._record_reply(reply)

    def _result(self, index: int, kind: ToolOutcomeKind = ToolOutcomeKind.DONE) -> None:
        pending = self.state.pending_calls
        if pending:
            call = pending[index % len(pending)]
            self.state._tool_result(call, f"out {call.id}", kind)
            self.closed.append(call)
        else:
            self.state._tool_result(ToolCall("t", {}, "nope"), "x", ToolOutcomeKind.DONE)

    def _error_result(self, index: int) -> None:
        self._result(index, ToolOutcomeKind.ERROR)

    def _fail(self, _: None) -> None:
        self.state._record_error(TimeoutError("timed out"))

    def _tool_error(self, index: int) -> None:
        pending = self.state.pending_calls
        if pending:
            self.state._record_error(RuntimeError("boom"), pending[index % len(pending)])

    def _finish(self, answer: Any) -> None:
        self.state.finish(answer)

    def _compact(self, summary: str) -> None:
        self.state.compact(summary)

    def _clear(self, keep: int) -> None:
        self.state.clear_tool_results(keep)

    def _edit(self, arg: tuple[str, Any, bool]) -> None:
        key, value, delete = arg
        with self.state.edit_extra_data() as data:
            if delete:
                data.pop(key, None)
            else:
                data[key] = value

    def _snapshot(self, _: None) -> None:
        self.snapshots.append(self.state.snapshot())

    def _restore(self, index: int) -> None:
        snap = self.snapshots[index % len(self.snapshots)]
        self.state.restore(snap)
        check_restored(self.state, snap)

    def _run_start(self, with_parent: bool) -> None:
        self.state._end_run()
        self.state._start_run(None, AgentInfo(model="m"), parent=("p", "c") if with_parent else None)

    def _stop(self, which: int) -> None:
        self.state._record_stop([None, StoppedByUntil("x"), StoppedByLimit(2)][which])

    def _close(self, interrupted: bool) -> None:
        self.closed.extend(self.state._close_pending(KeyboardInterrupt() if interrupted else TimeoutError()))

    def _late(self, index: int) -> None:
        if self.closed:
            self.state._late_result(self.closed[index % len(self.closed)], "late out", ToolOutcomeKind.DONE)

    def _deny(self, index: int) -> None:
        pending = self.state.pending_calls
        if pending:
            self.state._stop_turn(pending[index % len(pending)], "no", "DenyAll()")

    def _ask(self, answer: Any) -> None:
        self.state._record_ask("q?", answer, Usage(requests=1))

    def _model_compact(self, arg: tuple[int, str]) -> None:
        count, summary = arg
        state = self.state
        state._begin_compact()
        try:
            for i in range(count):
                state.add_message(Message.user(f"during {i}"))
            state._compact_done(summary, Usage(requests=1, input_tokens=3))
        finally:
            state._end_compact()

    def _event(self, _: None) -> None:
        from alpineagents.types import ModelEvent

        self.state._record_model_event(ModelEvent("retry", "again"))


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
