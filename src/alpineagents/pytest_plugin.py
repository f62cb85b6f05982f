"""The pytest plugin of alpineagents (registered through the package's `pytest11` entry point): the `cassette`
fixture, which records a run the first time and replays it afterwards with no network.

    def test_weather(cassette):
        agent = cassette.agent(weather_agent)  # replays tests/cassettes/test_weather/test_weather.jsonl
        assert "sunny" in agent.run("Weather in Paris?")

A cassette is `cassettes/<test file>/<test name>.jsonl` next to the test file: the run's history in the store's own
JSON lines. `pytest --record-runs` records the cassettes that are missing with the Agent's real model (through a
`Recorder`), `--record-runs=all` records them all again; without the flag a missing cassette fails the test and
says how to record it. A cassette is written only when the test passed, and never with a key in it. On replay, each
request is checked against the recorded one (`Replay`), and a run that makes fewer requests than the cassette fails
too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from alpineagents._replay.cassette import CassetteStore, write_cassette
from alpineagents._replay.model import Recorder, Replay, ReplayMismatch
from alpineagents.state import State

if TYPE_CHECKING:
    from alpineagents.agent import Agent

__all__ = ["Cassette", "cassette"]

_PASSED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--record-runs[=new|all]`."""
    group = parser.getgroup("alpineagents")
    group.addoption(
        "--record-runs",
        nargs="?",
        const="new",
        default="none",
        choices=("none", "new", "all"),
        help="Record the cassettes of the cassette fixture with the real model: the missing ones (new, the default "
        "when the flag is given) or all of them (all). Without it, cassettes are only replayed.",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    """Keeps whether the test itself passed, so a cassette is written only for a passing test."""
    report = yield
    if report.when == "call":
        item.stash[_PASSED] = report.passed
    return report


class Cassette:
    """One test's cassette. `agent(a)` gives the Agent to run: `a` recording with its real model, or replaying.

    `path` is the cassette file, `recording` says which of the two it does, and `state` is the run it recorded or
    replayed (after the run).
    """

    def __init__(self, path: Path, recording: bool) -> None:
        self.path = path
        self.recording = recording
        self.store = CassetteStore()
        self.replay: Replay | None = None

    @property
    def state(self) -> State | None:
        """The run of this test (the first State it saved that no tool call started), or `None` before it ran."""
        return self.store.load(self.store.tops[0]) if self.store.tops else None

    def agent(self, agent: Agent, *, ignore: Iterable[str] = (), tools: Literal["run", "recorded"] = "run") -> Agent:
        """`agent` for this test: with its model wrapped in a `Recorder` when recording, or a `Replay` of the
        cassette in its place (`ignore=` and `tools=` as for `Replay`). Its store is the cassette's."""
        if self.recording:
            return agent.copy(model=Recorder(agent.model), store=self.store)
        replay = Replay(self.path, model=agent.model, ignore=ignore, tools=tools)
        self.replay = replay
        return replay.agent(agent).copy(store=self.store)

    def finish(self, passed: bool) -> None:
        """After the test: write the recording (a passing test only), or check the replay used every request."""
        if len(self.store.tops) > 1:
            raise ValueError(
                f"the test started {len(self.store.tops)} runs, and a cassette keeps one: use one State per test "
                "(add messages to it and run it again for a conversation)"
            )
        if not passed or not self.store.tops:
            return
        if self.recording:
            state = self.state
            assert state is not None
            write_cassette(self.path, state)
        elif self.replay is not None and self.replay.remaining:
            raise ReplayMismatch(
                f"the run made {self.replay.recorded - self.replay.remaining} requests, and the cassette "
                f"{str(self.path)!r} recorded {self.replay.recorded}: the run ended early"
            )


def cassette_path(item: pytest.Item) -> Path:
    """`cassettes/<test file stem>/<test name>.jsonl` next to the test file."""
    test_file = Path(str(item.path))
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", item.name)
    return test_file.parent / "cassettes" / test_file.stem / f"{name}.jsonl"


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> Iterator[Cassette]:
    """A `Cassette` for this test: it records the run the first time (`pytest --record-runs`) and replays it
    afterwards, with no network."""
    path = cassette_path(request.node)
    mode = request.config.getoption("--record-runs")
    recording = mode == "all" or (mode == "new" and not path.exists())
    found = Cassette(path, recording)
    yield found
    found.finish(request.node.stash.get(_PASSED, False))
