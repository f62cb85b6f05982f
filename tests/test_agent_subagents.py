"""Subagents: the subagent tool, links, usage, inheritance, permissions, saving, interruption."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from alpineagents.agent import Agent
from alpineagents.errors import NoHumanError, ToolError
from alpineagents.loop import loop
from alpineagents.permissions import AllowByDefault, DecideByHuman, Denied, DenyByName, DenyPermission
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.store import FileStore
from alpineagents.testing import FakeHuman, FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message, Price, StoppedByLimit, StoppedByPermission, ToolCall
from conftest import task


def never(state: State) -> bool:
    return False


def researcher(*items: Any, **settings: Any) -> Agent:
    settings.setdefault("reporter", None)
    settings.setdefault("human", None)
    return Agent(FakeModel(list(items)), name="researcher", description="Looks things up", **settings)


def lead_with(helper: Agent, *, prompt: str = "Look into Redis", **settings: Any) -> Agent:
    settings.setdefault("reporter", None)
    settings.setdefault("human", None)
    return Agent(FakeModel([tool_call("researcher", prompt=prompt), "outer"]), tools=[helper], **settings)


def first_result(state: State) -> Any:
    return next(entry for entry in state.history if entry.kind == "tool_result")


def test_an_agent_without_name_and_description_is_refused_as_a_tool() -> None:
    with pytest.raises(ValueError, match="has no name, description") as info:
        Agent(model=FakeModel([]), tools=[Agent(model=FakeModel([]))])
    assert "Give an Agent used as a subagent both name and description" in str(info.value)
    with pytest.raises(ValueError, match="has no description"):
        Agent(model=FakeModel([]), tools=[Agent(model=FakeModel([]), name="x", description="")])


def test_bad_and_duplicate_subagent_names_are_refused() -> None:
    bad = Agent(FakeModel([]), name="my researcher", description="d")
    with pytest.raises(TypeError, match="cannot be used as a tool name"):
        Agent(FakeModel([]), tools=[bad])
    with pytest.raises(ValueError, match="Duplicate tool name 'researcher'"):
        Agent(FakeModel([]), tools=[researcher(), researcher()])


def test_an_agent_in_tools_becomes_the_subagent_tool() -> None:
    helper = researcher()
    lead = lead_with(helper)
    found = lead.tool_map["researcher"]
    assert found.input_schema["required"] == ["prompt"]
    assert "sees only this prompt" in found.input_schema["properties"]["prompt"]["description"]
    assert found.parallel is True
    assert (found.read_only, found.destructive, found.idempotent, found.open_world) == (False, True, False, True)
    assert repr(found) == "Agent(name='researcher')"
    assert found.agent is helper and found.is_async is False
    assert lead.tools == (helper,)
    assert repr(lead) == "Agent(model=FakeModel('fake'), tools=[researcher])"
    assert lead._agent_info_now().tools == ("researcher",)


def test_a_subagent_run_is_linked_to_its_call() -> None:
    helper = researcher("Redis evicts keys")
    lead = lead_with(helper)
    state = task()
    assert lead.run(state) == "outer"
    entry = first_result(state)
    assert entry.content == "Redis evicts keys" and entry.outcome == "done"
    child = state.child(entry.child_ids[0])
    assert [m.text for m in child.messages if m.role == "user"] == ["Look into Redis"]
    assert child.parent_id == state.id and child.parent_call_id == entry.call.id
    assert state.usage.requests == 3


def test_argument_errors_start_no_child() -> None:
    helper = researcher("unused")
    for args, text in (
        ({"prompt": "ok", "extra": 1, "b": 2}, "(input error: unexpected argument: b, extra)"),
        ({"prompt": "  "}, "(input error: prompt: must be a non-empty string)"),
    ):
        lead = Agent(FakeModel([ToolCall("researcher", args, "c1"), "outer"]), tools=[helper], reporter=None)
        state = task()
        lead.run(state)
        entry = first_result(state)
        assert entry.content == text and entry.child_ids == ()
    assert helper.model.remaining == 1  # type: ignore[attr-defined]


def test_a_limit_stop_adds_a_note_to_the_result() -> None:
    @loop(until=never, limit=2)
    def two(agent: Agent, state: State) -> None:
        agent.think(state)

    helper = researcher("first", "second", loop=two)
    state = task()
    lead_with(helper).run(state)
    entry = first_result(state)
    assert entry.content == "second\n(researcher stopped after 2 turns before finishing)"
    assert entry.outcome == "done"
    assert state.child(entry.child_ids[0]).stopped == StoppedByLimit(2)

    @tool
    def noop() -> str:
        """Nothing."""
        return "x"

    @loop(until=never, limit=1)
    def one(agent: Agent, state: State) -> None:
        agent.think(state)
        if state.pending_calls:
            agent.use_tools(state)

    helper = Agent(
        FakeModel([tool_call("noop")]), name="researcher", description="d", tools=[noop], loop=one, reporter=None
    )
    state = task()
    lead_with(helper).run(state)
    assert first_result(state).content == "(researcher stopped after 1 turn before finishing)"


def test_a_permission_stop_inside_the_child_gives_its_reason() -> None:
    class NoPeeking(DenyPermission):
        def check(self, state: Any, call: Any, tool: Any) -> Any:
            return Denied("No peeking", stop=True)

    @tool
    def peek() -> str:
        """Peeks."""
        return "secret"

    helper = Agent(
        FakeModel([tool_call("peek")]),
        name="researcher",
        description="d",
        tools=[peek],
        permissions=[NoPeeking()],
        reporter=None,
    )
    state = task()
    lead_with(helper).run(state)
    entry = first_result(state)
    assert entry.content == "(researcher was stopped by the user: No peeking)" and entry.outcome == "done"
    assert not isinstance(state.stopped, StoppedByPermission)
    fresh = State()
    fresh._record_stop(StoppedByPermission(ToolCall("x", {}, "c"), "P()"))
    assert lead_with(researcher()).tool_map["researcher"]._result(fresh, "ignored") == (  # type: ignore[attr-defined]
        "(researcher was stopped by the user)"
    )


def test_a_child_failure_becomes_an_error_result() -> None:
    state = task()
    assert lead_with(researcher(RuntimeError("boom"))).run(state) == "outer"
    entry = first_result(state)
    assert entry.content == "(researcher failed: RuntimeError: boom)" and entry.outcome == "error"
    assert isinstance(entry.error, ToolError) and isinstance(entry.error.__cause__, RuntimeError)
    state = task()
    lead_with(researcher(KeyError())).run(state)
    assert first_result(state).content == "(researcher failed: KeyError)"


def test_a_failure_before_the_child_starts_propagates() -> None:
    helper = researcher("x", permissions=[DecideByHuman()], human=None)
    lead = lead_with(helper)
    state = task()
    with pytest.raises(NoHumanError) as info:
        lead.run(state)
    assert info.value.__cause__ is None
    assert any(note.startswith("exception raised in tool researcher(") for note in info.value.__notes__)
    entry = first_result(state)
    assert entry.content == "(aborted: NoHumanError)" and entry.outcome == "aborted" and entry.child_ids == ()
    assert lead.model.remaining == 1  # type: ignore[attr-defined]


def test_an_interrupt_in_the_child_interrupts_the_call() -> None:
    state = task()
    with pytest.raises(KeyboardInterrupt):
        lead_with(researcher(KeyboardInterrupt())).run(state)
    entry = first_result(state)
    assert entry.outcome == "interrupted" and len(entry.child_ids) == 1
    assert state.stopped is None


def test_a_tool_running_a_failing_helper_stops_the_parent() -> None:
    helper = Agent(FakeModel([RuntimeError("boom")]), reporter=None)

    @tool
    def delegate() -> str:
        """Delegates."""
        return helper.run("Inner task")

    state = task()
    with pytest.raises(RuntimeError):
        Agent(FakeModel([tool_call("delegate"), "x"]), tools=[delegate], reporter=None).run(state)
    entry = first_result(state)
    assert entry.outcome == "aborted" and len(entry.child_ids) == 1


def test_three_children_in_one_call_are_all_listed() -> None:
    children: list[State] = []

    @tool
    def three() -> str:
        """Runs three helpers."""
        for i in range(3):
            child = task(f"sub {i}")
            children.append(child)
            Agent(FakeModel([f"r{i}"]), reporter=None).run(child)
        return "all done"

    state = task()
    Agent(FakeModel([tool_call("three"), "x"]), tools=[three], reporter=None).run(state)
    entry = first_result(state)
    assert entry.child_ids == tuple(c.id for c in children)
    assert entry.usage.requests == 3


def test_an_async_gather_of_three_children_lists_them_all() -> None:
    @tool
    async def gather() -> str:
        """Runs three helpers at once."""
        runs = [Agent(FakeModel([f"r{i}"]), reporter=None).arun(f"sub {i}") for i in range(3)]
        return ", ".join(await asyncio.gather(*runs))

    state = task()
    result = asyncio.run(Agent(FakeModel([tool_call("gather"), "x"]), tools=[gather], reporter=None).arun(state))
    assert result == "x"
    entry = first_result(state)
    assert len(entry.child_ids) == 3
    assert all(state.child(cid).parent_id == state.id for cid in entry.child_ids)


def test_a_run_in_the_tools_own_thread_is_not_a_child() -> None:
    child = task("sub")

    @tool
    def threaded() -> str:
        """Runs a helper in its own thread."""
        thread = threading.Thread(target=Agent(FakeModel(["r"]), reporter=None).run, args=(child,))
        thread.start()
        thread.join(10)
        assert not thread.is_alive()
        return "ok"

    state = task()
    Agent(FakeModel([tool_call("threaded"), "x"]), tools=[threaded], reporter=None).run(state)
    entry = first_result(state)
    assert entry.child_ids == () and entry.usage is None and child.parent_id is None


def test_a_run_in_a_helpers_custom_loop_has_no_parent() -> None:
    child = task("sub")

    def custom(agent: Agent, state: State) -> None:
        Agent(FakeModel(["r"]), reporter=None).run(child)
        agent.think(state)

    Agent(FakeModel(["x"]), loop=custom, reporter=None).run(task())
    assert child.parent_id is None


def test_costs_add_up_through_the_tree() -> None:
    @tool
    def delegate() -> str:
        """Delegates."""
        return Agent(FakeModel(["r"]), reporter=None).run("sub")

    state = task()
    Agent(FakeModel([tool_call("delegate"), "x"], price=Price(input=1, output=1)), tools=[delegate], reporter=None).run(
        state
    )
    assert state.usage.cost is None

    @tool
    def free() -> str:
        """Delegates to a free model."""
        return Agent(FakeModel(["r"], price=Price(input=0, output=0)), reporter=None).run("sub")

    state = task()
    Agent(FakeModel([tool_call("free"), "x"], price=Price(input=1, output=1)), tools=[free], reporter=None).run(state)
    assert state.usage.cost is not None


def test_a_rerun_child_counts_once_and_keeps_its_first_parent() -> None:
    helper_state = task("sub")
    helper = Agent(FakeModel(["one", "two", "three"]), reporter=None)
    helper.run(helper_state)

    @tool
    def again() -> str:
        """Runs the helper State again."""
        helper_state.add_message(Message.user("more"))
        return helper.run(helper_state)

    first_lead = task()
    Agent(FakeModel([tool_call("again"), "x"]), tools=[again], reporter=None).run(first_lead)
    assert first_result(first_lead).usage.requests == 1
    second_lead = task()
    Agent(FakeModel([tool_call("again"), "x"]), tools=[again], reporter=None).run(second_lead)
    assert helper_state.parent_id == first_lead.id
    starts = [e for e in helper_state.history if e.kind == "run_start"]
    assert starts[-1].parent_id == second_lead.id


def test_a_child_is_saved_in_the_parent_store(tmp_path: Any) -> None:
    store = FileStore(tmp_path)
    state = task()
    lead_with(researcher("r"), store=store).run(state)
    infos = {info.id: info for info in store.list()}
    child_id = first_result(state).child_ids[0]
    assert set(infos) == {state.id, child_id}
    assert infos[state.id].parent_id is None and infos[child_id].parent_id == state.id
    loaded = store.load(state.id)
    one, two = loaded.child(child_id), loaded.child(child_id)
    assert one is not two and one.snapshot() == state.child(child_id).snapshot()


def test_a_child_with_its_own_store_is_saved_there(tmp_path: Any) -> None:
    lead_store = FileStore(tmp_path / "lead")
    state = task()
    lead_with(researcher("r", store=FileStore(tmp_path / "child")), store=lead_store).run(state)
    assert [info.id for info in lead_store.list()] == [state.id]
    with pytest.raises(LookupError):
        lead_store.load(state.id).child(first_result(state).child_ids[0])


class Names(Reporter):
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_run_start(self, state: State) -> None:
        self.events.append(("on_run_start", state.id))

    def on_run_end(self, state: State, error: Any) -> None:
        self.events.append(("on_run_end", state.id))


def _asking_helper(**settings: Any) -> tuple[Agent, list[State]]:
    children: list[State] = []

    @tool
    def proceed(state: State) -> str:
        """Asks the human."""
        children.append(state)
        return str(helper.ask_human(state, "Proceed?"))

    helper = Agent(FakeModel([tool_call("proceed"), "helped"]), tools=[proceed], **settings)

    return helper, children


def _lead_running(helper: Agent, **settings: Any) -> Agent:
    @tool
    def delegate() -> str:
        """Runs the helper."""
        return helper.run("Help")

    return Agent(FakeModel([tool_call("delegate"), "outer"]), tools=[delegate], **settings)


def test_reporter_and_human_are_inherited() -> None:
    reporter = Names()
    human = FakeHuman(["go"])
    helper, children = _asking_helper()
    state = task()
    _lead_running(helper, reporter=reporter, human=human).run(state)
    child = children[0]
    assert ("on_run_start", child.id) in reporter.events and ("on_run_end", child.id) in reporter.events
    assert human.questions == ["Proceed?"]
    assert "human" in [e.kind for e in child.history] and "human" not in [e.kind for e in state.history]


def test_an_explicit_none_reporter_and_human_are_kept() -> None:
    reporter = Names()
    helper, children = _asking_helper(reporter=None, human=FakeHuman(["go"]))
    _lead_running(helper, reporter=reporter, human=FakeHuman([])).run(task())
    assert {sid for _, sid in reporter.events} == {reporter.events[0][1]}
    lead_human = FakeHuman(["never"])
    helper, _ = _asking_helper(reporter=None, human=None)
    with pytest.raises(NoHumanError):
        _lead_running(helper, reporter=None, human=lead_human).run(task())
    assert lead_human.questions == []


def test_the_parents_denials_apply_in_the_child() -> None:
    @tool
    def peek() -> str:
        """Peeks."""
        return "secret"

    helper = Agent(
        FakeModel([tool_call("peek"), "done"]),
        name="researcher",
        description="d",
        tools=[peek],
        permissions=[AllowByDefault()],
        reporter=None,
    )
    lead = lead_with(helper, permissions=[DenyByName(["peek"], reason="no peeking"), AllowByDefault()])
    state = task()
    lead.run(state)
    child = state.child(first_result(state).child_ids[0])
    entry = first_result(child)
    assert entry.content == "no peeking" and entry.outcome == "denied"


def test_a_subagent_with_an_async_only_human_runs_via_arun() -> None:
    from alpineagents.human import Human

    class AsyncOnly(Human):
        async def aask(self, state: Any, prompt: str, returns: Any = str) -> Any:
            return "yes"

    @tool
    def peek() -> str:
        """Peeks."""
        return "secret"

    helper = Agent(
        FakeModel([tool_call("peek"), "looked"]),
        name="researcher",
        description="d",
        tools=[peek],
        permissions=[DecideByHuman()],
        human=AsyncOnly(),
        reporter=None,
    )
    lead = lead_with(helper)
    assert lead.tool_map["researcher"].is_async is False
    state = task()
    assert asyncio.run(lead.arun(state)) == "outer"
    assert first_result(state).content == "looked"


def test_cancelling_the_lead_cancels_the_child() -> None:
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Sleeps."""
        started.set()
        await asyncio.sleep(10)
        return "never"

    helper = Agent(FakeModel([tool_call("slow")]), name="researcher", description="d", tools=[slow], reporter=None)
    lead = lead_with(helper)
    state = task()

    async def main() -> None:
        run = asyncio.create_task(lead.arun(state))
        await asyncio.wait_for(started.wait(), 10)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    entry = first_result(state)
    assert entry.outcome == "interrupted"
    child = state.child(entry.child_ids[0])
    assert first_result(child).outcome == "interrupted"
    assert state.stopped is None


def _peek_tool(ran: list[int]) -> Any:
    @tool
    def peek() -> str:
        """Peeks."""
        ran.append(1)
        return "secret"

    return peek


def _denying_lead(helper: Agent) -> Agent:
    return lead_with(helper, permissions=[DenyByName(["peek"], reason="no peeking"), AllowByDefault()])


@pytest.mark.parametrize("helper_permissions", [None, [AllowByDefault()]])
def test_a_third_agent_in_a_subagents_loop_is_under_the_top_runs_denials(helper_permissions: Any) -> None:
    ran: list[int] = []
    third = Agent(
        FakeModel([tool_call("peek")]), tools=[_peek_tool(ran)], permissions=[AllowByDefault()], reporter=None
    )

    @loop(until=never, limit=1)
    def via_third(agent: Agent, state: State) -> None:
        third.think(state)
        third.use_tools(state)

    helper = researcher(loop=via_third, permissions=helper_permissions)
    state = task()
    _denying_lead(helper).run(state)
    child = state.child(first_result(state).child_ids[0])
    entry = first_result(child)
    assert ran == []
    assert (entry.outcome, entry.content) == ("denied", "no peeking")


def test_an_agent_inside_a_run_started_in_a_subagents_loop_is_under_the_top_runs_denials() -> None:
    """Issue 10 item 10: the denials reach every depth, also through a run that is not a subagent's."""
    ran: list[int] = []
    third = Agent(
        FakeModel([tool_call("peek")]), tools=[_peek_tool(ran)], permissions=[AllowByDefault()], reporter=None
    )

    @loop(until=never, limit=1)
    def via_third(agent: Agent, state: State) -> None:
        third.think(state)
        third.use_tools(state)

    other = Agent(FakeModel([]), loop=via_third, permissions=[AllowByDefault()], reporter=None, human=None)
    inner: list[State] = []

    @loop(until=never, limit=1)
    def via_other(agent: Agent, state: State) -> None:
        inner.append(task("Inner"))
        other.run(inner[0])

    state = task()
    _denying_lead(researcher(loop=via_other)).run(state)
    entry = first_result(inner[0])
    assert ran == []
    assert (entry.outcome, entry.content) == ("denied", "no peeking")
    assert inner[0].parent_id is None


def test_add_child_lists_a_child_once_per_call_and_sets_its_depth() -> None:
    state = task()
    a, b, c = State(id="a"), State(id="b"), State(id="c")
    state._add_child("c1", a)
    state._add_child("c1", b)
    state._add_child("c1", a)
    state._add_child("c2", c)
    assert state._children_of("c1") == (a.id, b.id)
    assert state._children_of("c2") == (c.id,)
    assert state._children_of("nope") == ()
    assert state.child(a.id) is a
    assert a._depth == state._depth + 1


def test_a_one_turn_limit_child_without_an_answer_is_done_with_the_note() -> None:
    @tool
    def noop() -> str:
        """Nothing."""
        return "x"

    @loop(until=never, limit=1)
    def one(agent: Agent, state: State) -> None:
        agent.think(state)
        agent.use_tools(state)

    helper = researcher(tool_call("noop"), tools=[noop], loop=one)
    state = task()
    assert lead_with(helper, prompt="Look").run(state) == "outer"
    entry = first_result(state)
    assert entry.content == "(researcher stopped after 1 turn before finishing)"
    assert entry.outcome == "done"
    child = state.child(entry.child_ids[0])
    assert child.stopped == StoppedByLimit(1)
    assert child.answer is None
