"""Printing a stored run the way the Terminal printed it while it ran.

The saved history is fed to a `Terminal` as the Reporter events the run produced: turn headers, the model's text,
tool lines, context changes, model events and one final line per run. Subagent runs saved in the same store are
printed inside the tool call that started them, one level deeper, as the Terminal nests them, and each question
the person answered is printed with its answer after it, as it looked when they typed it. The history keeps no
record of when a tool started, so each tool line comes right before its result line. A call the program made
(`agent.run_tool`, a request and reply of model `program`) prints only its tool lines, as it did live.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TextIO, cast

from alpineagents._turn.program import PROGRAM
from alpineagents._values.visible import visible
from alpineagents.state import State
from alpineagents.store import Store
from alpineagents.terminal import Terminal
from alpineagents.types import (
    ContextChangeEntry,
    ExchangeEntry,
    HistoryEntry,
    ModelEventEntry,
    ModelReplyEntry,
    ModelRequestEntry,
    RunStartEntry,
    ToolOutcome,
    ToolOutcomeKind,
    ToolResultEntry,
    Usage,
)
from alpineagents.viewer.runs import ending_error, open_run

NOT_STARTED = frozenset({ToolOutcomeKind.DENIED, ToolOutcomeKind.CANCELLED})
"""Outcomes of calls a permission refused: the Terminal printed no tool line for them."""

MAX_DEPTH = 16
"""Subagents nested deeper than this are not printed (a guard against a damaged store that links in a circle)."""


class _Shown:
    """What the Terminal reads from a State: its turn, usage, stop, depth and the name of its Agent."""

    def __init__(self, depth: int) -> None:
        self.turn = 0
        self.usage = Usage()
        self.stopped: object = None
        self._depth = depth
        self._agent: SimpleNamespace | None = None


def _as_state(shown: _Shown) -> State:
    """`shown` where the Terminal expects a State: it reads only turn, usage, stopped, _depth and _agent."""
    return cast(State, shown)


def error_from_text(text: str) -> BaseException:
    """An exception whose type name and message print like the recorded `"Type: message"` text."""
    name, _, message = text.partition(": ")
    if name == "KeyboardInterrupt":
        return KeyboardInterrupt()
    if name == "CancelledError":
        return asyncio.CancelledError()
    kind = type(name if name.isidentifier() else "Error", (Exception,), {})
    return kind(message)


class Replay:
    """Feeds saved histories to one Terminal."""

    def __init__(self, store: Store, output: TextIO) -> None:
        self.store = store
        self.output = output
        self.terminal = Terminal(output=output, input=self._typed)
        self.answer = ""

    def _typed(self, prompt: str) -> str:
        """The person's recorded answer, shown after the question as they typed it."""
        self.output.write(visible(prompt + self.answer) + "\n")
        return self.answer

    def _human(self, shown: _Shown, entry: ExchangeEntry) -> None:
        """A question the person answered, with its answer, as the Terminal asked it."""
        answer = entry.content.answer
        if isinstance(answer, bool):
            self.answer, returns = ("yes" if answer else "no"), bool
        elif answer in ("yes", "no"):  # a permission question keeps the answer as typed
            self.answer, returns = str(answer), bool
        else:
            self.answer, returns = (str(answer).strip() or "(no answer)"), str
        self.terminal.ask(_as_state(shown), entry.content.question, returns=returns)

    def history(self, entries: Sequence[HistoryEntry], depth: int = 0) -> None:
        """Print `entries` (one State's saved history) at `depth`."""
        shown = _Shown(depth)
        start: int | None = None
        for index, entry in enumerate(entries):
            if isinstance(entry, RunStartEntry):
                if start is not None:
                    self._end(shown, entries[start:index], entries[:index])
                start = index
                shown._agent = SimpleNamespace(name=entry.content.name)
                self.terminal.on_run_start(_as_state(shown))
            shown.turn = entry.turn
            self._entry(shown, entry)
        if start is not None:
            self._end(shown, entries[start:], entries)

    def _entry(self, shown: _Shown, entry: HistoryEntry) -> None:
        terminal = self.terminal
        state = _as_state(shown)
        if isinstance(entry, ModelRequestEntry):
            if entry.content != PROGRAM:  # a call the program made: no thinking, only its tool line
                terminal.on_think_start(state)
        elif isinstance(entry, ModelReplyEntry):
            if entry.content.text:
                terminal.on_text(state, entry.content.text)
            terminal.on_think_end(state, entry.content)
        elif isinstance(entry, ModelEventEntry):
            terminal.on_model_event(state, entry.content)
        elif isinstance(entry, ContextChangeEntry) and entry.content.kind != "import":
            terminal.on_context_change(state, entry.content)
        elif isinstance(entry, ToolResultEntry) and not entry.late:
            self._tool(shown, entry)
        elif isinstance(entry, ExchangeEntry) and entry.kind == "human":
            self._human(shown, entry)

    def _tool(self, shown: _Shown, entry: ToolResultEntry) -> None:
        if entry.outcome not in NOT_STARTED:
            self.terminal.on_tool_start(_as_state(shown), entry.call)
        for child_id in entry.child_ids:
            self._child(child_id, shown._depth + 1)
        self.terminal.on_tool_end(_as_state(shown), entry.call, entry.content, ToolOutcome(entry.outcome))

    def _child(self, child_id: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        try:
            child = open_run(self.store, child_id)
        except (LookupError, ValueError, OSError):
            return  # a subagent saved in another store (or not at all) is not printed
        self.history(child.history, depth)

    def _end(self, shown: _Shown, run: Sequence[HistoryEntry], before: Sequence[HistoryEntry]) -> None:
        """The final line of one run, with the usage and stop the State had when it ended."""
        at_end = State(history=before).snapshot()
        shown.usage = at_end.usage
        shown.stopped = at_end.stopped
        shown.turn = at_end.turn
        text = ending_error(run) if at_end.stopped is None else None
        error = error_from_text(text) if text is not None else None
        self.terminal.on_run_end(_as_state(shown), error)


def usage_line(usage: Usage) -> str:
    """`usage: 1200 input, 80 output, 0 cache read, 0 cache write tokens in 2 requests, ~$0.01`."""
    cost = f", ~${usage.cost:.2f}" if usage.cost is not None else ", cost unknown"
    requests = "1 request" if usage.requests == 1 else f"{usage.requests} requests"
    return (
        f"usage: {usage.input_tokens} input, {usage.output_tokens} output, {usage.cache_read_tokens} cache read, "
        f"{usage.cache_write_tokens} cache write tokens in {requests}{cost}"
    )
