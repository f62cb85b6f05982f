"""The `cassette` fixture of the pytest plugin: a run recorded once with the real model (the real Anthropic SDK
against the fake provider server on 127.0.0.1), then replayed with the network blocked; and cassette files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alpineagents import State
from alpineagents._replay.cassette import read_cassette, write_cassette
from alpineagents.testing import FakeModel, Replay, ReplayMismatch
from alpineagents.types import Message
from servers.provider import ProviderServer, ToolUse, anthropic_stream

KEY = "sk-ant-test-0123456789abcdef"

TEST_FILE = """
import os
from alpineagents import Agent, tool
from alpineagents.models import Anthropic

@tool(description=os.environ.get("WEATHER_DESCRIPTION", "The weather in a city."))
def weather(city: str) -> str:
    return f"sunny in {city}"

def test_weather(cassette):
    model = Anthropic("claude-test", max_tokens=1000, base_url=os.environ["FAKE_PROVIDER_URL"])
    agent = cassette.agent(Agent(model=model, tools=[weather], system="Be brief.", reporter=None))
    assert agent.run("Weather in Paris?") == "It is sunny in Paris."
    assert cassette.state is not None and cassette.state.turn == 2
"""

BLOCK_NETWORK = """
import socket

def _refuse(self, address):
    raise OSError(f"network blocked in this test (connect to {address!r})")

def pytest_configure(config):
    socket.socket.connect = _refuse
    socket.socket.connect_ex = _refuse
    socket.create_connection = lambda *args, **kwargs: _refuse(None, args[0] if args else None)
"""


def pytest_in(folder: Path, url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("ANTHROPIC_", "OPENAI_"))}
    environment.update(ANTHROPIC_API_KEY=KEY, FAKE_PROVIDER_URL=url, **env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_weather.py", *args],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def script_run(provider: ProviderServer) -> None:
    provider.script(
        anthropic_stream((), tools=[ToolUse("weather", ['{"city": "Paris"}'], id="toolu_7")]),
        anthropic_stream(("It is sunny ", "in Paris.")),
    )


def test_a_cassette_is_recorded_once_then_replayed_with_the_network_blocked(
    server: ProviderServer,
    tmp_path: Path,
) -> None:
    (tmp_path / "test_weather.py").write_text(TEST_FILE)
    cassette = tmp_path / "cassettes" / "test_weather" / "test_weather.jsonl"

    missing = pytest_in(tmp_path, server.url)
    assert missing.returncode == 1
    assert "no cassette at" in missing.stdout and "pytest --record-runs" in missing.stdout
    assert server.requests == [] and not cassette.exists()

    script_run(server)
    recorded = pytest_in(tmp_path, server.url, "--record-runs")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert len([r for r in server.requests if r.path.endswith("/messages")]) == 2
    text = cassette.read_text(encoding="utf-8")
    assert KEY not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line["seq"] for line in lines] == list(range(len(lines)))
    assert all(list(line)[:5] == ["seq", "kind", "turn", "at", "content"] for line in lines)
    assert [line["kind"] for line in lines].count("model_reply") == 2
    event = next(line for line in lines if line["kind"] == "model_event")["content"]
    assert event["data"]["tools"][0]["description"] == "The weather in a city."
    assert event["data"]["settings"] == {
        "model": "anthropic/claude-test",
        "max_tokens": 1000,
        "temperature": None,
        "tool_choice": "auto",
    }

    (tmp_path / "conftest.py").write_text(BLOCK_NETWORK)
    server.reset()
    replayed = pytest_in(tmp_path, "http://127.0.0.1:9")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert server.requests == []
    assert cassette.read_text(encoding="utf-8") == text  # replaying writes nothing

    changed = pytest_in(tmp_path, "http://127.0.0.1:9", WEATHER_DESCRIPTION="Weather report for a city.")
    assert changed.returncode == 1
    assert "tool 'weather': its description" in changed.stdout
    assert "recorded: 'The weather in a city.'" in changed.stdout
    assert "now:      'Weather report for a city.'" in changed.stdout

    (tmp_path / "conftest.py").unlink()
    script_run(server)
    again = pytest_in(tmp_path, server.url, "--record-runs=all", WEATHER_DESCRIPTION="Weather report for a city.")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Weather report for a city." in cassette.read_text(encoding="utf-8")


def test_a_cassette_round_trips_and_refuses_a_key(tmp_path: Path) -> None:
    state = State(id="talk", messages=[Message.user("hi")])
    from alpineagents import Agent

    Agent(model=FakeModel(["hello"]), reporter=None).run(state)
    path = tmp_path / "c" / "talk.jsonl"
    write_cassette(path, state, environ={})
    loaded = read_cassette(path)
    assert loaded.history == state.history and loaded.id == "talk"
    assert Agent(model=Replay(path), reporter=None).run(State(messages=[Message.user("hi")])) == "hello"

    leaky = State(messages=[Message.user(f"my key is {KEY}")])
    with pytest.raises(ValueError, match=r"would hold the value of \$MY_API_KEY \(line 1\)"):
        write_cassette(tmp_path / "leak.jsonl", leaky, environ={"MY_API_KEY": KEY})
    assert not (tmp_path / "leak.jsonl").exists()

    path.write_text(path.read_text() + "not json\n")
    with pytest.raises(ValueError, match="is damaged: line 6 is not valid JSON"):
        read_cassette(path)


def test_a_cassette_refuses_a_second_run_and_a_replay_that_ends_early(tmp_path: Path) -> None:
    from alpineagents import Agent, loop
    from alpineagents.pytest_plugin import Cassette
    from alpineagents.testing import tool_call

    path = tmp_path / "run.jsonl"
    recording = Cassette(path, recording=True)
    recording.agent(Agent(model=FakeModel([tool_call("nothing"), "done"]), reporter=None)).run("go")
    recording.finish(passed=True)
    assert read_cassette(path).answer == "done"

    def never(state: State) -> bool:
        return False

    @loop(until=never, limit=1)
    def one_turn(agent: Agent, state: State) -> None:
        agent.think(state)

    replaying = Cassette(path, recording=False)
    replaying.agent(Agent(model=FakeModel([]), reporter=None, loop=one_turn)).run("go")
    with pytest.raises(ReplayMismatch, match="the run made 1 requests, and the cassette .* recorded 2"):
        replaying.finish(passed=True)
    replaying.finish(passed=False)  # a failing test is not judged again

    twice = Cassette(tmp_path / "twice.jsonl", recording=True)
    agent = twice.agent(Agent(model=FakeModel(["a", "b"]), reporter=None))
    agent.run("one")
    agent.run("two")
    with pytest.raises(ValueError, match="the test started 2 runs, and a cassette keeps one"):
        twice.finish(passed=True)
    assert not (tmp_path / "twice.jsonl").exists()
