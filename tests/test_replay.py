"""`Replay`: a stored run answers a new run's requests, and any difference in a request fails with a readable diff."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from alpineagents import Agent, FileStore, State, tool
from alpineagents._replay.model import RecordedFailure, recorded_error
from alpineagents._serial import entry_to_dict
from alpineagents.errors import RateLimitError, ToolError
from alpineagents.testing import FakeModel, Recorder, Replay, ReplayMismatch, tool_call
from alpineagents.types import Message
from helpers.scriptload import load_script

SIDE_EFFECTS: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    SIDE_EFFECTS.append(f"add {a} {b}")
    return a + b


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    SIDE_EFFECTS.append(f"lookup {city}")
    return f"sunny in {city}"


def replies() -> list[Any]:
    return [tool_call("add", a=1, b=2), [tool_call("lookup", city="Paris")], "It is 3 and sunny."]


def agent_with(model: Any, **changes: Any) -> Agent:
    settings: dict[str, Any] = {"tools": [add, lookup], "system": "Answer briefly.", "reporter": None}
    settings.update(changes)
    return Agent(model=model, **settings)


def task() -> State:
    return State(messages=[Message.user("What is 1+2, and the weather in Paris?")])


@pytest.fixture
def recorded() -> State:
    state = task()
    agent_with(Recorder(FakeModel(replies()))).run(state)
    SIDE_EFFECTS.clear()
    return state


def without_times(state: State) -> list[dict[str, Any]]:
    """The saved form of every entry, without its time and an error's stack (a replay raises from elsewhere)."""
    dicts = [entry_to_dict(entry, seq) for seq, entry in enumerate(state.history)]
    for entry in dicts:
        entry.pop("at")
        entry.pop("traceback", None)
    return dicts


def test_a_recorded_run_replays_green_and_repeats_its_history(recorded: State) -> None:
    replay = Replay(recorded)
    state = task()
    answer = agent_with(replay).run(state)
    assert answer == "It is 3 and sunny."
    assert replay.remaining == 0
    assert SIDE_EFFECTS == ["add 1 2", "lookup Paris"]  # the tools ran for real
    assert without_times(state) == without_times(recorded)
    assert [event.content.kind for event in state.history if event.kind == "model_event"] == ["recorded_request"] * 3


def test_replay_from_a_store_and_an_id(recorded: State, tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.save(recorded)
    replay = Replay(store, recorded.id, model=FakeModel([]))
    assert agent_with(replay).run(task()) == "It is 3 and sunny."
    with pytest.raises(TypeError, match="needs the id"):
        Replay(store)


def test_a_changed_tool_description_fails_naming_the_tool_and_both_texts(recorded: State) -> None:
    changed = add.copy(description="Add two integers.")
    with pytest.raises(ReplayMismatch) as caught:
        agent_with(Replay(recorded), tools=[changed, lookup]).run(task())
    text = str(caught.value)
    assert "request 1 (turn 1, history entry 2) differs from the recorded one in tool 'add': its description" in text
    assert "recorded: 'Add two numbers.'" in text
    assert "now:      'Add two integers.'" in text
    assert SIDE_EFFECTS == []  # it failed before any tool ran


def test_ignoring_tool_descriptions_lets_that_change_pass(recorded: State) -> None:
    changed = add.copy(description="Add two integers.")
    replay = Replay(recorded, ignore={"tool_descriptions"})
    assert agent_with(replay, tools=[changed, lookup]).run(task()) == "It is 3 and sunny."
    with pytest.raises(ValueError, match="'descriptions', which it cannot ignore"):
        Replay(recorded, ignore={"descriptions"})


def test_a_changed_system_prompt_fails_comparing_the_hashes(recorded: State) -> None:
    with pytest.raises(ReplayMismatch) as caught:
        agent_with(Replay(recorded), system="Answer at length.").run(task())
    text = str(caught.value)
    assert "in the system prompt. The stored run keeps only the SHA-256 of its system prompt" in text
    assert "this one starts 'Answer at length.'" in text
    assert "recorded: sha256 " in text and "now:      sha256 " in text


def test_a_changed_tool_result_fails_naming_the_message_and_the_call(recorded: State) -> None:
    @tool(name="add")
    def wrong_add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b + 1

    call_id = recorded.history[4].content.tool_calls[0].id  # type: ignore[union-attr]
    with pytest.raises(ReplayMismatch) as caught:
        agent_with(Replay(recorded), tools=[wrong_add, lookup]).run(task())
    text = str(caught.value)
    assert "request 2 (turn 2, history entry 6) differs from the recorded one in message 3 (user), block 1 " in text
    assert f"(tool result of add ({call_id})): its content\n  recorded: '3'\n  now:      '4'" in text


def test_recorded_tool_results_are_served_without_running_the_tools(recorded: State) -> None:
    replay = Replay(recorded, tools="recorded")
    state = task()
    assert replay.agent(agent_with(FakeModel([]))).run(state) == "It is 3 and sunny."
    assert SIDE_EFFECTS == []
    assert without_times(state) == without_times(recorded)


def test_another_model_setting_fails_naming_the_setting(recorded: State) -> None:
    hot = FakeModel([])
    hot.temperature = 0.9
    with pytest.raises(ReplayMismatch, match=r"the setting temperature\n  recorded: null\n  now:      0.9"):
        agent_with(Replay(recorded, model=hot)).run(task())
    other = FakeModel([], name="bigger")
    with pytest.raises(ReplayMismatch, match="the setting model\n  recorded: 'fake/fake'\n  now:      'fake/bigger'"):
        agent_with(Replay(recorded, model=other)).run(task())


def test_a_run_recorded_without_a_recorder_checks_what_its_history_keeps() -> None:
    state = task()
    agent_with(FakeModel(replies())).run(state)
    assert agent_with(Replay(state)).run(task()) == "It is 3 and sunny."
    with pytest.raises(
        ReplayMismatch, match=r'the names of the tools\n  recorded: \["add", "lookup"\]\n  now:      \["add"\]'
    ):
        agent_with(Replay(state), tools=[add]).run(task())
    # a description is not kept without a Recorder, so a changed one cannot be seen
    assert agent_with(Replay(state), tools=[add.copy(description="Sum."), lookup]).run(task()) == "It is 3 and sunny."


def test_another_user_message_and_a_run_longer_than_the_recording_fail(recorded: State) -> None:
    with pytest.raises(ReplayMismatch) as caught:
        agent_with(Replay(recorded)).run(State(messages=[Message.user("What is 2+2?")]))
    assert "message 1 (user), block 1 (text): its text" in str(caught.value)
    replay = Replay(recorded)
    state = task()
    agent_with(replay).run(state)
    state.add_message(Message.user("And tomorrow?"))
    with pytest.raises(ReplayMismatch, match="request 4 has no recorded counterpart: the stored run made 3 requests"):
        agent_with(replay).run(state)


def test_a_compaction_and_an_ask_replay_from_their_recorded_summary_and_answer() -> None:
    agent = agent_with(Recorder(FakeModel(["Hi.", "We said hi.", '{"mood": "good"}'])))
    state = task()
    agent.run(state)
    agent.compact(state)
    assert agent.ask(state, "How is the mood?", returns=dict) == {"mood": "good"}
    replay = Replay(state)
    again = task()
    replayed = agent_with(replay)
    replayed.run(again)
    replayed.compact(again)
    assert replayed.ask(again, "How is the mood?", returns=dict) == {"mood": "good"}
    assert again.messages == state.messages and replay.remaining == 0


def test_replay_under_arun(recorded: State) -> None:
    assert asyncio.run(agent_with(Replay(recorded)).arun(task())) == "It is 3 and sunny."


def test_the_replay_benchmark_runs_at_a_small_size(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_script("benchmarks", "replay")
    bench.main(sizes=(3, 6), rounds=1)
    out = capsys.readouterr().out
    assert out.count("µs/turn at 6") == 4 and "replayed run" in out


def test_recorded_errors_replay_as_they_happened() -> None:
    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise ToolError(f"404 for {url}")

    state = task()
    agent = agent_with(Recorder(FakeModel([tool_call("fetch", url="x.dev"), RateLimitError("slow down")])))
    agent = agent.copy(tools=[fetch])
    with pytest.raises(RateLimitError):
        agent.run(state)
    result = next(entry for entry in state.history if entry.kind == "tool_result")
    assert result.outcome == "error" and result.content == "404 for x.dev"  # type: ignore[union-attr]

    replay = Replay(state, tools="recorded")
    again = task()
    with pytest.raises(RateLimitError, match="slow down"):
        replay.agent(agent.copy(model=FakeModel([]))).run(again)
    assert without_times(again) == without_times(state)
    assert isinstance(recorded_error("KeyError: 'x'"), RecordedFailure)
    assert type(recorded_error("KeyError: 'x'")).__name__ == "KeyError"
    assert str(recorded_error("(process stopped while waiting)")) == "(process stopped while waiting)"
    assert type(recorded_error("OSError")).__name__ == "OSError"  # an aborted call keeps only the type
