"""An Agent with a store: the save points of a run, and the run-start checks that involve stores and permissions."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from alpineagents.agent import Agent
from alpineagents.errors import NoHumanError
from alpineagents.permissions import DecideByHuman, DecidePermission
from alpineagents.reporter import Reporter
from alpineagents.state import State
from alpineagents.store import Record, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from conftest import task


class Memory(Store):
    """A store in memory that records every write and can be told to fail."""

    def __init__(self) -> None:
        self.records: dict[str, list[dict[str, Any]]] = {}
        self.writes: list[int] = []
        self.fail_at: set[int] = set()
        self.error: Exception = OSError("disk full")

    def write(self, state_id: str, entries: Sequence[dict[str, Any]], info: Any, *, create: bool = False) -> None:
        number = len(self.writes) + 1
        self.writes.append(len(entries))
        if number in self.fail_at:
            raise self.error
        self.records.setdefault(state_id, []).extend(entries)

    def read(self, state_id: str) -> Record | None:
        return None


class AsyncOnly(Store):
    async def awrite(self, state_id: str, entries: Any, info: Any, *, create: bool = False) -> None:
        return None

    async def aread(self, state_id: str) -> Record | None:
        return None


@tool
def helper() -> str:
    """Helps."""
    return "ok"


class Events(Reporter):
    def __init__(self) -> None:
        self.events: list[str] = []

    def on_run_start(self, state: State) -> None:
        self.events.append("start")

    def on_run_end(self, state: State, error: Any) -> None:
        self.events.append("end")


def saved_kinds(store: Memory, state: State) -> list[str]:
    return [entry["kind"] for entry in store.records.get(state.id, [])]


def test_save_points_of_a_run() -> None:
    store = Memory()
    state = task()
    Agent(FakeModel([tool_call("helper"), "done"]), tools=[helper], store=store, reporter=None).run(state)
    assert saved_kinds(store, state) == [entry.kind for entry in state.history]
    # run_start; think x2 (request, reply); use_tools (batch + end); after the loop: some writes hold nothing new.
    assert store.writes[0] == 2  # import + run_start, a create write
    assert sum(store.writes) == len(state.history)


def test_first_save_failure_means_the_run_never_started() -> None:
    store = Memory()
    store.fail_at = {1}
    events = Events()
    fake = FakeModel(["never"])
    state = task()
    with pytest.raises(OSError, match="disk full"):
        Agent(fake, store=store, reporter=events).run(state)
    assert events.events == [] and fake.requests == []
    assert [e.kind for e in state.history] == ["context_change", "run_start"]
    assert not state._running


def test_failing_final_save_is_recorded_as_the_run_error() -> None:
    store = Memory()
    events = Events()
    state = task()
    agent = Agent(FakeModel(["done"]), store=store, reporter=events)
    # writes: 1 run_start, 2 after request, 3 after reply, 4 after the loop (stop entry)
    store.fail_at = {4}
    with pytest.raises(OSError):
        agent.run(state)
    kinds = [e.kind for e in state.history]
    assert kinds[-3:] == ["stop", "error", "stop"] and state.stopped is None
    assert events.events == ["start", "end"]


def test_save_failing_during_an_exception_becomes_a_note() -> None:
    store = Memory()
    store.fail_at = {3, 4, 5}  # 1: run_start, 2: after the request; then the saves after the model error
    state = task()
    with pytest.raises(RuntimeError, match="model down") as info:
        Agent(FakeModel([RuntimeError("model down")]), store=store, reporter=None).run(state)
    assert info.value.__notes__ == ["saving the state also failed: OSError: disk full"]


def test_same_failure_adds_no_note() -> None:
    store = Memory()
    store.error = RuntimeError("model down")
    state = task()
    store.fail_at = {3, 4, 5}
    with pytest.raises(RuntimeError) as info:
        Agent(FakeModel([RuntimeError("model down")]), store=store, reporter=None).run(state)
    assert not getattr(info.value, "__notes__", [])


def test_think_and_compact_save_with_the_agents_store() -> None:
    store = Memory()
    state = task()
    agent = Agent(FakeModel(["reply", "summary"]), store=store, reporter=None)
    agent.think(state)
    assert saved_kinds(store, state) == ["context_change", "model_request", "model_reply"]
    agent.compact(state)
    assert saved_kinds(store, state)[-1] == "context_change"


def test_async_only_store_refused_by_run_but_used_by_arun() -> None:
    agent = Agent(FakeModel(["done"]), store=AsyncOnly(), reporter=None)
    state = task()
    with pytest.raises(TypeError, match=r"AsyncOnly works only asynchronously \(it implements awrite, not write\)"):
        agent.run(state)
    assert [e.kind for e in state.history] == ["context_change"]
    assert asyncio.run(agent.arun(state)) == "done"


def test_permission_pre_checks_before_anything_is_recorded() -> None:
    state = task()
    fake = FakeModel(["x"])
    with pytest.raises(NoHumanError, match="asks the Agent's human, and this Agent has human=None"):
        Agent(fake, permissions=[DecideByHuman()], human=None, reporter=None).run(state)
    with pytest.raises(NoHumanError):
        asyncio.run(Agent(fake, permissions=[DecideByHuman()], human=None, reporter=None).arun(state))

    class Later(DecidePermission):
        async def acheck(self, state: Any, call: Any, tool: Any) -> Any:
            return None

    with pytest.raises(TypeError, match=r"(?s)checks calls only asynchronously .*arun\(\)"):
        Agent(fake, permissions=[Later()], reporter=None).run(state)
    assert [e.kind for e in state.history] == ["context_change"] and fake.requests == []


def test_on_run_start_raising_still_gets_on_run_end() -> None:
    class Bad(Events):
        def on_run_start(self, state: State) -> None:
            super().on_run_start(state)
            raise RuntimeError("reporter bug")

    events = Bad()
    state = task()
    with pytest.raises(RuntimeError, match="reporter bug"):
        Agent(FakeModel([]), reporter=events).run(state)
    assert events.events == ["start", "end"]
    assert [e.kind for e in state.history][-1] == "error"


def test_start_run_hook() -> None:
    agent = Agent(FakeModel([]), reporter=None)
    state = agent._start_run("A task", "run")
    assert state._running and [e.kind for e in state.history] == ["context_change", "run_start"]
    with pytest.raises(ValueError, match="already being run"):
        agent._start_run(state, "run")
    state._end_run()
    assert agent._active_context(state) is None
    info = agent._agent_info_now()
    assert info is agent._agent_info_now() and info.model == "fake/fake"
