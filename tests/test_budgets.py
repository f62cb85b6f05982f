"""Budgets: one limit for a run and all of its subagents; a step that would pass it waits for a raise, across
processes and stores, within the saved format 5."""

from __future__ import annotations

import asyncio
import gc
import json
import math
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from alpineagents import Agent, Budget, State, tool
from alpineagents._history.decode import stopped_from_dict
from alpineagents._serial import stopped_to_dict
from alpineagents.events import ApprovalNeeded, BudgetNeeded, BudgetRaised, RunEnded
from alpineagents.store import FileStore, SQLiteStore
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import FunctionTool
from alpineagents.types import BudgetStatus, Message, StoppedByLimit, StoppedForBudget
from helpers.budget_child import PRICE, agents, note, requests_sent
from helpers.cli_agents import cli, viewer

CHILD = Path(__file__).parent / "helpers" / "budget_child.py"


def _task() -> State:
    return State(messages=[Message.user("Look at both parts")])


def _reference() -> tuple[float, int, int]:
    """What the run costs without a budget: dollars, model requests, tokens."""
    agent = agents(None, None)
    state = _task()
    assert agent.run(state) == "Both parts done."
    usage = state.usage
    assert usage.cost is not None
    tokens = usage.input_tokens + usage.output_tokens
    return usage.cost, usage.requests, tokens


def test_a_parent_and_two_subagents_share_one_budget_and_the_request_that_would_pass_it_waits() -> None:
    cost, requests, _ = _reference()
    assert requests == 8  # the parent twice, each subagent three times
    limit = cost * 0.5
    agent = agents(None, Budget(usd=limit))
    state = _task()
    assert agent.run(state) is None
    assert type(state.stopped) is StoppedForBudget and state.stopped.limit == "usd"
    spent = state.budget
    assert isinstance(spent, BudgetStatus)
    assert spent.spent.usd is not None and spent.spent.usd <= limit  # recorded spend within the bound
    waits = state.awaiting_budget
    assert waits and all(w.path[0] == state.id and len(w.path) == 2 for w in waits)  # a subagent's request waits
    for wait in waits:
        assert wait.needed > wait.left  # it would have passed the budget
        assert wait.budget_of == state.id  # the parent's budget, shared
        assert "Raise the budget by at least $" in wait.question
    sent_before = requests_sent(agent)
    assert sent_before < requests
    # one raise, recorded in the State the person holds, and the run goes on where it was
    raised = state.raise_budget(usd=cost, by="ana", note="worth it")
    assert raised.amounts == {"usd": cost} and raised.by == "ana" and raised.budget_of == state.id
    assert agent.run(state) == "Both parts done."
    assert state.stopped is not None and type(state.stopped) is not StoppedForBudget
    assert requests_sent(agent) == requests  # no request was sent twice, none was lost
    assert state.usage.requests == requests
    assert state.usage.cost == pytest.approx(cost)
    status = state.budget
    assert status is not None and status.budget.usd == pytest.approx(limit + cost)
    assert status.left["usd"] == pytest.approx(limit)


def _child(step: str, kind: str, where: Path, budget: float, *extra: str) -> dict[str, Any]:
    env = {**os.environ, "BUDGET_USD": repr(budget)}
    done = subprocess.run(
        [sys.executable, str(CHILD), step, kind, str(where), *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_after_a_restart_raising_the_budget_continues_the_run(tmp_path: Path, kind: str) -> None:
    cost, requests, _ = _reference()
    limit = cost * 0.6
    started = _child("start", kind, tmp_path, limit)
    assert started["stopped"].startswith("waiting for a budget raise")
    assert started["waits"] and all(w["limit"] == "usd" and w["path"][0] == "job" for w in started["waits"])
    assert 0 < started["spent"] <= limit
    raised = _child("raise", kind, tmp_path, limit, repr(cost))
    assert raised["amounts"] == {"usd": cost} and raised["budget_of"] == "job"
    assert raised["spent"] == pytest.approx(started["spent"])  # read back whole from the store, subagents included
    resumed = _child("resume", kind, tmp_path, limit)
    assert resumed["answer"] == "Both parts done."
    # the work of the first process is kept: together the two runs sent each request once
    assert started["sent"] + resumed["sent"] == requests
    assert resumed["requests"] == requests  # the subagents' usage from before the restart is counted too
    assert resumed["cost"] == pytest.approx(cost)
    assert resumed["cost"] <= resumed["limit"] and resumed["limit"] == pytest.approx(limit + cost)


def test_a_tokens_budget_holds_without_prices() -> None:
    agent = agents(None, None, price=None)
    state = _task()
    agent.run(state)
    tokens = state.usage.input_tokens + state.usage.output_tokens
    assert state.usage.cost is None
    limit = tokens // 2
    agent = agents(None, Budget(tokens=limit), price=None)
    state = _task()
    agent.run(state)
    assert type(state.stopped) is StoppedForBudget and state.stopped.limit == "tokens"
    status = state.budget
    assert status is not None and status.spent.tokens <= limit and status.spent.usd is None
    state.raise_budget(tokens=tokens)
    assert agent.run(state) == "Both parts done."
    assert state.usage.input_tokens + state.usage.output_tokens == tokens


def test_a_requests_budget_stops_before_the_request_and_keeps_the_work() -> None:
    model = FakeModel([tool_call("note", text="one"), tool_call("note", text="two"), "Done."])
    agent = Agent(model, tools=[note], reporter=None, budget=Budget(requests=2))
    state = _task()
    agent.run(state)
    assert state.stopped == StoppedForBudget("requests", 1.0, 0.0, state.id)
    assert len(model.requests) == 2 and state.usage.requests == 2
    assert [e.kind for e in state.history][-2:] == ["human", "stop"]
    again = len(state.history)
    agent.run(state)  # running again without a raise: it still waits, and records nothing new but the run
    assert len(model.requests) == 2 and type(state.stopped) is StoppedForBudget
    assert [e.kind for e in state.history[again:]].count("model_request") == 0
    state.raise_budget(requests=1)
    assert agent.run(state) == "Done."
    assert len(model.requests) == 3


def _sender(ran: list[str]) -> FunctionTool:
    """A `send(to)` tool that keeps in `ran` whom it sent to."""

    @tool
    def send(to: str) -> str:
        """Send it.

        Args:
            to: Who gets it.
        """
        ran.append(to)
        return "sent"

    return send


def test_a_tool_calls_budget_holds_a_turn_before_any_of_its_calls_runs() -> None:
    ran: list[str] = []
    send = _sender(ran)

    model = FakeModel([[tool_call("send", to="a")], [tool_call("send", to="b"), tool_call("send", to="c")], "Sent."])
    agent = Agent(model, tools=[send], reporter=None, budget=Budget(tool_calls=2))
    state = _task()
    agent.run(state)
    assert ran == ["a"]  # the second turn's two calls would pass 2: neither ran
    assert state.stopped == StoppedForBudget("tool_calls", 2.0, 1.0, state.id)
    assert len(state.pending_calls) == 2
    (wait,) = state.awaiting_budget
    assert wait.short_by == 1
    state.raise_budget(tool_calls=1)
    assert agent.run(state) == "Sent."
    assert sorted(ran) == ["a", "b", "c"]
    status = state.budget
    assert status is not None and status.spent.tool_calls == 3 and status.left["tool_calls"] == 0


def test_a_tool_calls_wait_survives_a_reload(tmp_path: Path) -> None:
    ran: list[str] = []
    send = _sender(ran)

    store = SQLiteStore(tmp_path / "s.db")
    script = [[tool_call("send", to="a"), tool_call("send", to="b")], "Sent."]
    agent = Agent(FakeModel(script), tools=[send], reporter=None, store=store, budget=Budget(tool_calls=1))
    state = _task()
    agent.run(state)
    assert ran == [] and type(state.stopped) is StoppedForBudget
    loaded = store.load(state.id)
    assert loaded.stopped == state.stopped and len(loaded.pending_calls) == 2  # not closed as unknown
    loaded.raise_budget(tool_calls=1)
    store.save(loaded)
    again = Agent(FakeModel(["Sent."]), tools=[send], reporter=None, store=store, budget=Budget(tool_calls=1))
    assert again.run(store.load(state.id)) == "Sent."
    assert sorted(ran) == ["a", "b"]


def test_arun_waits_and_resumes_the_same_way() -> None:
    model = FakeModel(["First.", "Second."])
    agent = Agent(model, reporter=None, budget=Budget(requests=1))

    async def main() -> None:
        state = _task()
        await agent.arun(state)
        state.add_message(Message.user("And again"))
        await agent.arun(state)
        assert type(state.stopped) is StoppedForBudget and len(model.requests) == 1
        state.raise_budget(requests=1)
        assert await agent.arun(state) == "Second."

    asyncio.run(main())


def test_the_budget_stop_is_saved_as_a_limit_stop_that_older_readers_read(tmp_path: Path) -> None:
    stopped = StoppedForBudget("usd", 0.25, 0.1, "job")
    saved = stopped_to_dict(stopped)
    assert saved is not None and saved["kind"] == "limit" and saved["turns"] == 0
    assert stopped_from_dict(saved) == stopped
    older = {key: value for key, value in saved.items() if key != "budget"}  # what a reader without budgets keeps
    assert stopped_from_dict(older) == StoppedByLimit(0)
    agent = Agent(FakeModel(["Hi."]), reporter=None, store=FileStore(tmp_path), budget=Budget(requests=1))
    state = _task()
    agent.run(state)
    state.add_message(Message.user("Again"))
    agent.run(state)
    loaded = FileStore(tmp_path).load(state.id)
    assert loaded.history == state.history and loaded.stopped == state.stopped
    assert loaded.awaiting_budget == state.awaiting_budget


def test_copy_changes_the_budget() -> None:
    agent = Agent(FakeModel([]), reporter=None)
    assert agent.budget is None
    limited = agent.copy(budget=Budget(requests=3))
    assert limited.budget == Budget(requests=3)
    assert limited.copy(budget=None).budget is None
    assert limited.copy(system="x").budget == Budget(requests=3)


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({}, ValueError, "Budget() got no limit"),
        ({"usd": -1.0}, ValueError, "usd=-1.0 is not allowed"),
        ({"usd": math.nan}, ValueError, "is not allowed"),
        ({"tokens": 0}, ValueError, "tokens=0 is not allowed"),
        ({"tokens": 1.5}, TypeError, "tokens= takes a whole number"),
        ({"requests": True}, TypeError, "requests= takes a whole number"),
        ({"usd": "1"}, TypeError, "usd= takes a number of dollars"),
    ],
)
def test_a_budget_with_bad_values_is_refused_with_a_fix(kwargs: dict[str, Any], error: type, text: str) -> None:
    with pytest.raises(error) as info:
        Budget(**kwargs)
    assert text in str(info.value) and "Fix:" in str(info.value)


def test_misuse_of_budgets_raises_clear_errors() -> None:
    with pytest.raises(TypeError, match="budget=5 is not a Budget"):
        Agent(FakeModel([]), budget=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="has no price"):
        Agent(FakeModel([]), budget=Budget(usd=1.0))
    state = _task()
    with pytest.raises(ValueError, match="is not waiting for a bigger budget"):
        state.raise_budget(usd=1.0)
    agent = Agent(FakeModel(["One."]), reporter=None, budget=Budget(requests=1))
    agent.run(state)
    state.add_message(Message.user("Two"))
    agent.run(state)
    with pytest.raises(ValueError, match="raise_budget\\(\\): usd=0 is not allowed"):
        state.raise_budget(usd=0)
    with pytest.raises(ValueError, match="raise_budget\\(\\) got no limit"):
        state.raise_budget()
    with pytest.raises(ValueError, match="waits on its requests limit"):
        state.raise_budget(tokens=100)
    with pytest.raises(TypeError, match="by takes a string"):
        state.raise_budget(requests=1, by=3)  # type: ignore[arg-type]
    assert [e.kind for e in state.history][-2:] == ["human", "stop"]  # a refused raise records nothing


def test_a_subagent_priced_without_prices_under_a_dollar_budget_is_refused_with_a_fix() -> None:
    helper = Agent(FakeModel(["x"]), name="helper", description="Helps.")
    model = FakeModel([tool_call("helper", prompt="go"), "Done."], price=PRICE)
    model.max_tokens = 100
    agent = Agent(
        model,
        tools=[helper],
        reporter=None,
        budget=Budget(usd=1.0),
    )
    state = _task()
    agent.run(state)
    results = [e for e in state.history if e.kind == "tool_result"]
    assert results and "has no price" in str(results[0].content)


def test_without_max_tokens_a_request_reserves_what_the_context_window_leaves() -> None:
    model = FakeModel(["Hi."], price=PRICE, context_window=10_000)
    agent = Agent(model, reporter=None, budget=Budget(usd=0.05))  # 10,000 output tokens cost $0.08
    state = _task()
    agent.run(state)
    assert type(state.stopped) is StoppedForBudget and model.requests == []
    (wait,) = state.awaiting_budget
    assert wait.needed == pytest.approx((10_000 - 10) * 8 / 1e6 + 10 * 2 / 1e6, rel=0.01)


def test_the_stream_tells_a_budget_wait_and_a_raise() -> None:
    agent = Agent(FakeModel(["One.", "Two."]), reporter=None, budget=Budget(requests=1))
    state = _task()
    agent.run(state)
    state.add_message(Message.user("Two"))
    with agent.stream(state) as events:
        found = [event for event in events if isinstance(event, BudgetNeeded)]
    assert len(found) == 1 and found[0].wait.limit == "requests" and found[0].wait.needed == 1
    state.raise_budget(requests=1, by="ana")
    with agent.stream(state, after=len(state.history) - 2) as events:
        raised = [event for event in events if isinstance(event, BudgetRaised)]
    assert len(raised) == 1 and raised[0].raised.by == "ana" and raised[0].raised.amounts == {"requests": 1}


def test_show_and_the_viewer_say_what_is_spent_and_what_is_left(tmp_path: Path) -> None:
    store = str(tmp_path / "runs")
    model = FakeModel(["One.", "Two."])
    model.max_tokens = 50
    agent = Agent(model, reporter=None, store=FileStore(store), budget=Budget(requests=1, tokens=100_000))
    state = State(id="b1", messages=[Message.user("Say one")])
    agent.run(state)
    state.add_message(Message.user("Say two"))
    agent.run(state)
    assert str(state.budget).endswith("; 1 request of 1 request (0 requests left)")
    shown = cli("show", "b1", "--store", store, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[-1] == f"budget: {state.budget}"
    assert "tokens left" in lines[-1] and "waiting for a budget raise" in shown.stdout
    with viewer(store, tmp_path) as address:
        with urllib.request.urlopen(address + "runs/b1", timeout=30) as response:
            page = response.read().decode("utf-8")
    assert "1 request of 1 request (0 requests left)" in page
    assert "waits for a bigger budget: Raise the budget by at least 1 request?" in page  # the timeline's mark
    del state  # this process lets go of the State (its writer lock), so that another one may write it
    gc.collect()
    raised = cli("raise-budget", "b1", "--requests", "1", "--by", "ana", "--store", store, cwd=tmp_path)
    assert raised.returncode == 0, raised.stderr
    loaded = FileStore(store).load("b1")
    assert loaded.budget is not None and loaded.budget.budget.requests == 2
    assert agent.run(loaded) == "Two."
    del loaded
    gc.collect()
    again = cli("raise-budget", "b1", "--requests", "1", "--store", store, cwd=tmp_path)
    assert again.returncode == 1 and "is not waiting for a bigger budget" in again.stderr


def test_a_subagents_budget_wait_comes_through_the_top_stream_tagged_and_is_no_approval() -> None:
    cost, _, _ = _reference()
    agent = agents(None, Budget(usd=cost * 0.5))
    state = _task()
    with agent.stream(state) as stream:
        events = list(stream)
    needed = [event for event in events if isinstance(event, BudgetNeeded)]
    assert needed and all(event.path[0] == state.id and len(event.path) == 2 for event in needed)
    assert all(event.wait.path == event.path for event in needed)
    assert not [event for event in events if isinstance(event, ApprovalNeeded)]
    assert type(events[-1]) is RunEnded and type(events[-1].stopped) is StoppedForBudget


# --- every model request of a run is checked: compactions and asks too ---------------------------------------------

_LONG = "word " * 1_200  # about 2,000 tokens: a context fuller than 60% of the small window below


def _full_task() -> State:
    return State(messages=[Message.user("Summarize the notes"), Message.assistant("Reading."), Message.user(_LONG)])


def _compacting(budget: Budget | None) -> tuple[Agent, FakeModel]:
    model = FakeModel(["The notes say little.", "Done."], context_window=3_000)
    model.max_tokens = 200
    return Agent(model, reporter=None, budget=budget), model


def _needs(agent: Agent, state: State) -> tuple[int, int]:
    """The token estimates of the compaction the loop would send, and of the think after it (the same context)."""
    from alpineagents._turn.budget import request_needs
    from alpineagents.models.base import Model
    from alpineagents.types import Request

    request = Request(agent.system, state.messages, agent._specs, tool_choice="none")
    compaction = request_needs(agent.model, Model._summary_request(request, None)).tokens
    think = request_needs(agent.model, Request(agent.system, state.messages, agent._specs)).tokens
    return compaction, think


def _compactions(state: State) -> list[Any]:
    return [e for e in state.history if e.kind == "context_change" and e.content.kind == "compact"]


def _check_compaction_waits(agent: Agent, model: FakeModel, state: State, limit: int) -> int:
    """After a run with a tokens budget `limit` that the compaction would pass: nothing was sent, the messages are
    unchanged, the run waits on the compaction, the spend is within the bound. Returns how much it is short by."""
    assert model.requests == []  # neither the compaction nor the think after it was sent
    assert type(state.stopped) is StoppedForBudget and state.stopped.limit == "tokens"
    assert _compactions(state) == [] and state.messages[-1].text == _LONG
    (wait,) = state.awaiting_budget
    assert wait.needed > wait.left == limit and wait.path == (state.id,)
    status = state.budget
    assert status is not None and status.spent.tokens <= limit
    return math.ceil(wait.short_by)


def _check_compacted(model: FakeModel, state: State, limit: int) -> None:
    assert len(model.requests) == 2  # the summary request, then the think on the compacted context
    assert model.requests[0].tool_choice == "none" and len(model.requests[1].messages) == 2
    changes = _compactions(state)
    assert len(changes) == 1 and changes[0].content.summary == "The notes say little."
    status = state.budget
    assert status is not None and status.spent.tokens <= status.budget.tokens == limit  # within the raised bound
    assert state.stopped is not None and type(state.stopped) is not StoppedForBudget


def test_a_compaction_that_would_pass_the_budget_waits_and_a_raise_lets_it_happen() -> None:
    agent, model = _compacting(None)
    state = _full_task()
    compaction, think = _needs(agent, state)
    assert think < compaction  # a think would fit where the compaction does not: the run must not go on without it
    limit = (think + compaction) // 2
    agent = agent.copy(budget=Budget(tokens=limit))
    assert agent.run(state) is None
    short = _check_compaction_waits(agent, model, state, limit)
    state.raise_budget(tokens=short + 2_000)  # room for the summary request and the think after it
    assert agent.run(state) == "Done."
    _check_compacted(model, state, limit + short + 2_000)


def test_arun_waits_before_a_compaction_the_same_way(tmp_path: Path) -> None:
    agent, model = _compacting(None)
    state = _full_task()
    compaction, think = _needs(agent, state)
    limit = (think + compaction) // 2
    agent = agent.copy(budget=Budget(tokens=limit), store=FileStore(tmp_path))

    async def main() -> None:
        assert await agent.arun(state) is None
        short = _check_compaction_waits(agent, model, state, limit)
        loaded = FileStore(tmp_path).load(state.id)  # the wait is saved: another process raises and resumes
        assert loaded.awaiting_budget == state.awaiting_budget
        loaded.raise_budget(tokens=short + 2_000)
        assert await agent.arun(loaded) == "Done."
        _check_compacted(model, loaded, limit + short + 2_000)

    asyncio.run(main())


def test_an_ask_in_a_run_that_would_pass_the_budget_is_not_sent_and_says_so() -> None:
    from alpineagents import loop

    @loop(until=[], limit=3)
    def think_and_ask(agent: Agent, state: State) -> None:
        agent.think(state)
        assert agent.ask(state, "Is it done?") == "Yes."

    model = FakeModel(["Thought.", "Yes."])
    agent = Agent(model, reporter=None, budget=Budget(requests=2), loop=think_and_ask)
    state = _task()
    with pytest.raises(ValueError, match=r"ask\(\) was not sent.*An answer cannot wait for a raise") as caught:
        agent.run(state)
    assert "agent.copy(budget=Budget(requests=" in str(caught.value)
    assert len(model.requests) == 2  # one think and one ask fitted; the second think waited, no ask went out
    asks = [e for e in state.history if e.kind == "ask"]
    assert len(asks) == 1 and state.usage.requests == 2


def test_another_agents_ask_on_the_runs_state_is_held_to_the_runs_budget() -> None:
    from alpineagents import loop

    reviewer = Agent(FakeModel(["Fine."]), reporter=None)  # no budget of its own: it spends the run's State's

    @loop(until=[], limit=3)
    def think_and_review(agent: Agent, state: State) -> None:
        agent.think(state)
        assert reviewer.ask(state, "Is it fine?") == "Fine."

    model = FakeModel(["Thought.", "More."])
    agent = Agent(model, reporter=None, budget=Budget(requests=3), loop=think_and_review)
    state = _task()
    with pytest.raises(ValueError, match=r"ask\(\) was not sent") as caught:
        agent.run(state)
    assert f"State {state.id!r}" in str(caught.value)
    assert len(model.requests) == 2 and len(reviewer.model.requests) == 1  # type: ignore[attr-defined]
    assert state.usage.requests == 3  # within the budget: the second review was not sent
