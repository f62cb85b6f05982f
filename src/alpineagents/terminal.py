"""The Terminal: the default Reporter and the default Human.

It prints one line per event (turn headers, tool lines, final lines), streams the model's text of top-level runs,
and asks questions in a text terminal. Every text it writes goes through ``_values.visible``: a control character
(ESC, BEL, CR, ...) in a model's text, a tool's result or a stored run is shown as its escape (``\x1b``), never acted
on by the terminal. Subagent runs are indented four spaces per depth level and labelled with
their Agent's name. Lines are written whole under an output lock (thread-safe); questions are serialized by a
separate question lock that is not the output lock, so other threads keep writing while a person types.

From a State it reads only ``turn``, ``usage``, ``stopped``, ``_depth`` and ``_agent.name``, each only where its own
line needs it (``_agent`` never at depth 0), so any object with these attributes can be reported on.
"""

from __future__ import annotations

import asyncio
import builtins
import io
import sys
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from alpineagents._values.content import format_size
from alpineagents._values.visible import visible
from alpineagents.human import Human, describe_choices, parse_answer
from alpineagents.reporter import Reporter
from alpineagents.types import Image, StoppedByLimit, TextBlock, format_call, result_text

if TYPE_CHECKING:
    from alpineagents.state import State
    from alpineagents.types import ContextChange, ModelEvent, Reply, ToolCall, ToolOutcome, ToolResultContent

__all__ = ["Terminal", "default_terminal"]

_INDENT = "    "
_LABELS = {
    "compact": "context compacted",
    "clear_tool_results": "tool results cleared",
    "import": "context imported",
    "restore": "context restored",
}


def _tokens(n: int) -> str:
    return str(n) if n < 1000 else f"{n / 1000:.0f}k"


def _turns(turn: int) -> str:
    return "1 turn" if turn == 1 else f"{turn} turns"


def _done_size(result: ToolResultContent) -> str:
    if isinstance(result, str):
        return format_size(len(result.encode("utf-8")))
    total = 0
    images = 0
    for block in result:
        if isinstance(block, Image):
            total += len(block.data)
            images += 1
        elif isinstance(block, TextBlock):
            total += len(block.text.encode("utf-8"))
    text = format_size(total)
    if images == 1:
        text += " (1 image)"
    elif images:
        text += f" ({images} images)"
    return text


def _first_line(text: str) -> str:
    lines = text.strip().split("\n")
    first = lines[0] if lines else ""
    return first if len(first) <= 100 else first[:99] + "\u2026"


class _Nowhere(io.TextIOBase):
    """Where the Terminal writes when the process has no ``sys.stdout`` (``pythonw``, a detached service): the
    lines are dropped instead of ending the run."""

    def write(self, text: str) -> int:
        return len(text)


_NOWHERE = _Nowhere()


def _write(out: TextIO | io.TextIOBase, text: str) -> None:
    """Write ``text`` with its control characters made visible (``visible``: text from a model, a tool or a store
    never moves the cursor, rewrites a line or sends a terminal command); characters the stream's encoding cannot
    hold are written as ``?``, so that a model's emoji never ends a run whose output is a console or a file with a
    narrow encoding (cp1252, ascii)."""
    text = visible(text)
    try:
        out.write(text)
    except UnicodeEncodeError:
        encoding = getattr(out, "encoding", None) or "ascii"
        out.write(text.encode(encoding, "replace").decode(encoding))


def _is_tty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # pyright: ignore[reportAttributeAccessIssue] - a missing one counts as no tty
    except (AttributeError, ValueError, OSError):
        return False


class _Queue:
    """Context lines queued for one State (by identity), flushed after its next header or at its run end."""

    __slots__ = ("ref", "lines")

    def __init__(self, ref: Callable[[], Any], lines: list[str]) -> None:
        self.ref = ref
        self.lines = lines


class Terminal(Reporter, Human):
    """Prints progress lines and asks questions in a text terminal: the default Reporter and Human.

    Args:
        output: The stream written to; ``None`` means ``sys.stdout``, looked up anew on every write.
        input: A function that reads one answer; it receives the full prompt and displays it itself.
            ``None`` means the built-in ``input()`` (the Terminal writes the prompt to ``output``).
        show_text: Show the model's streamed text (public, mutable); structure lines always show.
    """

    show_text: bool

    def __init__(
        self,
        *,
        output: TextIO | None = None,
        input: Callable[[str], str] | None = None,  # noqa: A002 - the spec's keyword
        show_text: bool = True,
    ) -> None:
        self._output = output
        self._input = input
        self.show_text = show_text
        self._lock = threading.RLock()
        self._question_lock = threading.RLock()
        self._at_line_start = True
        self._queues: dict[int, _Queue] = {}

    # --- low-level writing (call with self._lock held) -------------------------------------------------------

    def _stream(self) -> TextIO | io.TextIOBase:
        out = self._output if self._output is not None else sys.stdout
        return out if out is not None else _NOWHERE

    def _end_line(self, out: TextIO | io.TextIOBase) -> None:
        if not self._at_line_start:
            out.write("\n")
            self._at_line_start = True

    def _put_lines(self, lines: list[str]) -> None:
        with self._lock:
            out = self._stream()
            self._end_line(out)
            for line in lines:
                _write(out, line + "\n")
            out.flush()

    def _line(self, state: State, text: str) -> None:
        self._put_lines([_INDENT * state._depth + text])

    @staticmethod
    def _name(state: State) -> str | None:
        if state._depth <= 0:
            return None
        agent = state._agent
        if agent is None:
            return None
        name = agent.name
        return name if name else None

    def _new_queue(self, state: State) -> _Queue:
        key = id(state)
        queues = self._queues

        def forget(_: object) -> None:  # the State is gone: drop its lines (dict.pop is atomic)
            if queues.get(key) is queue:
                queues.pop(key, None)

        try:
            ref: Callable[[], Any] = weakref.ref(state, forget)
        except TypeError:  # an object without weakref support stays referenced until flushed
            ref = _strong(state)
        queue = _Queue(ref, [])
        return queue

    def _take_queue(self, state: State) -> list[str]:
        queue = self._queues.get(id(state))
        if queue is None or queue.ref() is not state:
            return []
        del self._queues[id(state)]
        return queue.lines

    # --- Reporter ---------------------------------------------------------------------------------------------

    def on_run_start(self, state: State) -> None:
        """Depth 0: nothing. A subagent: ``{name} started`` at its indent."""
        if state._depth <= 0:
            return
        name = self._name(state)
        self._line(state, f"{name} started" if name else "started")

    def on_think_start(self, state: State) -> None:
        """The turn header ``[turn N] thinking`` (``[NAME turn N] thinking`` for a named subagent), then this
        State's queued context lines."""
        name = self._name(state)
        header = f"[{name} turn {state.turn}] thinking" if name else f"[turn {state.turn}] thinking"
        with self._lock:
            self._put_lines([_INDENT * state._depth + header, *self._take_queue(state)])

    def on_text(self, state: State, chunk: str) -> None:
        """Write the model's text raw (top-level runs only, when ``show_text`` is true)."""
        if not self.show_text or not chunk or state._depth > 0:
            return
        with self._lock:
            out = self._stream()
            for index, piece in enumerate(chunk.split("\n")):
                if index:
                    out.write("\n")
                    self._at_line_start = True
                if self._at_line_start:
                    self._at_line_start = False
                _write(out, piece)
            out.flush()

    def on_think_end(self, state: State, reply: Reply) -> None:
        """End a line of streamed text, if one is open."""
        with self._lock:
            if not self._at_line_start:
                out = self._stream()
                self._end_line(out)
                out.flush()

    def on_tool_start(self, state: State, call: ToolCall) -> None:
        """``  tool {call}``."""
        self._line(state, "  tool " + format_call(call))

    def on_tool_end(self, state: State, call: ToolCall, result: ToolResultContent, outcome: ToolOutcome) -> None:
        """One line by ``outcome.kind``: ``done {size}``, the input error, ``error``/``aborted``/``denied``/
        ``cancelled {name}: {text}``."""
        kind = str(outcome.kind)
        if kind == "done":
            text = "done " + _done_size(result)
        elif kind == "input_error":
            text = result_text(result)
        elif kind == "error":
            text = f"error {call.name}: {_first_line(result_text(result))}"
        elif kind in ("aborted", "interrupted"):
            text = f"aborted {call.name}: {result_text(result)}"
        else:
            text = f"{kind} {call.name}: {result_text(result)}"
        self._line(state, "  " + text)

    def on_context_change(self, state: State, change: ContextChange) -> None:
        """Queue ``{label}: {before} → {after} tokens`` for this State's next header or run end."""
        name = self._name(state)
        prefix = f"{name} " if name else ""
        label = _LABELS.get(change.kind, str(change.kind))
        tail = " (cache rebuilds)" if change.kind == "compact" else ""
        line = (
            f"{_INDENT * state._depth}  {prefix}{label}: "
            f"{_tokens(change.before_tokens)} \u2192 {_tokens(change.after_tokens)} tokens{tail}"
        )
        with self._lock:
            queue = self._queues.get(id(state))
            if queue is None or queue.ref() is not state:
                queue = self._queues[id(state)] = self._new_queue(state)
            queue.lines.append(line)

    def on_model_event(self, state: State, event: ModelEvent) -> None:
        """``  model: {message}``."""
        self._line(state, "  model: " + event.message)

    def on_run_end(self, state: State, error: BaseException | None) -> None:
        """This State's queued context lines, then the final ``done: ...`` line."""
        turns = _turns(state.turn)
        if isinstance(error, KeyboardInterrupt | asyncio.CancelledError):
            text = f"done: interrupted by user ({turns})"
        elif error is not None:
            text = f"done: error {type(error).__name__}: {error} ({turns})"
        else:
            stopped = state.stopped
            if isinstance(stopped, StoppedByLimit):
                text = f"done: reached limit({stopped.turns}), the task may be unfinished ({turns})"
            else:
                usage = state.usage
                parts = [turns]
                if usage.cost is not None:
                    parts.append(f"~${usage.cost:.2f}")
                rate = usage.cache_hit_rate
                if rate:
                    parts.append(f"cache hit {rate:.0%}")
                reason = f"{stopped} " if stopped is not None else ""
                text = f"done: {reason}({', '.join(parts)})"
        name = self._name(state)
        line = _INDENT * state._depth + (f"{name} " if name else "") + text
        with self._lock:
            self._put_lines([*self._take_queue(state), line])

    # --- Human ------------------------------------------------------------------------------------------------

    def ask(self, state: State, prompt: str, returns: Any = str) -> Any:
        """Ask ``prompt`` (with ``(yes/no)``-style choices) and return the converted answer; re-ask on a bad one.

        Raises:
            EOFError: The input ended.
            KeyboardInterrupt: The person pressed Ctrl+C.
            TypeError: An unsupported ``returns``.
        """
        choices = describe_choices(returns)
        shown = f"{prompt} ({choices}) " if choices else f"{prompt} "
        indent = _INDENT * state._depth
        full = indent + shown
        with self._question_lock:
            while True:
                answer = self._read(full)
                try:
                    return parse_answer(answer, returns)
                except ValueError as error:
                    self._put_lines([indent + str(error)])

    def _read(self, full: str) -> str:
        if self._input is not None:
            with self._lock:
                out = self._stream()
                if not self._at_line_start:
                    self._end_line(out)
                    out.flush()
            return self._input(visible(full))
        with self._lock:
            out = self._stream()
            self._end_line(out)
            _write(out, full)
            out.flush()
            self._at_line_start = False
        answer = builtins.input()
        with self._lock:
            if not self._at_line_start:
                out = self._stream()
                if not (_is_tty(sys.stdin) and _is_tty(out)):
                    out.write("\n")
                    out.flush()
                self._at_line_start = True
        return answer


def _strong(value: object) -> Callable[[], object]:
    return lambda: value


_default_terminal: Terminal | None = None
_default_lock = threading.Lock()


def default_terminal() -> Terminal:
    """The process-wide shared ``Terminal()``, created on first use (thread-safe).

    It lives in the module global ``_default_terminal``, read on every call: replacing that global replaces the
    Terminal of every later default run.
    """
    global _default_terminal
    terminal = _default_terminal
    if terminal is None:
        with _default_lock:
            terminal = _default_terminal
            if terminal is None:
                terminal = _default_terminal = Terminal()
    return terminal
