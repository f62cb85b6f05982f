"""The event stream of a run: agent.stream / agent.astream, resuming with after=N, leaving early, subagents, a slow
reader, many streams at once, and events computed from a saved history."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from alpineagents.agent import Agent
from alpineagents.events import (
    LIVE_ONLY,
    ApprovalDecided,
    ApprovalNeeded,
    MessageAdded,
    ReplyEnded,
    RequestSent,
    RunEnded,
    RunStarted,
    StopRecorded,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallEnded,
    ToolCallStarted,
    events_from_history,
    events_of_state,
)
from alpineagents.models.base import Model
from alpineagents.permissions import AllowByDefault, DeferByName
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.store import FileStore
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message, RawBlock, Reply, Request, TextBlock, ToolOutcomeKind, Usage
from helpers.subagents import asking_helper


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: One.
        b: The other.
    """
    return a + b


class Chunky(Model):
    """A model that streams its answer in many small pieces, as fast as it can (an async twin of its own)."""

    name = "chunky"
    provider = "test"

    def __init__(self, pieces: int = 10, piece: str = "word ") -> None:
        self.pieces = pieces
        self.piece = piece

    @property
    def context_window(self) -> int:
        return 1_000_000

    def respond(self, request: Request, on_text: Any = None, on_event: Any = None) -> Reply:
        for _ in range(self.pieces):
            if on_text is not None:
                on_text(self.piece)
        text = self.piece * self.pieces
        return Reply(Message("assistant", (TextBlock(text),)), Usage(1, 1, requests=1), stop_reason="end_turn")

    async def arespond(self, request: Request, on_text: Any = None, on_event: Any = None) -> Reply:
        await asyncio.sleep(0)
        return self.respond(request, on_text, on_event)


def merged(events: list[Any]) -> list[Any]:
    """The events without live-only ones, each reply's streamed text as one TextDelta at the reply's position:
    what `events_from_history` computes from the same history."""
    out: list[Any] = []
    pending: dict[str, list[str]] = {}
    for event in events:
        if isinstance(event, LIVE_ONLY):
            continue
        if isinstance(event, TextDelta):
            pending.setdefault(event.state_id, []).append(event.text)
            continue
        if isinstance(event, (ToolCallStarted, ReplyEnded)) and event.state_id in pending:
            text = "".join(pending.pop(event.state_id))
            out.append(TextDelta(state_id=event.state_id, path=event.path, position=event.position, text=text))
        out.append(event)
    return out


def script() -> list[Any]:
    return [tool_call("add", a=1, b=2), "The answer is 3."]


def test_the_events_of_a_stream_match_the_history_it_produces() -> None:
    agent = Agent(FakeModel(script()), tools=[add], reporter=None)
    stream = agent.stream("What is 1 + 2?")
    events = list(stream)
    assert stream.result == "The answer is 3." == stream.state.answer
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunEnded)
    assert merged(events) == list(events_of_state(stream.state, after=0))
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "RunStarted",
        "RequestSent",
        "ToolCallArgsDelta",
        "ToolCallStarted",
        "ReplyEnded",
        "ToolCallEnded",
        "RequestSent",
        "TextDelta",
        "ReplyEnded",
        "StopRecorded",
        "RunEnded",
    ]
    ended = next(e for e in events if isinstance(e, ToolCallEnded))
    assert ended.result == "3" and ended.outcome is ToolOutcomeKind.DONE
    assert all(e.state_id == stream.state.id and e.path == (stream.state.id,) for e in events)
    positions = [e.position for e in events if not isinstance(e, (TextDelta, RunEnded))]
    assert positions == sorted(positions)


def test_the_async_stream_gives_the_same_events() -> None:
    async def main() -> tuple[list[Any], State]:
        agent = Agent(FakeModel(script()), tools=[add], reporter=None)
        stream = agent.astream("What is 1 + 2?")
        return [event async for event in stream], stream.state

    events, state = asyncio.run(main())
    assert merged(events) == list(events_of_state(state, after=0))
    assert isinstance(events[-1], RunEnded) and events[-1].error is None


def test_after_n_gives_exactly_the_rest_then_the_live_run() -> None:
    agent = Agent(FakeModel([*script(), "Again: 3."]), tools=[add], reporter=None)
    state = State(messages=[Message.user("What is 1 + 2?")])
    first = list(agent.stream(state))
    cut = first[4].position  # a reader saw up to the tool's end, then lost its connection
    state.add_message(Message.user("Once more?"))
    again = list(agent.stream(state, after=cut))
    history = list(events_of_state(state))
    assert merged(again) == [e for e in history if e.position > cut]  # no gap, no duplicate
    assert isinstance(again[-1], RunEnded)
    # the text of a reply the reader had not seen end comes whole, once
    texts = [e.text for e in again if isinstance(e, TextDelta)]
    assert texts == ["The answer is 3.", "Again: 3."]
    added = [e for e in again if isinstance(e, MessageAdded)]
    assert [e.message.text for e in added] == ["Once more?"]


def test_events_from_history_checks_after() -> None:
    with pytest.raises(ValueError, match="-1 or more"):
        list(events_from_history([], "s", after=-2))
    with pytest.raises(TypeError, match="after= takes the position"):
        list(events_from_history([], "s", after="3"))  # type: ignore[arg-type]


def test_leaving_early_stops_the_run_like_ctrl_c_and_the_saved_state_resumes(tmp_path: Path) -> None:
    started = threading.Event()
    release = threading.Event()

    @tool
    def slow(x: int) -> int:
        """Wait.

        Args:
            x: A number.
        """
        started.set()
        release.wait(10)
        return x

    store = FileStore(tmp_path)
    agent = Agent(FakeModel([tool_call("slow", x=1)]), tools=[slow], reporter=None, store=store)
    with agent.stream("go") as stream:
        for event in stream:
            if isinstance(event, ToolCallStarted):
                assert started.wait(10)
                break
    state = stream.state
    release.set()
    assert not state._running
    loaded = store.load(state.id)
    (result,) = [e for e in loaded.history if e.kind == "tool_result"]
    assert result.outcome is ToolOutcomeKind.INTERRUPTED
    assert loaded.history[-1].kind in ("tool_result", "error", "stop")
    again = Agent(FakeModel(["Resumed."]), tools=[slow], reporter=None, store=store)
    assert again.run(loaded) == "Resumed."


def test_cancelling_the_reading_task_cancels_the_run_and_saves(tmp_path: Path) -> None:
    store = FileStore(tmp_path)

    @tool
    async def wait(x: int) -> int:
        """Wait long.

        Args:
            x: A number.
        """
        await asyncio.sleep(30)
        return x

    agent = Agent(FakeModel([tool_call("wait", x=1)]), tools=[wait], reporter=None, store=store)
    holder: dict[str, State] = {}

    async def read() -> None:
        stream = agent.astream("go")
        holder["state"] = stream.state
        async for _event in stream:
            pass

    async def main() -> None:
        task = asyncio.ensure_future(read())
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    state = holder["state"]
    assert not state._running
    loaded = store.load(state.id)
    (result,) = [e for e in loaded.history if e.kind == "tool_result"]
    assert result.outcome is ToolOutcomeKind.INTERRUPTED


def test_subagent_events_come_through_the_top_stream_tagged() -> None:
    helper = Agent(
        FakeModel([tool_call("add", a=2, b=2), "It is 4."]),
        tools=[add],
        name="helper",
        description="Adds.",
        reporter=None,
    )
    top = Agent(FakeModel([tool_call("helper", prompt="2 + 2?"), "4."]), tools=[helper], reporter=None)
    stream = top.stream("Ask the helper")
    events = list(stream)
    top_id = stream.state.id
    below = [e for e in events if e.state_id != top_id]
    assert below and all(len(e.path) == 2 and e.path[0] == top_id and e.depth == 1 for e in below)
    child_id = below[0].state_id
    assert any(isinstance(e, RunStarted) and e.parent_call_id is not None for e in below)
    assert any(isinstance(e, RunEnded) for e in below)
    child = stream.state.child(child_id)
    assert merged(below) == [
        e.__class__(**{**{f: getattr(e, f) for f in e.__dataclass_fields__}, "path": (top_id, child_id)})
        for e in events_of_state(child, after=0)
    ]


def test_the_reporter_keeps_working_side_by_side() -> None:
    seen: list[str] = []

    class Log(Reporter):
        def on_text(self, state: State, chunk: str) -> None:
            seen.append(chunk)

        def on_run_end(self, state: State, error: BaseException | None) -> None:
            seen.append("end")

    agent = Agent(FakeModel(script()), tools=[add], reporter=Log())
    events = list(agent.stream("1 + 2?"))
    assert seen == ["The answer is 3.", "end"]
    assert any(isinstance(e, TextDelta) for e in events)


def test_a_slow_reader_never_slows_the_run_and_what_it_has_not_read_stays_small() -> None:
    pieces = 200_000
    agent = Agent(Chunky(pieces, "0123456789"), reporter=None)
    tracemalloc.start()
    try:
        stream = agent.stream("Write a lot")
        first = next(stream)  # the run is going now
        assert isinstance(first, RunStarted)
        time.sleep(0.5)
        deadline = time.monotonic() + 60
        while stream.state._running and time.monotonic() < deadline:
            time.sleep(0.05)  # the reader sleeps; the run goes on by itself
        assert not stream.state._running  # it finished without the reader
        unread = len(stream._queue.items)
        _, peak = tracemalloc.get_traced_memory()
        rest = list(stream)
    finally:
        tracemalloc.stop()
    text = "".join(e.text for e in rest if isinstance(e, TextDelta))
    assert text == "0123456789" * pieces  # nothing lost
    assert unread < 10  # 200,000 pieces merged while unread
    # 2 MB of text is kept three times at most (the pieces being joined, the reply, the merged delta)
    assert peak < 12 * 2_000_000


def test_a_thousand_concurrent_astreams() -> None:
    agent = Agent(Chunky(5), reporter=None)

    async def one(index: int) -> int:
        count = 0
        async for event in agent.astream(f"task {index}"):
            count += 1
            assert not isinstance(event, RunEnded) or event.error is None
        return count

    async def main() -> list[int]:
        return await asyncio.gather(*(one(i) for i in range(1000)))

    counts = asyncio.run(main())
    assert len(counts) == 1000 and min(counts) >= 5


def test_an_error_ends_the_stream_with_run_ended_then_raises() -> None:
    agent = Agent(FakeModel([RuntimeError("provider down")]), reporter=None)
    events: list[Any] = []
    with pytest.raises(RuntimeError, match="provider down"):
        for event in agent.stream("hi"):
            events.append(event)
    assert isinstance(events[-1], RunEnded) and events[-1].error == "RuntimeError: provider down"


def test_a_stream_shows_approval_needed_and_run_ended_with_the_waiting_calls() -> None:
    agent = Agent(
        FakeModel([tool_call("add", a=1, b=1)]),
        tools=[add],
        reporter=None,
        permissions=[DeferByName(["add"]), AllowByDefault()],
    )
    events = list(agent.stream("1 + 1"))
    needed = [e for e in events if isinstance(e, ApprovalNeeded)]
    assert len(needed) == 1 and needed[0].waiting.tool == "add"
    assert any(isinstance(e, StopRecorded) for e in events)
    end = events[-1]
    assert isinstance(end, RunEnded) and [w.call.id for w in end.waiting] == [needed[0].waiting.call.id]
    assert isinstance([e for e in events if isinstance(e, RequestSent)][0], RequestSent)


def test_a_fake_model_streams_its_thinking_and_arguments_and_a_replay_leaves_them_out() -> None:
    call = tool_call("add", a=4, b=5)

    def reply() -> list[Any]:
        return [RawBlock("fake", {"thinking": "Four and five."}), "Adding.", call]

    agent = Agent(FakeModel([reply(), "It is 9.", reply(), "It is 9."]), tools=[add], reporter=None)

    async def main() -> tuple[list[Any], State]:
        stream = agent.astream("What is 4 + 5?")
        return [event async for event in stream], stream.state

    stream = agent.stream("What is 4 + 5?")
    for events, state in ((list(stream), stream.state), asyncio.run(main())):
        kinds = [type(e).__name__ for e in events]
        kinds = [k for i, k in enumerate(kinds) if i == 0 or k != kinds[i - 1]]  # a reader may get pieces apart
        assert kinds[:7] == [
            "RunStarted",
            "RequestSent",
            "ThinkingDelta",
            "TextDelta",
            "ToolCallArgsDelta",
            "ToolCallStarted",
            "ReplyEnded",
        ]
        request = events[1].position
        thinking = [e for e in events if isinstance(e, ThinkingDelta)]
        assert [(e.text, e.position) for e in thinking] == [("Four and five.", request)]
        arguments = [e for e in events if isinstance(e, ToolCallArgsDelta)]
        assert {(e.call_id, e.name, e.position) for e in arguments} == {(call.id, "add", request)}
        assert json.loads("".join(e.delta for e in arguments)) == {"a": 4, "b": 5}
        assert merged(events) == list(events_of_state(state, after=0))


def after_cut(events: list[Any], top_id: str, after: int) -> list[Any]:
    """What a reader who saw the top State's events up to position `after` had not seen: the events after the
    last event of the top State at or before `after` (subagents' events shown after it come again)."""
    cut = 0
    for index, event in enumerate(events):
        if event.state_id == top_id and event.position <= after:
            cut = index + 1
    return events[cut:]


def nested_helpers(top_script: list[Any]) -> Agent:
    """A top Agent whose helper asks an inner helper, which adds."""
    return Agent(FakeModel(top_script), tools=[asking_helper(add)], reporter=None)


def test_after_n_replays_the_subagents_runs_inline_where_the_live_stream_gave_them() -> None:
    top = nested_helpers([tool_call("helper", prompt="2 + 2?"), "Top: 4.", "Again: 4."])
    state = State(messages=[Message.user("Ask the helper")])
    live = merged(list(top.stream(state)))
    assert {len(e.path) for e in live} == {1, 2, 3}  # the top State, its helper, the helper's inner helper
    for after in range(len(state.history)):
        replay = list(events_of_state(state, after=after))
        assert replay == after_cut(live, state.id, after), after
    # through the stream: the rest, then the live run
    last_top = max(e.position for e in live if e.state_id == state.id and isinstance(e, ToolCallStarted))
    state.add_message(Message.user("Once more?"))
    again = list(top.stream(state, after=last_top))
    assert merged(again)[: len(after_cut(live, state.id, last_top))] == after_cut(live, state.id, last_top)
    assert [e.text for e in again if isinstance(e, TextDelta)] == [
        "Asking.",
        "Inner: 4.",
        "Helper: 4.",
        "Top: 4.",
        "Again: 4.",
    ]


def test_after_n_replays_a_held_subagent_and_its_resumed_run_each_where_it_ran() -> None:
    helper = Agent(
        FakeModel([tool_call("add", a=1, b=1), "Helper: 2."]),
        tools=[add],
        name="helper",
        description="Adds.",
        reporter=None,
        permissions=[DeferByName(["add"]), AllowByDefault()],
    )
    top = Agent(FakeModel([tool_call("helper", prompt="1 + 1?"), "Top: 2."]), tools=[helper], reporter=None)
    state = State(messages=[Message.user("Ask the helper")])
    first = merged(list(top.stream(state)))
    stopped_at = len(state.history) - 1
    (waiting,) = state.awaiting_approval
    assert waiting.path[0] == state.id and len(waiting.path) == 2
    state.approve(waiting.call.id, by="ana")
    decided = list(events_from_history(state.history, state.id, after=stopped_at))
    assert [type(e) for e in decided] == [ApprovalDecided]
    second = merged(list(top.stream(state)))
    assert state.answer == "Top: 2." and any(len(e.path) == 2 for e in second)
    live = first + decided + second  # what a reader following both runs saw, with the decision between
    for after in range(len(state.history)):
        assert list(events_of_state(state, after=after)) == after_cut(live, state.id, after), after


def test_a_held_subagent_replays_from_the_store_in_a_new_process_state(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    helper = Agent(
        FakeModel([tool_call("add", a=1, b=1)]),
        tools=[add],
        name="helper",
        description="Adds.",
        reporter=None,
        permissions=[DeferByName(["add"]), AllowByDefault()],
    )
    top = Agent(FakeModel([tool_call("helper", prompt="1 + 1?")]), tools=[helper], reporter=None, store=store)
    state = State(messages=[Message.user("Ask the helper")])
    live = merged(list(top.stream(state)))
    loaded = store.load(state.id)  # a State object that has none of its subagents in memory
    (waiting,) = loaded.awaiting_approval
    assert loaded.child(waiting.path[1]).id == waiting.path[1]  # named only by the wait record
    assert list(events_of_state(loaded, after=0)) == after_cut(live, state.id, 0)


class ToolLog(Reporter):
    """Keeps each tool start and end, with the length of the State's history at that moment."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, int, str]] = []

    def on_tool_start(self, state: State, call: Any) -> None:
        self.seen.append(("start", state.id, call.id, len(state.history), ""))

    def on_tool_end(self, state: State, call: Any, result: Any, outcome: Any) -> None:
        self.seen.append(("end", state.id, call.id, len(state.history), f"{outcome.kind.value}: {result}"))


def held_helper(
    store: Any = None,
    top_script: tuple[Any, ...] = (tool_call("helper", prompt="1 + 1?"), "Top: done."),
    helper_script: tuple[Any, ...] = (tool_call("add", a=1, b=1), "Helper: done."),
) -> tuple[Agent, State, ToolLog]:
    """A top Agent whose helper's `add` waits for approval, a State for it, and the top's Reporter."""
    helper = Agent(
        FakeModel(list(helper_script)),
        tools=[add],
        name="helper",
        description="Adds.",
        permissions=[DeferByName(["add"]), AllowByDefault()],
    )
    log = ToolLog()
    top = Agent(FakeModel(list(top_script)), tools=[helper], reporter=log, store=store)
    return top, State(messages=[Message.user("Ask the helper")]), log


@pytest.mark.parametrize("decide", ["approve", "deny"])
def test_a_held_subagent_call_ends_once_after_the_decision_and_the_reporter_agrees_with_the_stream(
    decide: str,
) -> None:
    top, state, log = held_helper()
    first = list(top.stream(state))
    (helper_call,) = [e.call for e in first if isinstance(e, ToolCallStarted) and e.depth == 0]
    assert not [e for e in first if isinstance(e, ToolCallEnded) and e.depth == 0]  # held: not ended
    assert [s[0] for s in log.seen if s[2] == helper_call.id] == ["start"]  # its tool started, then it was held
    (waiting,) = state.awaiting_approval
    if decide == "approve":
        state.approve(waiting.call.id)
    else:
        state.deny(waiting.call.id, "Not now.")
    second = list(top.stream(state))
    (ended,) = [e for e in second if isinstance(e, ToolCallEnded) and e.depth == 0]
    assert ended.call == helper_call and ended.result == "Helper: done." and ended.child_ids == (waiting.path[1],)
    below = [index for index, e in enumerate(second) if e.depth == 1]
    assert below and max(below) < second.index(ended)  # after every event of the resumed subagent
    # the Reporter: one start (in the run that held it), one end (when it ended), right after its result
    mine = [s for s in log.seen if s[2] == helper_call.id]
    assert [s[0] for s in mine] == ["start", "end"]
    assert mine[1][3] == ended.position + 1 and mine[1][4] == "done: Helper: done."
    child_call = [s for s in log.seen if s[2] == waiting.call.id]
    if decide == "approve":
        assert [s[0] for s in child_call] == ["start", "end"] and child_call[1][4] == "done: 2"
    else:
        assert [s[0] for s in child_call] == ["end"] and child_call[0][4] == "denied: Not now."
    # every call that got a start got exactly one end, as the stream shows one start and one end per call
    for call_id in {s[2] for s in log.seen}:
        kinds = [s[0] for s in log.seen if s[2] == call_id]
        assert kinds.count("end") == 1 and kinds.count("start") <= 1
    calls = {e.call.id for e in first + second if isinstance(e, ToolCallStarted)}
    assert calls == {e.call.id for e in second if isinstance(e, ToolCallEnded)}


def test_a_held_subagent_call_resumed_by_another_process_ends_there(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    top, state, _ = held_helper(store)
    list(top.stream(state))
    loaded = store.load(state.id)
    loaded.approve(loaded.awaiting_approval[0].call.id)
    store.save(loaded)
    # a fresh Agent and Reporter, as a second process has (their first replies were given before the hold)
    again, _, log = held_helper(store, ("Top: done.",), ("Helper: done.",))
    resumed = store.load(state.id)
    events = list(again.stream(resumed))
    (ended,) = [e for e in events if isinstance(e, ToolCallEnded) and e.depth == 0]
    assert ended.result == "Helper: done."
    assert [(s[0], s[4]) for s in log.seen if s[2] == ended.call.id] == [("end", "done: Helper: done.")]


class ReadLog(FileStore):
    """A FileStore that notes the thread of every read."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.reads: list[tuple[str, int]] = []

    def read(self, state_id: str) -> Any:
        self.reads.append((state_id, threading.get_ident()))
        return super().read(state_id)


def test_astream_after_n_reads_the_subagents_from_the_store_off_the_event_loop(tmp_path: Path) -> None:
    store = ReadLog(tmp_path)
    helper = Agent(
        FakeModel([tool_call("add", a=1, b=1), "Helper: 2."]),
        tools=[add],
        name="helper",
        description="Adds.",
        reporter=None,
    )
    top = Agent(
        FakeModel([tool_call("helper", prompt="1 + 1?"), "Top: 2.", "Again: 2."]),
        tools=[helper],
        reporter=None,
        store=store,
    )
    state = State(messages=[Message.user("Ask the helper")])
    live = merged(list(top.stream(state)))
    (child_id,) = {e.state_id for e in live if len(e.path) == 2}
    loaded = store.load(state.id)  # its subagent is not in memory: the replay reads it from the store
    loaded.add_message(Message.user("Once more?"))
    store.reads.clear()

    async def main() -> tuple[int, list[Any]]:
        return threading.get_ident(), [event async for event in top.astream(loaded, after=0)]

    loop_thread, events = asyncio.run(main())
    child_reads = [thread for read, thread in store.reads if read == child_id]
    assert child_reads and loop_thread not in child_reads
    missed = after_cut(live, state.id, 0)
    assert merged(events)[: len(missed)] == missed
    assert loaded.answer == "Again: 2."
