"""Checks of 03 (Agent): construction, run, think, failures, resume, reporter events."""

from __future__ import annotations

import hashlib
import threading
import time
import warnings
from typing import Any

import pytest

from alpineagents._turn.seams import DEFAULT as CONTEXT_DEFAULT
from alpineagents.agent import DEFAULT, SETTINGS, Agent
from alpineagents.errors import CutOffError, ResumeWarning
from alpineagents.loop import Loop, default_loop, loop
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.store import FileStore
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import AgentInfo, Message, Reply, StoppedByUntil, TextBlock, Usage
from conftest import kinds, task


@tool
def helper(x: int = 1) -> str:
    """Doubles x."""
    return str(x * 2)


@tool
def search(q: str = "") -> str:
    """Searches."""
    return "found"


class Recorder(Reporter):
    """Records every event name (and the State's stop at run start)."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.stops_at_start: list[Any] = []

    def on_run_start(self, state: State) -> None:
        self.events.append("on_run_start")
        self.stops_at_start.append(state.stopped)

    def on_think_start(self, state: State) -> None:
        self.events.append("on_think_start")

    def on_text(self, state: State, chunk: str) -> None:
        self.events.append("on_text")

    def on_think_end(self, state: State, reply: Reply) -> None:
        self.events.append("on_think_end")

    def on_tool_start(self, state: State, call: Any) -> None:
        self.events.append("on_tool_start")

    def on_tool_end(self, state: State, call: Any, result: Any, outcome: Any) -> None:
        self.events.append("on_tool_end")

    def on_context_change(self, state: State, change: Any) -> None:
        self.events.append("on_context_change")

    def on_model_event(self, state: State, event: Any) -> None:
        self.events.append("on_model_event")

    def on_run_end(self, state: State, error: BaseException | None) -> None:
        self.events.append("on_run_end")
        self.run_end_error = error


# --- construction ------------------------------------------------------------------------------------------


def test_run_returns_the_final_answer_and_sends_only_the_prompt() -> None:
    fake = FakeModel(["Final answer"])
    assert Agent(model=fake, reporter=None).run("Find the bug") == "Final answer"
    assert len(fake.requests[0].messages) == 1
    first = fake.requests[0].messages[0]
    assert (first.role, first.text) == ("user", "Find the bug")


def test_an_empty_or_wrong_prompt_is_refused() -> None:
    fake = FakeModel(["x"])
    agent = Agent(model=fake, reporter=None)
    with pytest.raises(ValueError, match="empty prompt"):
        agent.run("   ")
    assert fake.requests == []
    with pytest.raises(TypeError, match="takes a prompt string or a State"):
        agent.run(123)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        agent.run(prompt_or_state="x")  # type: ignore[call-arg]


def test_tools_and_system_of_the_wrong_type_are_refused() -> None:
    with pytest.raises(TypeError) as info:
        Agent(model=FakeModel([]), tools="read_file")
    assert str(info.value).splitlines()[0] == "tools= takes a list (got: 'read_file')"
    with pytest.raises(TypeError) as info:
        Agent(model=FakeModel([]), system=3)  # type: ignore[arg-type]
    assert str(info.value).splitlines()[0] == "system= takes a string (got: 3)"
    assert "Fix:" in str(info.value)


def test_a_reporter_missing_one_method_is_refused() -> None:
    class Partial:
        def on_run_start(self, state: Any) -> None: ...
        def on_think_start(self, state: Any) -> None: ...
        def on_text(self, state: Any, chunk: Any) -> None: ...
        def on_think_end(self, state: Any, reply: Any) -> None: ...
        def on_tool_start(self, state: Any, call: Any) -> None: ...
        def on_tool_end(self, state: Any, call: Any, result: Any, outcome: Any) -> None: ...
        def on_context_change(self, state: Any, change: Any) -> None: ...
        def on_run_end(self, state: Any, error: Any) -> None: ...

    with pytest.raises(TypeError, match="missing methods: on_model_event"):
        Agent(model=FakeModel([]), reporter=Partial())
    with pytest.raises(TypeError, match="is not a Reporter object"):
        Agent(model=FakeModel([]), reporter=Recorder)
    Agent(model=FakeModel([]), reporter=Recorder())


def test_an_agent_without_skills_has_none() -> None:
    agent = Agent(model=FakeModel([]), reporter=None)
    assert agent.skills == ()
    with pytest.raises(ValueError, match="its skills: \\(none"):
        agent.load_skill(task(), "x")
    with pytest.raises(TypeError, match="skills= takes a list"):
        Agent(model=FakeModel([]), skills=3)  # type: ignore[arg-type]


def test_copy_lays_changes_over_the_settings_and_refuses_unknown_ones() -> None:
    agent = Agent(model=FakeModel([]), system="Old", reporter=None)
    with pytest.raises(TypeError) as info:
        agent.copy(unknown_option=True)
    text = str(info.value)
    assert text.splitlines()[0] == "copy() got unknown settings: unknown_option"
    assert "model, system, tools, skills, loop, reporter, human, store, permissions, name, description, budget" in text
    new = agent.copy(system="New")
    assert agent.system == "Old" and new.system == "New"
    assert new.model is agent.model
    assert SETTINGS == (
        "model",
        "system",
        "tools",
        "skills",
        "loop",
        "reporter",
        "human",
        "store",
        "permissions",
        "name",
        "description",
        "budget",
    )


def test_copy_keeps_defaults_permissions_and_resolves_strings_again() -> None:
    agent = Agent(model="anthropic/claude-sonnet-5", permissions=[])
    copied = agent.copy()
    assert copied.model is not agent.model and repr(copied.model) == repr(agent.model)
    assert copied._reporter_given is DEFAULT and copied._human_given is DEFAULT
    assert copied._permissions == () and copied.copy(permissions=None)._permissions is None


def test_repr_shows_name_model_and_tools() -> None:
    agent = Agent(model=FakeModel(["x"], name="m1"), name="coder", tools=[helper], reporter=None)
    assert repr(agent) == "Agent(name='coder', model=FakeModel('m1'), tools=[helper])"
    assert repr(Agent(model=FakeModel([]))) == "Agent(model=FakeModel('fake'))"


def test_a_run_records_its_history_and_agent_info() -> None:
    agent = Agent(model=FakeModel(["Done"], name="m1"), system="Be brief", tools=[helper], name="coder", reporter=None)
    state = State(messages=[Message.user("Fix it")], extra_data={"repo": "api"})
    agent.run(state)
    assert kinds(state) == ["context_change", "extra_data", "run_start", "model_request", "model_reply", "stop"]
    start = state.history[2]
    assert start.content == AgentInfo(
        name="coder",
        model="fake/m1",
        tools=("helper",),
        system_sha256=hashlib.sha256(b"Be brief").hexdigest(),
    )
    assert start.turn == 0


def test_each_run_start_clears_the_stop() -> None:
    recorder = Recorder()
    agent = Agent(model=FakeModel(["one", "two"]), reporter=recorder)
    state = task()
    agent.run(state)
    state.add_message(Message.user("more"))
    agent.run(state)
    starts = [entry for entry in state.history if entry.kind == "run_start"]
    assert [entry.turn for entry in starts] == [0, 1]
    assert recorder.stops_at_start == [None, None]


def test_a_state_already_being_run_is_refused() -> None:
    started = threading.Event()
    release = threading.Event()

    @tool
    def block() -> str:
        """Blocks."""
        started.set()
        release.wait(5)
        return "ok"

    agent = Agent(model=FakeModel([tool_call("block"), "done"]), tools=[block], reporter=None)
    state = task()
    thread = threading.Thread(target=agent.run, args=(state,))
    thread.start()
    assert started.wait(5)
    before = len(state.history)
    other = Agent(model=FakeModel(["x"]), reporter=None)
    with pytest.raises(ValueError, match="already being run"):
        other.run(state)
    assert len(state.history) == before
    release.set()
    thread.join(5)
    assert state.answer == "done"


def test_a_failed_request_is_taken_back() -> None:
    agent = Agent(model=FakeModel([RuntimeError("model error"), "Worked"]), reporter=None)
    state = task()
    before = state.snapshot()
    with pytest.raises(RuntimeError, match="model error"):
        agent.think(state)
    assert state.messages == before.messages and state.turn == 0 and state.usage == before.usage
    assert kinds(state)[-2:] == ["model_request", "error"]
    agent.think(state)
    assert state.turn == 1 and state.answer == "Worked"


def test_on_think_end_raising_keeps_the_reply() -> None:
    class Boom(Recorder):
        def on_think_end(self, state: State, reply: Reply) -> None:
            raise RuntimeError("reporter bug")

    agent = Agent(model=FakeModel(["Reply"]), reporter=Boom())
    state = task()
    with pytest.raises(RuntimeError, match="reporter bug"):
        agent.think(state)
    assert state.turn == 1
    assert state.messages[-1].text == "Reply"
    assert kinds(state)[-3:] == ["model_request", "model_reply", "error"]


def test_a_message_added_while_thinking_lands_after_the_reply() -> None:
    state = task()

    def item(request: Any) -> str:
        state.add_message(Message.user("later"))
        return "Reply"

    Agent(model=FakeModel([item]), reporter=None).think(state)
    assert [(m.role, m.text) for m in state.messages] == [
        ("user", "Task"),
        ("assistant", "Reply"),
        ("user", "later"),
    ]


@tool
def ok_tool() -> str:
    """Works."""
    return "success"


@tool
def boom_tool() -> str:
    """Fails."""
    time.sleep(0.05)
    raise TimeoutError("timed out")


def result_contents(state: State) -> list[Any]:
    return [block.content for m in state.messages for block in m.content if hasattr(block, "call_id")]


def test_a_tool_exception_leaves_the_run_and_closes_the_call() -> None:
    agent = Agent(
        model=FakeModel([[tool_call("ok_tool"), tool_call("boom_tool")], "never"]),
        tools=[ok_tool, boom_tool],
        reporter=None,
    )
    state = task()
    with pytest.raises(TimeoutError) as info:
        agent.run(state)
    assert any("exception raised in tool boom_tool()" in note for note in info.value.__notes__)
    assert result_contents(state) == ["success", "(aborted: TimeoutError)"]
    assert state.pending_calls == ()
    errors = [entry for entry in state.history if entry.kind == "error"]
    assert len(errors) == 1 and errors[0].error is info.value
    assert state.stopped is None


def test_a_custom_loop_raising_after_think_closes_the_call() -> None:
    def my_loop(agent: Agent, state: State) -> None:
        agent.think(state)
        raise ValueError("loop bug")

    agent = Agent(model=FakeModel([tool_call("helper", x=1)]), tools=[helper], loop=my_loop, reporter=None)
    state = task()
    with pytest.raises(ValueError, match="loop bug"):
        agent.run(state)
    assert state.messages[1].tool_calls
    assert result_contents(state) == ["(aborted: ValueError)"]


def test_a_keyboard_interrupt_from_the_model_takes_the_request_back() -> None:
    agent = Agent(model=FakeModel([KeyboardInterrupt()]), reporter=None)
    state = task()
    with pytest.raises(KeyboardInterrupt):
        agent.run(state)
    assert [m.text for m in state.messages] == ["Task"] and state.turn == 0
    assert kinds(state)[-2:] == ["model_request", "error"]
    assert state.history[-1].content == "KeyboardInterrupt"


def test_a_tool_interrupt_closes_the_serial_call_too() -> None:
    @tool
    def stop_tool() -> str:
        """Raises Ctrl+C."""
        raise KeyboardInterrupt

    @tool(parallel=False)
    def later() -> str:
        """Serial."""
        return "never"

    agent = Agent(
        model=FakeModel([[tool_call("stop_tool"), tool_call("later")]]), tools=[stop_tool, later], reporter=None
    )
    state = task()
    with pytest.raises(KeyboardInterrupt):
        agent.run(state)
    assert result_contents(state) == ["(interrupted by user)", "(interrupted by user)"]


def test_an_exception_after_finish_clears_the_stop_but_stays_finished() -> None:
    @loop(until=[], limit=3)
    def body(agent: Agent, state: State) -> None:
        state.finish("ans")
        raise RuntimeError("after finish")

    agent = Agent(model=FakeModel([]), loop=body, reporter=None)
    state = task()
    with pytest.raises(RuntimeError):
        agent.run(state)
    assert state.stopped is None and state.finished is True
    assert kinds(state)[-2:] == ["error", "stop"] and state.history[-1].content is None
    with pytest.raises(ValueError, match=r"Cannot run\(\) a State that was finish\(\)ed") as info:
        agent.run(state)
    assert "fork" in str(info.value) and "State(messages=state.messages)" in str(info.value)


# --- finished States, think(tools=...), context size, cut-off, resume, reporter ---------------------------------


def test_ask_use_tools_and_think_refuse_a_finished_state() -> None:
    agent = Agent(model=FakeModel(["summary"]), reporter=None, human=None)
    state = task()
    state.finish("x")
    with pytest.raises(ValueError, match=r"cannot call ask\(\) on a finished State"):
        agent.ask(state, "q")
    with pytest.raises(ValueError, match=r"cannot call use_tools\(\) on a finished State"):
        agent.use_tools(state)
    with pytest.raises(ValueError, match=r"cannot call think\(\) on a finished State"):
        agent.think(state)
    agent.compact(state)
    assert state.messages[-1].text.startswith("[notice] Summary so far:")


def test_ask_human_and_compact_work_on_a_finished_state() -> None:
    from alpineagents.testing import FakeHuman

    state = task()
    state.finish()
    agent = Agent(model=FakeModel([]), reporter=None, human=FakeHuman(["yes"]))
    assert agent.ask_human(state, "ok?") == "yes"


def test_think_tools_chooses_the_specs_shown() -> None:
    fake = FakeModel(["a", "b", "c"])
    agent = Agent(model=fake, tools=[helper, search], reporter=None)
    state = task()
    agent.think(state, tools=[])
    assert fake.requests[-1].tools == ()
    state.add_message(Message.user("more"))
    agent.think(state, tools=[search])
    assert [spec.name for spec in fake.requests[-1].tools] == ["search"]

    @tool
    def stranger() -> str:
        """Not mine."""
        return ""

    before = len(state.history)
    state.add_message(Message.user("again"))
    before = len(state.history)
    with pytest.raises(ValueError, match=r"Tool 'stranger' passed in think\(tools=...\) is not one of"):
        agent.think(state, tools=[stranger])
    assert len(state.history) == before
    with pytest.raises(TypeError, match=r"think\(tools= takes a list"):
        agent.think(state, tools="helper")  # type: ignore[arg-type]
    agent.think(state, tools=[agent.tool_map["helper"]])
    assert [spec.name for spec in fake.requests[-1].tools] == ["helper"]


def test_context_used_is_the_tokens_over_the_window() -> None:
    state = task("Some task text")
    plain = Agent(model=FakeModel([], context_window=1000), reporter=None)
    rich = Agent(model=FakeModel([], context_window=1000), system="A long system prompt", tools=[helper])
    assert plain.context_used(state) == plain.context_tokens(state) / 1000
    assert rich.context_tokens(state) > plain.context_tokens(state)

    class NoWindow(FakeModel):
        @property
        def context_window(self) -> Any:
            return None

    assert Agent(model=NoWindow([]), reporter=None).context_used(state) == 0.0
    with pytest.raises(TypeError, match=r"agent\.context_tokens\(\) must be a State"):
        plain.context_tokens("x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"agent\.context_used\(\) must be a State"):
        plain.context_used("x")  # type: ignore[arg-type]


def cut_reply(text: str = "") -> Reply:
    from alpineagents.types import RawBlock

    blocks: tuple[Any, ...] = (RawBlock("fake", {"thinking": "hmm"}),)
    if text:
        blocks += (TextBlock(text),)
    return Reply(
        Message("assistant", blocks), Usage(output_tokens=8192, requests=1), stop_reason="max_tokens", model="m"
    )


def test_a_reply_cut_off_before_any_text_is_a_cut_off_error() -> None:
    reply = cut_reply()
    agent = Agent(model=FakeModel([reply]), reporter=None)
    state = task()
    with pytest.raises(CutOffError, match="cut off by its output limit") as info:
        agent.think(state)
    assert info.value.reply is reply
    assert state.usage.output_tokens == 8192
    assert state.messages[-1].cut_off
    assert kinds(state)[-2:] == ["model_reply", "error"]
    assert Agent(model=FakeModel([cut_reply("partial")]), reporter=None).run("T") == "partial"


def _stored_state(tmp_path: Any, agent: Agent) -> str:
    state = task()
    agent.run(state)
    return state.id


@tool
def search_web(q: str = "") -> str:
    """Web."""
    return ""


@tool
def search_docs(q: str = "") -> str:
    """Docs."""
    return ""


def test_a_resumed_state_warns_when_the_agent_changed(tmp_path: Any) -> None:
    store = FileStore(tmp_path)
    first = Agent(model=FakeModel(["one"]), tools=[search_web], store=store, reporter=None)
    state_id = _stored_state(tmp_path, first)
    loaded = store.load(state_id)
    loaded.add_message(Message.user("again"))
    second = Agent(model=FakeModel(["two", "three"]), tools=[search_docs], store=store, reporter=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second.run(loaded)
    resumes = [w for w in caught if issubclass(w.category, ResumeWarning)]
    assert len(resumes) == 1
    warning = resumes[0].message
    assert isinstance(warning, ResumeWarning)
    assert warning.changes == {"tools": (("search_web",), ("search_docs",))}
    assert "tools: removed search_web, added search_docs" in str(warning)
    assert str(warning).startswith("This State was saved by a different Agent (")
    assert resumes[0].filename == __file__
    loaded.add_message(Message.user("more"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second.run(loaded)
    assert not [w for w in caught if issubclass(w.category, ResumeWarning)]


def test_a_resume_warning_turned_error_records_nothing(tmp_path: Any) -> None:
    store = FileStore(tmp_path)
    state_id = _stored_state(tmp_path, Agent(model=FakeModel(["one"]), tools=[search_web], store=store, reporter=None))
    loaded = store.load(state_id)
    fake = FakeModel(["two"])
    second = Agent(model=fake, tools=[search_docs], store=store, reporter=None)
    length = len(loaded.history)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=ResumeWarning)
        with pytest.raises(ResumeWarning):
            second.run(loaded)
        assert fake.requests == [] and len(loaded.history) == length
        with pytest.raises(ResumeWarning):
            second.run(loaded)


def test_resume_message_parts() -> None:
    from alpineagents._turn.run import resume_warning

    saved = AgentInfo(name="a", model="x/1", system_sha256="s1", tools=("t1", "t2"), mcp_servers=("gh",))
    now = AgentInfo(name=None, model="x/2", system_sha256="s2", tools=("t2", "t1"), mcp_servers=())
    warning = resume_warning(saved, now)
    assert warning is not None
    assert str(warning) == (
        "This State was saved by a different Agent (name: a -> (none); model: x/1 -> x/2; system prompt changed; "
        "mcp_servers: removed gh). The run continues, but may behave differently than before it was saved"
    )
    assert set(warning.changes) == {"name", "model", "system_sha256", "mcp_servers"}
    assert resume_warning(saved, saved) is None


def test_a_default_run_gives_the_reporter_events_in_order() -> None:
    recorder = Recorder()
    agent = Agent(model=FakeModel([tool_call("helper", x=2), "Answer"]), tools=[helper], reporter=recorder)
    agent.run("Task")
    assert recorder.events == [
        "on_run_start",
        "on_think_start",
        "on_think_end",
        "on_tool_start",
        "on_tool_end",
        "on_think_start",
        "on_text",
        "on_think_end",
        "on_run_end",
    ]
    assert recorder.run_end_error is None


# --- smaller contract points -------------------------------------------------------------------------------


def test_default_sentinel_and_properties() -> None:
    from alpineagents.terminal import default_terminal

    assert repr(DEFAULT) == "DEFAULT" and type(DEFAULT)() is DEFAULT and DEFAULT is CONTEXT_DEFAULT
    agent = Agent(FakeModel([]), reporter=DEFAULT)
    assert agent.reporter is default_terminal() and agent.human is agent.reporter
    assert agent.loop is default_loop and agent.store is None and agent.permissions == ()
    with pytest.raises(AttributeError):
        agent.system = "x"  # type: ignore[misc]
    assert Agent(FakeModel([]), permissions=[]).permissions == ()


def test_constructor_checks_in_order() -> None:
    with pytest.raises(TypeError, match=r"permissions= takes a list \(got: 'x'\)"):
        Agent(FakeModel([]), permissions="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"name= takes a string \(got: 5\)"):
        Agent(FakeModel([]), name=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"loop= takes a function that receives \(agent, state\) \(got: 3\)"):
        Agent(FakeModel([]), loop=3)
    with pytest.raises(TypeError, match=r"human=3 is not a Human object"):
        Agent(FakeModel([]), human=3)
    with pytest.raises(TypeError, match=r"store=3 is not a Store object"):
        Agent(FakeModel([]), store=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"3 passed in permissions= is not a Permission object"):
        Agent(FakeModel([]), permissions=[3])  # type: ignore[list-item]
    from alpineagents.permissions import AllowByDefault

    with pytest.raises(TypeError, match=r"AllowByDefault passed in permissions= is not a Permission object \(it is"):
        Agent(FakeModel([]), permissions=[AllowByDefault])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="Duplicate tool name 'helper'"):
        Agent(FakeModel([]), tools=[helper, helper])
    # tools= is checked before the system prompt, the system prompt before the model.
    with pytest.raises(TypeError, match="tools="):
        Agent(3, tools=5, system=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="system="):
        Agent(3, system=3)  # type: ignore[arg-type]


def test_think_first_argument_and_wrong_order_calls() -> None:
    agent = Agent(FakeModel([tool_call("helper")]), tools=[helper], reporter=None)
    with pytest.raises(TypeError, match=r"The first argument of agent\.think\(\) must be a State \(got: 'x'\)"):
        agent.think("x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"agent\.use_tools\(\) must be a State"):
        agent.use_tools(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no messages"):
        agent.think(State())
    state = task()
    agent.think(state)
    with pytest.raises(ValueError, match=r"cannot call think\(\) while calls are pending \(helper\(\)\)"):
        agent.think(state)
    agent.use_tools(state)
    assert state.pending_calls == () and result_contents(state) == ["2"]
    agent.use_tools(state)  # nothing pending: nothing recorded


def test_model_event_is_recorded_then_reported() -> None:
    from alpineagents.types import ModelEvent

    recorder = Recorder()

    class Eventful(FakeModel):
        def respond(self, request: Any, on_text: Any = None, on_event: Any = None) -> Reply:
            on_event(ModelEvent("retry", "again"))
            with pytest.raises(TypeError, match="on_event takes a ModelEvent"):
                on_event("not an event")
            return super().respond(request, on_text, on_event)

    agent = Agent(Eventful(["ok"]), reporter=recorder)
    state = task()
    agent.think(state)
    assert kinds(state)[-3:] == ["model_request", "model_event", "model_reply"]
    assert "on_model_event" in recorder.events


def test_loop_result_is_returned_by_run() -> None:
    def plain(agent: Agent, state: State) -> str:
        return "custom"

    assert Agent(FakeModel([]), loop=plain, reporter=None).run("T") == "custom"
    assert isinstance(default_loop, Loop)


def test_unknown_tool_bad_json_and_tool_error_continue_the_run() -> None:
    from alpineagents.errors import ToolError
    from alpineagents.types import INVALID_ARGS_KEY, ToolCall

    @tool
    def picky(n: int) -> str:
        """Needs an int."""
        raise ToolError("nope")

    agent = Agent(
        FakeModel(
            [
                [
                    tool_call("nope"),
                    ToolCall("picky", {INVALID_ARGS_KEY: '{"n": '}, "c2"),
                    tool_call("picky", n="x"),
                    tool_call("picky", n=1),
                ],
                "done",
            ]
        ),
        tools=[picky],
        reporter=None,
    )
    state = task()
    assert agent.run(state) == "done"
    contents = result_contents(state)
    assert contents[0] == "(input error: unknown tool 'nope'. Available tools: picky)"
    assert contents[1] == '(input error: arguments are not valid JSON: {"n": )'
    assert contents[2].startswith("(input error:")
    assert contents[3] == "nope"
    assert len([e for e in state.history if e.kind == "tool_result"]) == 4


def test_reply_without_content_is_an_empty_answer() -> None:
    state = task()
    assert Agent(FakeModel([[]]), reporter=None).run(state) == ""
    assert state.stopped == StoppedByUntil("waiting_for_user")


def test_context_managers_return_the_agent() -> None:
    agent = Agent(FakeModel(["a"]), reporter=None)
    with agent as entered:
        assert entered is agent
        assert agent.run("T") == "a"

    async def main() -> Any:
        async with agent as entered:
            return entered

    import asyncio

    assert asyncio.run(main()) is agent


def test_reporter_for_follows_the_run_context() -> None:
    outer = Recorder()
    agent = Agent(FakeModel(["x"]), reporter=outer)
    state = task()
    assert agent._reporter_for(state) is outer
    seen: list[Any] = []

    def custom(a: Agent, s: State) -> None:
        seen.append(a._reporter_for(s))
        seen.append(a._active_context(s.fork()))
        s.compact("by hand")

    agent.copy(loop=custom).run(state)
    assert seen[0] is outer and seen[1] is not None
    assert "on_context_change" in outer.events


def test_history_shapes_of_13() -> None:
    @tool
    def submit(answer: str, state: State) -> str:
        """Finishes the State."""
        state.finish(answer)
        return "submitted"

    @tool
    def slow_a() -> str:
        """Slow."""
        time.sleep(0.05)
        return "a"

    @tool
    def slow_b() -> str:
        """Slow."""
        time.sleep(0.05)
        return "b"

    state = State(messages=[Message.user("Task")], extra_data={"k": 1})
    agent = Agent(
        FakeModel([[tool_call("slow_a"), tool_call("submit", answer="42"), tool_call("slow_b")]]),
        tools=[submit, slow_a, slow_b],
        reporter=None,
    )
    assert agent.run(state) == "42"
    assert kinds(state) == [
        "context_change",
        "extra_data",
        "run_start",
        "model_request",
        "model_reply",
        "stop",
        "tool_result",
        "tool_result",
        "tool_result",
    ]
    assert state.finished

    second = task()
    two = Agent(FakeModel(["one", "two"]), reporter=None)
    two.run(second)
    second.add_message(Message.user("next"))
    two.run(second)
    assert kinds(second)[-6:] == ["stop", "user", "run_start", "model_request", "model_reply", "stop"]
