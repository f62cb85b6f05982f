"""`agent.run_tool` / `arun_tool`: a tool call the program makes, recorded as if the model had made it."""

from __future__ import annotations

import asyncio
import gc
import io
import threading
from pathlib import Path
from typing import Any

import pytest

from alpineagents import Agent, FileStore, Message, SQLiteStore, State, loop, tool, waiting_for_user
from alpineagents._turn.program import PROGRAM
from alpineagents.errors import PermissionWarning, ToolError
from alpineagents.permissions import AllowByDefault, DecideByHuman, Denied, DenyByName, DenyPermission
from alpineagents.reporter import Reporter
from alpineagents.state import fold
from alpineagents.store import Store
from alpineagents.testing import FakeHuman, FakeModel, tool_call
from alpineagents.types import (
    ModelReplyEntry,
    ModelRequestEntry,
    StoppedByPermission,
    ToolCall,
    ToolOutcomeKind,
    ToolResultBlock,
    ToolResultEntry,
    Usage,
)
from conftest import kinds, results, task


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: The file.
    """
    return f"contents of {path}"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def refuse(reason: str) -> str:
    """Fail the way a tool tells the model."""
    raise ToolError(reason)


@tool
def boom() -> str:
    """Raise."""
    raise RuntimeError("disk on fire")


class Files:
    @tool
    def size(self, path: str) -> int:
        """The size of a file."""
        return len(path)

    @tool
    def remove(self, path: str) -> str:
        """Remove a file."""
        return f"removed {path}"


class Log(Reporter):
    def __init__(self) -> None:
        self.events: list[str] = []

    def on_tool_start(self, state: State, call: ToolCall) -> None:
        self.events.append(f"start {call.name}")

    def on_tool_end(self, state: State, call: ToolCall, result: Any, outcome: Any) -> None:
        self.events.append(f"end {call.name} {outcome.kind.value}")


def agent(replies: list[Any] | None = None, **settings: Any) -> Agent:
    settings.setdefault("reporter", None)
    settings.setdefault("tools", [read_file, add, refuse, boom])
    return Agent(FakeModel(replies or []), **settings)


# --- the call, its record and what the model sees --------------------------------------------------------------


def test_run_tool_returns_the_result_and_the_model_sees_the_call_at_its_next_request() -> None:
    fake = FakeModel(["It says hello."])
    coder = Agent(fake, tools=[read_file], reporter=None)
    state = task("What does notes.md say?")
    assert coder.run_tool(state, "read_file", path="notes.md") == "contents of notes.md"
    request, reply_entry, result = state.history[-3:]
    assert isinstance(request, ModelRequestEntry) and request.content == PROGRAM == "program"
    assert isinstance(reply_entry, ModelReplyEntry) and reply_entry.turn == request.turn == 1
    reply = reply_entry.content
    assert reply.model == "program" and reply.usage == Usage() and reply.stop_reason == "tool_use"
    assert reply.context_tokens is None and reply.text == ""
    (call,) = reply.tool_calls
    assert reply.message == Message("assistant", (call,))
    assert call.name == "read_file" and call.args == {"path": "notes.md"} and call.id.startswith("call_program_")
    assert isinstance(result, ToolResultEntry) and result.call is call and result.outcome is ToolOutcomeKind.DONE
    assert state.turn == 1 and state.pending_calls == () and state.usage == Usage() and state.answer is None
    assert str(state).splitlines()[-3:] == [
        "[turn 1] model_request: program",
        '[turn 1] model_reply: read_file(path="notes.md")',
        "[turn 1] tool_result read_file: 20B",
    ]
    assert state.messages[-2] == Message("assistant", (call,), stop_reason="tool_use")
    assert coder.run(state) == "It says hello."
    sent = fake.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "user"]
    assert sent[1].content == (call,)
    block = sent[2].content[0]
    assert isinstance(block, ToolResultBlock) and block.call_id == call.id and block.content == "contents of notes.md"
    assert State(history=state.history).messages == state.messages  # the fold gives the same from the history


def test_the_tool_may_be_a_name_the_agents_tool_or_any_tool_object() -> None:
    files = Files()
    coder = agent(tools=[read_file, files])
    state = task()
    assert coder.run_tool(state, read_file, path="a") == "contents of a"
    assert coder.run_tool(state, files.size, path="abc") == "3"  # a new bound tool object of the Agent's method
    assert coder.run_tool(state, add, a=1, b=2) == "3"  # not a tool of this Agent
    assert coder.run_tool(state, "size", path="ab") == "2"
    helper = Agent(FakeModel(["Found it."]), name="finder", description="Finds things", reporter=None)
    assert coder.run_tool(state, helper, prompt="Find the bug") == "Found it."
    assert [entry.call.name for entry in results(state)] == ["read_file", "size", "add", "size", "finder"]
    assert results(state)[-1].child_ids  # the subagent's State is linked to the program's call


def test_arguments_are_checked_as_a_models_would_be() -> None:
    coder = agent()
    state = task()
    assert coder.run_tool(state, "add", a="4", b=5) == "9"  # lax validation, as for a model
    text = coder.run_tool(state, "add", a="four")
    assert text == (
        "(input error: a: Input should be a valid integer, unable to parse string as an integer; "
        "b: required argument is missing)"
    )
    assert results(state)[-1].outcome is ToolOutcomeKind.INPUT_ERROR
    before = len(state.history)
    with pytest.raises(TypeError, match=r"the arguments of run_tool\(read_file\)\['path'\] must be JSON"):
        coder.run_tool(state, "read_file", path=Path("x"))
    with pytest.raises(ValueError) as error:
        coder.run_tool(state, "nope")
    assert str(error.value).splitlines()[0] == (
        "run_tool() got 'nope', which is not a tool of this Agent (this Agent's tools: read_file, add, refuse, boom)"
    )
    with pytest.raises(TypeError, match=r"run_tool\(\) runs one tool, and .* holds 2 \(size, remove\)"):
        coder.run_tool(state, Files())
    with pytest.raises(TypeError, match="does not have @tool"):
        coder.run_tool(state, print)
    with pytest.raises(TypeError, match=r"The first argument of agent.run_tool\(\) must be a State"):
        coder.run_tool("state", "add")  # type: ignore[arg-type]
    assert len(state.history) == before  # nothing recorded by a refused call


def test_run_tool_is_refused_while_calls_are_pending_or_on_a_finished_state() -> None:
    coder = agent([tool_call("add", a=1, b=2)])
    state = task()
    coder.think(state)
    with pytest.raises(ValueError, match=r"cannot call run_tool\(\) while calls are pending \(add\(a=1, b=2\)\)"):
        coder.run_tool(state, "read_file", path="x")
    coder.use_tools(state)
    state.finish("done")
    with pytest.raises(ValueError, match=r"cannot call run_tool\(\) on a finished State"):
        coder.run_tool(state, "read_file", path="x")


def test_a_tool_error_is_a_result_and_another_exception_is_raised_with_the_call_closed() -> None:
    coder = agent(["Noted."])
    state = task()
    assert coder.run_tool(state, "refuse", reason="No access to /etc") == "No access to /etc"
    assert results(state)[-1].outcome is ToolOutcomeKind.ERROR
    with pytest.raises(RuntimeError, match="disk on fire") as error:
        coder.run_tool(state, boom)
    assert "exception raised in tool boom()" in error.value.__notes__
    assert kinds(state)[-4:] == ["model_request", "model_reply", "error", "tool_result"]
    closed = results(state)[-1]
    assert closed.content == "(aborted: RuntimeError)" and closed.outcome is ToolOutcomeKind.ABORTED
    assert closed.error is error.value
    assert state.pending_calls == ()
    coder.think(state)  # the State goes on
    assert state.answer == "Noted."


def test_ctrl_c_in_the_tool_closes_the_call_as_interrupted() -> None:
    @tool
    def stop_me() -> str:
        """Interrupt."""
        raise KeyboardInterrupt

    coder = agent(tools=[stop_me])
    state = task()
    with pytest.raises(KeyboardInterrupt):
        coder.run_tool(state, "stop_me")
    closed = results(state)[-1]
    assert closed.content == "(interrupted by user)" and closed.outcome is ToolOutcomeKind.INTERRUPTED
    assert state.pending_calls == ()


# --- permissions, human, reporter ------------------------------------------------------------------------------


def test_a_denying_permission_refuses_the_call_and_the_reason_is_the_result() -> None:
    log = Log()
    coder = agent(permissions=[DenyByName(["add"], reason="No sums."), AllowByDefault()], reporter=log)
    state = task()
    assert coder.run_tool(state, "add", a=1, b=2) == "No sums."
    assert results(state)[-1].outcome is ToolOutcomeKind.DENIED
    assert coder.run_tool(state, "read_file", path="a") == "contents of a"
    assert log.events == ["end add denied", "start read_file", "end read_file done"]  # a denied call never starts
    with pytest.warns(PermissionWarning, match="No permission allowed or denied the call to add"):
        assert agent(permissions=[]).run_tool(task(), "add", a=1, b=2) == "No permission allowed this call."


def test_a_stopping_denial_records_the_stop() -> None:
    class StopAll(DenyPermission):
        def check(self, state: State, call: ToolCall, tool: Any) -> Denied:
            return Denied("Stopped by the user.", stop=True)

    coder = agent(permissions=[StopAll()])
    state = task()
    assert coder.run_tool(state, "add", a=1, b=2) == "Stopped by the user."
    assert isinstance(state.stopped, StoppedByPermission) and state.stopped.call.name == "add"


def test_the_human_decides_through_the_agents_permissions() -> None:
    human = FakeHuman(["no", "yes"])
    coder = agent(permissions=[DecideByHuman()], human=human)
    state = task()
    assert coder.run_tool(state, "add", a=1, b=2) == "The user declined this call. Wait for their next message."
    assert coder.run_tool(state, "add", a=1, b=2) == "3"
    assert len(human.questions) == 2 and "add(a=1, b=2)" in human.questions[0]


def test_inside_a_run_the_runs_reporter_and_store_apply(tmp_path: Path) -> None:
    log = Log()
    store = FileStore(tmp_path)

    @loop(until=waiting_for_user, limit=3)
    def prepare_then_think(agent: Agent, state: State) -> None:
        if state.turn == 0 and not results(state):
            agent.run_tool(state, "read_file", path="setup.cfg")
        agent.think(state)
        if state.pending_calls:
            agent.use_tools(state)

    coder = agent(["Read it."], loop=prepare_then_think, reporter=log, store=store)
    state = State(id="inside", messages=[Message.user("Go")])
    assert coder.run(state) == "Read it."
    assert log.events == ["start read_file", "end read_file done"]
    record = store.read("inside")
    assert record is not None
    assert [line["content"]["model"] for line in record.entries if line["kind"] == "model_reply"] == [PROGRAM, "fake"]
    assert state.turn == 2  # the program's call is a turn, as the model's is


# --- async -------------------------------------------------------------------------------------------------------


def test_arun_tool_runs_an_async_tool_on_the_event_loop() -> None:
    seen: list[int] = []

    @tool
    async def fetch(url: str) -> str:
        """Fetch a page."""
        seen.append(threading.get_ident())
        await asyncio.sleep(0)
        return f"page {url}"

    coder = agent(tools=[fetch, add])

    async def main() -> tuple[str, str]:
        state = task()
        page = await coder.arun_tool(state, "fetch", url="x.dev")
        total = await coder.arun_tool(state, add, a=2, b=2)
        return page, total

    page, total = asyncio.run(main())
    assert (page, total) == ("page x.dev", "4")
    assert seen == [seen[0]]


def test_cancelling_arun_tool_closes_the_call_as_interrupted() -> None:
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Wait a long time."""
        started.set()
        await asyncio.sleep(60)
        return "late"

    coder = agent(tools=[slow])
    state = task()

    async def main() -> None:
        running = asyncio.ensure_future(coder.arun_tool(state, "slow"))
        await asyncio.wait_for(started.wait(), 10)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(asyncio.wait_for(main(), 30))
    closed = results(state)[-1]
    assert closed.content == "(interrupted by user)" and closed.outcome is ToolOutcomeKind.INTERRUPTED
    assert state.pending_calls == ()


def test_arun_tool_raises_what_the_tool_raised() -> None:
    coder = agent()
    state = task()

    async def main() -> None:
        with pytest.raises(RuntimeError, match="disk on fire"):
            await coder.arun_tool(state, "boom")

    asyncio.run(main())
    assert results(state)[-1].content == "(aborted: RuntimeError)"


# --- stores --------------------------------------------------------------------------------------------------------


@pytest.fixture(params=["file", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return FileStore(tmp_path / "states") if request.param == "file" else SQLiteStore(tmp_path / "states.db")


def test_a_saved_state_with_a_program_call_resumes_like_any_other(store: Store) -> None:
    coder = agent(store=store)
    state = State(id="prog", messages=[Message.user("Sum it")])
    assert coder.run_tool(state, "add", a=20, b=22) == "42"
    history = state.history
    del state
    gc.collect()
    loaded = store.load("prog")
    assert loaded.history == history
    reply_entry = loaded.history[-2]
    assert isinstance(reply_entry, ModelReplyEntry) and reply_entry.content.model == PROGRAM
    assert loaded.history[-1].call is reply_entry.content.tool_calls[0]  # one call object, as when recorded
    assert loaded.usage == Usage() and loaded.turn == 1
    fake = FakeModel(["The sum is 42."])
    assert Agent(fake, tools=[add], store=store, reporter=None).run(loaded) == "The sum is 42."
    assert [m.role for m in fake.requests[0].messages] == ["user", "assistant", "user"]


def test_a_process_that_died_during_the_call_resumes_with_the_unknown_result(tmp_path: Path) -> None:
    first = FileStore(tmp_path / "first")
    saved: dict[str, Any] = {}

    @tool
    def deploy(state: State) -> str:
        """Deploy, saving first (as a save point would if the process died right here)."""
        first.save(state)
        saved["record"] = first.read(state.id)
        return "deployed"

    coder = agent(tools=[deploy], store=first)
    state = State(id="died", messages=[Message.user("Ship it")])
    coder.run_tool(state, "deploy")
    record = saved["record"]
    assert [line["kind"] for line in record.entries][-2:] == ["model_request", "model_reply"]
    second = FileStore(tmp_path / "second")
    second.write("died", record.entries, record.info, create=True)
    loaded = second.load("died")
    closed = results(loaded)[-1]
    assert closed.outcome is ToolOutcomeKind.ABORTED and str(closed.content).startswith("(unknown: the run stopped")
    assert loaded.pending_calls == ()


def test_run_tool_inside_an_async_run_is_refused_and_arun_tool_works() -> None:
    @loop(until=waiting_for_user, limit=2)
    async def sync_call(agent: Agent, state: State) -> None:
        with pytest.raises(TypeError, match=r"agent.run_tool\(\) was called inside an async run"):
            agent.run_tool(state, "add", a=1, b=1)
        assert await agent.arun_tool(state, "add", a=1, b=1) == "2"
        await agent.athink(state)

    coder = agent(["Two."], loop=sync_call)
    assert asyncio.run(coder.arun("Add")) == "Two."


def test_run_tool_is_refused_while_a_request_waits_or_on_a_state_with_no_messages() -> None:
    coder = agent()
    state = task()
    state._begin_think("fake/fake")
    before = len(state.history)
    with pytest.raises(ValueError, match=r"cannot call run_tool\(\) while a think\(\) is waiting on the model"):
        coder.run_tool(state, "add", a=1, b=2)
    assert len(state.history) == before
    empty = State()
    with pytest.raises(ValueError, match=r"cannot call run_tool\(\) on a State with no messages"):
        coder.run_tool(empty, "add", a=1, b=2)
    assert empty.history == ()


def test_the_program_call_folds_like_a_models_one_call_reply() -> None:
    state = task()
    agent().run_tool(state, "add", a=1, b=2)
    replayed = State(history=state.history)
    assert replayed.messages == state.messages and replayed.turn == 1 and replayed.usage == Usage()
    snapshot = fold(task().snapshot(), state.history[-3])
    snapshot = fold(snapshot, state.history[-2])
    assert snapshot.pending_calls == state.history[-2].content.tool_calls  # type: ignore[union-attr]


def test_the_viewer_shows_the_program_call(tmp_path: Path) -> None:
    from alpineagents.viewer.charts import turns
    from alpineagents.viewer.page import export_html
    from alpineagents.viewer.timeline import build

    store = FileStore(tmp_path)
    state = State(id="viewed", messages=[Message.user("Sum")])
    agent(store=store).run_tool(state, "add", a=1, b=2)
    assert turns(state.history) == []  # no model reply: nothing in the token and cost charts
    page = export_html(store, "viewed")
    assert "the program called add" in page and "turn 1: the program calls a tool" in page
    items = build(state.history, [])
    request, reply = [item for item in items if item.kind in ("model_request", "model_reply")]
    assert request.label == "turn 1: the program calls a tool"
    assert reply.label == "the program called add" and reply.badge == "program" and reply.facts == []
    assert [(piece.title, piece.style) for piece in reply.pieces] == [("add(a=1, b=2)", "call")]
    assert items[-1].kind == "tool_result" and items[-1].duration is not None


def test_show_prints_the_program_call_as_the_terminal_did_live(tmp_path: Path) -> None:
    from alpineagents.cli.replay import Replay
    from alpineagents.terminal import Terminal

    store = FileStore(tmp_path)
    live = io.StringIO()
    coder = agent(["Read it."], reporter=Terminal(output=live), store=store)
    state = State(id="shown", messages=[Message.user("What is in setup.cfg?")])
    coder.run_tool(state, "read_file", path="setup.cfg")
    coder.run(state)
    assert live.getvalue().splitlines() == [
        '  tool read_file(path="setup.cfg")',
        "  done 21B",
        "[turn 2] thinking",
        "Read it.",
        "done: stopped by waiting_for_user (2 turns)",
    ]
    shown = io.StringIO()
    loaded = store.load("shown")
    Replay(store, shown).history(loaded.history)
    assert shown.getvalue() == live.getvalue()
