"""What a run records of each request's input and of each error's stack, and what a fork records of its origin.

- Each `model_request` names its system prompt and tool specs by SHA-256; the text of each distinct prompt and tool
  set is kept once per State (in the first request that sent it), through a real FileStore and SQLiteStore, and the
  viewer's reading gives every request its exact input (system text, messages as sent, tool specs).
- No credential reaches the recorded prompt, the specs or a stack: the environment's secrets and the adapter's key
  are replaced by `[REDACTED]`.
- An error entry keeps its stack (bounded), saved and loaded; a State saved before keeps loading unchanged.
- `alpineagents fork` records the run it came from, with or without `--model`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from alpineagents import Agent, Message, State, tool
from alpineagents._history.stack import TRACEBACK_CHARS, stack_text
from alpineagents._replay.fork import fork_origin
from alpineagents._serial import entry_from_dict, entry_to_dict
from alpineagents.models.openai_compatible import OpenAICompatible
from alpineagents.store import FileStore, SQLiteStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.types import ErrorEntry, ModelRequestEntry, RequestInput
from alpineagents.viewer.requests import NOT_RECORDED, request_view, summaries
from helpers.cli_agents import cli

pytestmark = pytest.mark.usefixtures("record_all")

OLD = Path(__file__).parent / "saved_before_approvals"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool
def shout(text: str) -> str:
    """Say it louder.

    Args:
        text: What to say.
    """
    return text.upper()


def requests_of(state: State) -> list[ModelRequestEntry]:
    return [entry for entry in state.history if isinstance(entry, ModelRequestEntry)]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_each_distinct_prompt_and_tool_set_is_kept_once_and_every_request_names_its_own(
    kind: str, tmp_path: Path
) -> None:
    store: Store = FileStore(tmp_path / "runs") if kind == "file" else SQLiteStore(tmp_path / "runs.db")
    first = Agent(
        FakeModel([tool_call("add", a=1, b=2), "3", tool_call("add", a=3, b=4), "7"]),
        system="Be brief.",
        tools=[add, shout],
        store=store,
        reporter=None,
    )
    state = State(id="r1", messages=[Message.user("add 1 and 2")])
    first.run(state)
    state.add_message(Message.user("and 3 and 4?"))
    first.run(state)
    other = first.copy(model=FakeModel(["done"]), system="Be very brief.")
    state.add_message(Message.user("thanks"))
    other.think(state, tools=[shout])

    sent = [entry.input for entry in requests_of(state)]
    assert all(item is not None for item in sent) and len(sent) == 5
    assert sent[0] == RequestInput(
        system_sha256=sha("Be brief."),
        system="Be brief.",
        tools_sha256=sent[0].tools_sha256,  # type: ignore[union-attr]
        tools=[
            {"name": "add", "description": "Add two numbers.", "input_schema": add.spec.input_schema},
            {"name": "shout", "description": "Say it louder.", "input_schema": shout.spec.input_schema},
        ],
    )
    for later in sent[1:4]:  # the same prompt and tools, by digest only (the second run too)
        assert later == RequestInput(system_sha256=sha("Be brief."), tools_sha256=sent[0].tools_sha256)  # type: ignore[union-attr]
    last = sent[4]
    assert last is not None and last.system == "Be very brief." and last.system_sha256 == sha("Be very brief.")
    assert [spec["name"] for spec in last.tools or ()] == ["shout"] and last.tools_sha256 != sent[0].tools_sha256  # type: ignore[union-attr]

    saved = store.read("r1")
    assert saved is not None
    lines = [json.dumps(entry) for entry in saved.entries]
    assert sum("Be brief." in line for line in lines) == 1  # the text once, however many requests sent it
    assert sum('"description": "Add two numbers."' in line for line in lines) == 1
    loaded = store.load("r1")
    assert [entry.input for entry in requests_of(loaded)] == sent  # read back as recorded

    views = [request_view(loaded.history, index) for index, entry in enumerate(loaded.history)]
    shown = [view for view in views if view is not None]
    assert len(shown) == 5
    fourth = shown[3]  # the second run's second request: texts found in the first request
    assert fourth.system.text == "Be brief."
    assert '"name": "shout"' in fourth.tools.text and '"name": "add"' in fourth.tools.text
    contents = [[piece.text for piece in pieces] for _, pieces in fourth.messages]
    assert [role for role, _ in fourth.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert contents[0] == ["add 1 and 2"] and contents[3] == ["3"] and contents[4] == ["and 3 and 4?"]
    assert contents[6] == ["7"] and fourth.messages[6][1][0].title.startswith("result of add (")  # the tool's result
    assert shown[4].system.text == "Be very brief." and '"name": "add"' not in shown[4].tools.text
    lines_said = list(summaries(loaded.history).values())
    assert lines_said[0] == "1 message · system prompt (9 characters) · 2 tools"
    assert lines_said[4].endswith("system prompt (14 characters) · 1 tool")


def test_a_state_continued_after_a_load_does_not_record_the_texts_again(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    agent = Agent(FakeModel(["one", "two"]), system="Be brief.", tools=[add], store=store, reporter=None)
    agent.run(State(id="r1", messages=[Message.user("hi")]))
    again = store.load("r1")
    again.add_message(Message.user("more"))
    agent.run(again)
    sent = [entry.input for entry in requests_of(store.load("r1"))]
    assert sent[0] is not None and sent[0].system == "Be brief." and sent[0].tools is not None
    assert sent[1] is not None and sent[1].system is None and sent[1].tools is None
    assert sent[1].system_sha256 == sent[0].system_sha256


def test_a_request_without_prompt_or_tools_records_no_input_and_an_old_save_says_not_recorded() -> None:
    state = State(messages=[Message.user("hi")])
    Agent(FakeModel(["hello"]), reporter=None).run(state)
    request = requests_of(state)[0]
    assert request.input is None and "input" not in entry_to_dict(request, 0)

    old = FileStore(OLD).load("old1")  # saved before requests carried their input: loads unchanged
    view = next(v for i in range(len(old.history)) if (v := request_view(old.history, i)) is not None)
    assert view.system.text == NOT_RECORDED and view.tools.text == NOT_RECORDED
    assert [role for role, _ in view.messages][0] == "user"


def test_the_recorded_prompt_and_specs_hold_no_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    env_key = "sk-env-secret-0123456789abcdef"
    adapter_key = "sk-adapter-secret-987654321"
    monkeypatch.setenv("MY_SERVICE_API_KEY", env_key)

    @tool
    def call_service(query: str) -> str:
        """Call the service.

        Args:
            query: What to ask.
        """
        return query

    leaky = call_service.copy(description=f"Call the service with key {adapter_key}.")
    system = f"You may use the key {env_key} and also {adapter_key}."
    model = OpenAICompatible("gpt-test", api_key=adapter_key, base_url="http://127.0.0.1:9/v1")
    agent = Agent(model, system=system, tools=[leaky], reporter=None)
    from alpineagents._turn.sent import request_input

    state = State(messages=[Message.user("hi")])
    sent = request_input(agent, state, agent._specs)
    assert sent is not None and sent.system == "You may use the key [REDACTED] and also [REDACTED]."
    assert sent.system_sha256 == sha(system)  # the digest names the prompt as the Agent has it
    text = json.dumps(entry_to_dict(ModelRequestEntry(content="m", turn=1, input=sent), 0))
    assert env_key not in text and adapter_key not in text and "[REDACTED]" in text


def ping(depth: int) -> None:
    if depth:
        pong(depth - 1)
    raise RuntimeError("boom")


def pong(depth: int) -> None:  # two functions in turn: Python prints every frame (it folds only repeated ones)
    ping(depth)


def test_an_error_keeps_its_stack_redacted_and_bounded_through_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "tok-live-abcdefghijklmnop"
    monkeypatch.setenv("SERVICE_TOKEN", secret)

    @tool
    def explode() -> str:
        """Explode."""
        raise RuntimeError(f"boom with {secret[:3]}")  # the message is the tool's; the stack is checked below

    store = SQLiteStore(tmp_path / "runs.db")
    agent = Agent(FakeModel([tool_call("explode")]), tools=[explode], store=store, reporter=None)
    state = State(id="b1", messages=[Message.user("go")])
    with pytest.raises(RuntimeError):
        agent.run(state)
    errors = [entry for entry in store.load("b1").history if isinstance(entry, ErrorEntry)]
    assert errors and errors[-1].traceback is not None
    stack = errors[-1].traceback
    assert stack.startswith("Traceback (most recent call last):") and "in explode" in stack
    assert 'raise RuntimeError(f"boom with {secret[:3]}")' in stack and stack.rstrip().endswith("boom with tok")

    try:  # a source line holding the secret itself is redacted
        raise ValueError("tok-live-abcdefghijklmnop")
    except ValueError as error:
        text = stack_text(error)
    assert text is not None and secret not in text and "[REDACTED]" in text

    try:
        ping(300)
    except RuntimeError as error:
        long = stack_text(error)
    assert long is not None and len(long) <= TRACEBACK_CHARS + 80
    assert long.startswith("… (") and "characters of the outer frames cut" in long and long.endswith("boom\n")
    assert stack_text(RuntimeError("never raised")) is None

    entry = ErrorEntry(content="RuntimeError: boom", turn=1, traceback="Traceback ...")
    assert entry_from_dict(json.loads(json.dumps(entry_to_dict(entry, 0)))).traceback == "Traceback ..."  # type: ignore[union-attr]
    assert entry == ErrorEntry(content="RuntimeError: boom", turn=1)  # the stack is not part of equality


def test_a_fork_records_the_run_it_came_from_with_or_without_a_model(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    made = cli("run", "cli_agents:calc", "please add 2 and 3", "--id", "r1", "--store", store, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert cli("fork", "r1", "--at", "4", "--id", "f1", "--store", store, cwd=tmp_path).returncode == 0
    assert cli("fork", "f1", "--id", "f2", "--model", "openai/x", "--store", store, cwd=tmp_path).returncode == 0
    opened = SQLiteStore(store)
    assert fork_origin(opened.load("f1").history) == ("r1", 4)
    assert fork_origin(opened.load("f2").history) == ("f1", 5)  # the latest fork: the run it was copied from
    assert fork_origin(opened.load("r1").history) is None


def test_a_copy_and_a_fork_each_keep_the_texts_their_own_history_needs() -> None:
    import copy

    state = State(messages=[Message.user("hi")])
    Agent(FakeModel(["one"]), system="First.", reporter=None).run(state)
    clone, forked = copy.copy(state), state.fork()
    second = Agent(FakeModel(["two", "three", "four"]), system="Second.", reporter=None)
    for each in (clone, state, forked):  # the clone records "Second." first; the others must record it too
        each.add_message(Message.user("more"))
        second.run(each)
        assert requests_of(each)[-1].input == RequestInput(system_sha256=sha("Second."), system="Second.")


def test_a_damaged_input_or_stack_makes_the_entry_damaged() -> None:
    request = {"seq": 2, "kind": "model_request", "turn": 1, "at": "2026-01-01T09:00:00+00:00", "content": "m"}
    for bad in ("x", {"system_sha256": 5}, {"system_sha256": "a", "tools": "not a list"}, {"tools": [1]}):
        with pytest.raises(ValueError, match=r"saved history entry 2 is damaged \(TypeError: input"):
            entry_from_dict({**request, "input": bad})
    error = {**request, "kind": "error", "content": "E", "traceback": ["not", "text"]}
    with pytest.raises(ValueError, match=r"saved history entry 2 is damaged \(TypeError: traceback"):
        entry_from_dict(error)
    assert entry_from_dict({**request, "input": {"system_sha256": None, "tools_sha256": None}}) == entry_from_dict(
        request
    )


@pytest.mark.parametrize("setting", [None, "", "stacks"])
def test_the_command_line_records_inputs_unless_told_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None
) -> None:
    """`alpineagents run` records each request's input for the viewer by default; ALPINEAGENTS_RECORD set (even to
    nothing) decides instead."""
    if setting is None:
        monkeypatch.delenv("ALPINEAGENTS_RECORD")
    else:
        monkeypatch.setenv("ALPINEAGENTS_RECORD", setting)
    store = str(tmp_path / "runs.db")
    made = cli("run", "cli_agents:calc", "please add 2 and 3", "--id", "r1", "--store", store, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    inputs = [entry.input for entry in requests_of(SQLiteStore(store).load("r1"))]
    assert inputs and all((sent is not None) == (setting is None) for sent in inputs)


def test_a_library_run_records_no_input_or_stack_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ALPINEAGENTS_RECORD")
    state = State(messages=[Message.user("hi")])
    Agent(FakeModel(["one"]), system="First.", reporter=None).run(state)
    assert [entry.input for entry in requests_of(state)] == [None]
    monkeypatch.setenv("ALPINEAGENTS_RECORD", "inputs, Nonsense")
    state.add_message(Message.user("again"))
    with pytest.warns(UserWarning, match=r"ALPINEAGENTS_RECORD names 'nonsense'.*\nFix: use a comma-separated list"):
        Agent(FakeModel(["two"]), system="First.", reporter=None).run(state)
    assert requests_of(state)[-1].input == RequestInput(system_sha256=sha("First."), system="First.")
