"""`Replay`, a Model that answers from a stored run, and `Recorder`, a Model that records what a replay checks.

`Replay` takes the requests of a stored history in order (`recorded_requests`). For each request it gets, it first
compares it with the recorded one (`first_difference`): any difference fails at once with `ReplayMismatch`, whose
text names the first message, tool or setting that differs and shows both sides. Otherwise it gives the recorded
model events to `on_event`, the recorded text to `on_text`, and returns the recorded reply, so the new history
repeats the stored one. Tools run for real by default; `tools="recorded"` serves the recorded result of each call
instead (for tools with side effects), through `Replay.agent`.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from typing import Any, Literal

import alpineagents.errors as error_classes
from alpineagents._frozen import thaw
from alpineagents._replay.differences import check_ignore, first_difference, shown
from alpineagents._replay.recorded import REQUEST_EVENT, Recorded, model_settings, recorded_requests, request_facts
from alpineagents._skills.tools import SKILL_TOOLS
from alpineagents._tools.scope import CALL_SCOPE
from alpineagents.agent import Agent
from alpineagents.errors import ToolError, fix_message
from alpineagents.models.base import Model, OnEvent, OnText
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.tool import Tool
from alpineagents.types import (
    Image,
    Message,
    ModelEvent,
    ModelRequestEntry,
    Reply,
    Request,
    TextBlock,
    ToolOutcomeKind,
    ToolResultEntry,
    Usage,
)

__all__ = ["Replay", "Recorder", "ReplayMismatch", "RecordedFailure", "RecordedTool", "recorded_error"]

ToolsMode = Literal["run", "recorded"]


class ReplayMismatch(AssertionError):
    """A request differs from the one the stored run recorded (an `AssertionError`, so a test shows it as a
    failure). The message names the first place that differs and shows both sides."""


class RecordedFailure(RuntimeError):
    """The stored run's request failed here, with an error replaying cannot rebuild; the message is the recorded
    error text."""


def recorded_error(text: str) -> BaseException:
    """The exception a recorded error text (`"Type: message"`) stands for, so that replaying records the same text:
    the library's own error class of that name (`RateLimitError`, ...) when it takes the message alone, else a
    `RecordedFailure` subclass with that name, else a `RecordedFailure` with the whole text."""
    name, _, message = text.partition(": ")
    if not name.isidentifier():
        return RecordedFailure(text)
    known = getattr(error_classes, name, None)
    if isinstance(known, type) and issubclass(known, Exception):
        try:
            return known(message)
        except (TypeError, ValueError):
            pass
    return type(name, (RecordedFailure,), {"__module__": __name__})(message)


def _source_state(source: State | Store | str | os.PathLike[str], state_id: str | None) -> State:
    if isinstance(source, State):
        return source
    if isinstance(source, Store):
        if state_id is None:
            raise TypeError(
                fix_message(
                    "Replay(store) needs the id of the stored run to replay",
                    "pass the id after the store",
                    'Replay(FileStore("runs"), "run-42")',
                )
            )
        return source.load(state_id)
    if isinstance(source, str | os.PathLike):
        from alpineagents._replay.cassette import read_cassette  # a file: the cassette reader

        return read_cassette(source)
    raise TypeError(
        fix_message(
            f"Replay() takes a State, a Store and an id, or a cassette file (got: {source!r})",
            "pass the stored run to replay",
            'Replay(store.load("run-42")) or Replay("tests/cassettes/test_weather.jsonl")',
        )
    )


class Replay(Model):
    """A Model that answers each request with the reply a stored run got, after checking the request against the
    recorded one.

    Args:
        source: the stored run: a `State`, a `Store` (with `state_id`), or a cassette file (its JSON lines).
        state_id: the id of the run in `source` when it is a Store.
        model: the Model the run is replayed in place of; its settings (name, `max_tokens`, `temperature`) are
            compared with the recorded ones when the run kept them.
        ignore: what not to compare: any of `"system"`, `"tools"`, `"tool_descriptions"`, `"tool_schemas"`,
            `"settings"`, `"messages"`.
        tools: `"run"` (the tools run for real) or `"recorded"` (`Replay.agent` serves the recorded results).

    Raises `ReplayMismatch` at the first request that differs, and also when the run asks for more requests than
    the stored run made. `remaining` counts the recorded requests not replayed yet.
    """

    def __init__(
        self,
        source: State | Store | str | os.PathLike[str],
        state_id: str | None = None,
        *,
        model: Model | None = None,
        ignore: Iterable[str] = (),
        tools: ToolsMode = "run",
    ) -> None:
        if tools not in ("run", "recorded"):
            raise ValueError(
                fix_message(
                    f"Replay(tools=...) takes 'run' or 'recorded' (got: {tools!r})",
                    "'run' runs the tools for real; 'recorded' serves the results the stored run got",
                    'Replay(state, tools="recorded")',
                )
            )
        self.ignore = check_ignore(ignore)
        self.tools_mode: ToolsMode = tools
        self.stored = _source_state(source, state_id)
        self._requests = recorded_requests(self.stored.history)
        self._results = {
            entry.call.id: entry
            for entry in self.stored.history
            if isinstance(entry, ToolResultEntry) and not entry.late
        }
        self._settings = None if model is None else model_settings(model)
        self._real = model
        self._next = 0
        self._lock = threading.Lock()
        # The last request whose messages all matched: (recorded source list, its count, that request's messages).
        self._matched: tuple[list[Message], int, tuple[Message, ...]] | None = None
        first = next((entry.content for entry in self.stored.history if isinstance(entry, ModelRequestEntry)), None)
        provider, _, name = (first or "replay/replay").partition("/")
        self.provider, self.name = provider, name or provider  # the model string the stored run recorded
        if model is not None:
            self.max_tokens, self.temperature, self.price = model.max_tokens, model.temperature, model.price

    @property
    def context_window(self) -> int:
        """The replaced model's context window (200,000 without one)."""
        return self._real.context_window if self._real is not None else 200_000

    @property
    def recorded(self) -> int:
        """The number of requests the stored run made (turns, compactions and asks)."""
        return len(self._requests)

    @property
    def remaining(self) -> int:
        """The recorded requests not replayed yet."""
        return len(self._requests) - self._next

    def _take(self, kinds: tuple[str, ...], request: Request) -> tuple[Recorded, int]:
        """The next recorded request (and its number, from 1), which must be of one of `kinds`."""
        with self._lock:
            number = self._next + 1
            if self._next >= len(self._requests):
                raise ReplayMismatch(
                    f"Replay of {self.stored.id!r}: request {number} has no recorded counterpart: the stored run "
                    f"made {len(self._requests)} requests. This request's last message: "
                    f"{shown(request.messages[-1].text if request.messages else '')}"
                )
            recorded = self._requests[self._next]
            if recorded.kind not in kinds:
                raise ReplayMismatch(
                    f"Replay of {self.stored.id!r}: request {number} is a {kinds[0]}, but the stored run's request "
                    f"{number} (history entry {recorded.index}) was a {recorded.kind}"
                )
            self._next += 1
        return recorded, number

    def _known_same(self, recorded: Recorded, request: Request) -> int:
        """How many leading messages of `request` are known to match: those of the previous request, when it
        matched, the recorded messages extend the same list and this request's messages start with the very same
        objects (a tuple comparison that stops at identity: no message is compared field by field again). This
        keeps a long replay linear instead of comparing every message again at every request."""
        matched = self._matched
        if matched is None:
            return 0
        source, count, messages = matched
        if recorded.source is not source or recorded.count < count or request.messages[: len(messages)] != messages:
            return 0
        return count

    def _check(self, recorded: Recorded, request: Request, number: int, ignore: frozenset[str]) -> None:
        skip = self._known_same(recorded, request) if "messages" not in ignore else 0
        found = first_difference(recorded, request, self._settings, ignore, skip)
        if found is None and "messages" not in ignore:
            self._matched = (recorded.source, recorded.count, request.messages)
        if found is not None:
            raise ReplayMismatch(
                f"Replay of {self.stored.id!r}: request {number} (turn {recorded.turn}, history entry "
                f"{recorded.index}) differs from the recorded one in {found}\n"
                "If the change is meant, record the run again (pytest --record-runs=all for a cassette), or tell "
                'Replay what to ignore, e.g. Replay(..., ignore={"tool_descriptions"})'
            )

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """The recorded reply to `request`, after checking `request` against the recorded one."""
        kinds = ("turn", "ask") if request.tool_choice == "none" else ("turn",)
        recorded, number = self._take(kinds, request)
        if recorded.kind == "ask":
            return self._ask(recorded, request, number)
        self._check(recorded, request, number, self.ignore)
        for event in recorded.events:
            if on_event is not None:
                on_event(event)
        if recorded.reply is None:
            raise recorded_error(recorded.error or "the recorded request failed")
        if on_text is not None and recorded.reply.text:
            on_text(recorded.reply.text)
        return recorded.reply

    def _ask(self, recorded: Recorded, request: Request, number: int) -> Reply:
        """An `ask`: the history keeps only its question and answer, so only the question is checked and the
        answer is given back as the reply's text (JSON for a structured answer)."""
        self._check(recorded, request, number, self.ignore | {"messages"})
        last = request.messages[-1].text if request.messages else ""
        if recorded.question not in last:
            raise ReplayMismatch(
                f"Replay of {self.stored.id!r}: request {number} asks another question than the stored run's ask"
                f"\n  recorded: {shown(recorded.question)}\n  now:      {shown(last)}"
            )
        answer = thaw(recorded.answer)
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        return Reply(Message.assistant(text), Usage(requests=1), stop_reason="end_turn", model=self.name)

    def compact(self, request: Request, instructions: str | None = None, on_event: OnEvent | None = None) -> Reply:
        """The recorded summary of a compaction, after checking the messages it summarizes."""
        recorded, number = self._take(("compact",), request)
        self._check(recorded, request, number, self.ignore | {"settings"})
        assert recorded.reply is not None  # a compact is recorded only with its summary
        return recorded.reply

    # --- recorded tool results -----------------------------------------------------------------------------

    def recorded_result(self, call_id: str) -> ToolResultEntry:
        """The stored run's result of the call `call_id` (`ReplayMismatch` when it has none)."""
        found = self._results.get(call_id)
        if found is None:
            raise ReplayMismatch(f"Replay of {self.stored.id!r}: the stored run has no result for the call {call_id}")
        return found

    def agent(self, agent: Agent) -> Agent:
        """`agent` with this Replay as its model and, with `tools="recorded"`, each of its tools replaced by one
        with the same spec that serves the recorded results."""
        if self.tools_mode == "run":
            return agent.copy(model=self)
        tools = [RecordedTool(self, tool) for name, tool in agent.tool_map.items() if name not in SKILL_TOOLS]
        return agent.copy(model=self, tools=tools)


class RecordedTool(Tool):
    """A tool with another tool's spec whose every call gets the result the stored run recorded for it."""

    def __init__(self, replay: Replay, tool: Tool) -> None:
        super().__init__(
            name=tool.name, description=tool.description, input_schema=tool.input_schema, parallel=tool.parallel
        )
        self._replay = replay

    def run(self, args: dict[str, Any], state: State) -> Any:
        """The recorded result of the call running now: its content, or its error as a `ToolError`."""
        scope = CALL_SCOPE.get()
        if scope is None:
            raise ReplayMismatch(f"the recorded tool {self.name} was called outside a tool call of a run")
        entry = self._replay.recorded_result(scope.call.id)
        content = entry.content
        if entry.outcome is ToolOutcomeKind.DONE:
            if isinstance(content, str):
                return content
            return [
                block if isinstance(block, Image) else block.text
                for block in content
                if isinstance(block, Image | TextBlock)
            ]
        text = content if isinstance(content, str) else " ".join(b.text for b in content if isinstance(b, TextBlock))
        if entry.outcome is ToolOutcomeKind.ERROR:
            raise ToolError(text)
        raise recorded_error(text.removeprefix("(aborted: ").removesuffix(")"))


class Recorder(Model):
    """A Model that passes every request to `model` and records in the history what a replay compares but a
    history does not otherwise keep: the tool specs and the settings of each request (a `model_event` of kind
    `recorded_request` in each turn; the system prompt only as its SHA-256, as `run_start` keeps it).
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name, self.provider = model.name, model.provider
        self.max_tokens, self.temperature, self.price = model.max_tokens, model.temperature, model.price
        self.supports = model.supports

    @property
    def context_window(self) -> int:
        """The wrapped model's context window."""
        return self.model.context_window

    def _event(self, request: Request) -> ModelEvent:
        facts = request_facts(request, self.model)
        return ModelEvent(REQUEST_EVENT, f"request recorded for replay ({len(facts['tools'])} tools)", facts)

    def respond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Record the request's facts as a model event, then ask the wrapped model."""
        if on_event is not None and request.tool_choice == "auto":  # not for ask(): it has no turn to record in
            on_event(self._event(request))
        return self.model.respond(request, on_text, on_event)

    async def arespond(self, request: Request, on_text: OnText | None = None, on_event: OnEvent | None = None) -> Reply:
        """Async twin of `respond`."""
        if on_event is not None and request.tool_choice == "auto":
            on_event(self._event(request))
        return await self.model.arespond(request, on_text, on_event)

    def compact(self, request: Request, instructions: str | None = None, on_event: OnEvent | None = None) -> Reply:
        """The wrapped model's compaction."""
        return self.model.compact(request, instructions, on_event)

    async def acompact(
        self, request: Request, instructions: str | None = None, on_event: OnEvent | None = None
    ) -> Reply:
        """The wrapped model's compaction (async)."""
        return await self.model.acompact(request, instructions, on_event)

    def count_tokens(self, request: Request) -> int:
        """The wrapped model's count."""
        return self.model.count_tokens(request)

    def mark_cache(self, request: Request) -> Request:
        """The wrapped model's cache markers."""
        return self.model.mark_cache(request)

    def __repr__(self) -> str:
        return f"Recorder({self.model!r})"
