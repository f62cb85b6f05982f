"""Terminal: exact printed lines, line discipline, thread safety, asking."""

from __future__ import annotations

import io
import sys
import threading
from typing import Any, Literal

import pytest

from alpineagents import terminal as terminal_module
from alpineagents.human import Human
from alpineagents.reporter import Reporter
from alpineagents.terminal import Terminal, default_terminal
from alpineagents.types import (
    ContextChange,
    Image,
    ModelEvent,
    Reply,
    StoppedByFinish,
    StoppedByLimit,
    StoppedByPermission,
    StoppedByUntil,
    TextBlock,
    ToolCall,
    ToolOutcome,
    ToolOutcomeKind,
    Usage,
)

PNG_HEADER = b"\x89PNG\r\n\x1a\n"


class Named:
    def __init__(self, name: Any) -> None:
        self.name = name


class Stub:
    """Carries only what the Terminal may read from a State."""

    def __init__(
        self,
        turn: int = 1,
        depth: int = 0,
        name: Any = None,
        usage: Usage | None = None,
        stopped: Any = None,
    ) -> None:
        self.turn = turn
        self._depth = depth
        self._agent = Named(name) if name is not None else None
        self.usage = usage if usage is not None else Usage()
        self.stopped = stopped


class OnlyTurnAndDepth:
    """At depth 0 an object with only turn and _depth is enough for every method but on_run_end."""

    __slots__ = ("turn", "_depth", "__weakref__")

    def __init__(self, turn: int) -> None:
        self.turn = turn
        self._depth = 0


def make() -> tuple[Terminal, io.StringIO]:
    out = io.StringIO()
    return Terminal(output=out), out


def call(name: str = "a", **args: Any) -> ToolCall:
    return ToolCall(name, args, "c1")


def reply() -> Reply:
    from alpineagents.types import Message

    return Reply(message=Message.assistant("x"), usage=Usage())


def png(size: int) -> Image:
    return Image(PNG_HEADER + b"\0" * (size - len(PNG_HEADER)), "image/png")


def test_roles_and_attributes():
    t = Terminal()
    assert isinstance(t, Reporter)
    assert isinstance(t, Human)
    assert t.show_text is True
    assert t._output is None
    out = io.StringIO()
    assert Terminal(output=out)._output is out
    public = {name for name in vars(t) if not name.startswith("_")}
    assert public == {"show_text"}
    with pytest.raises(TypeError):
        Terminal(io.StringIO())  # type: ignore[misc]


def test_headers_indent_by_depth():
    t, out = make()
    t.on_think_start(Stub(turn=1))
    t.on_think_start(Stub(turn=2, depth=1))
    assert out.getvalue() == "[turn 1] thinking\n    [turn 2] thinking\n"


def test_subagent_lines_are_indented_and_labelled():
    t, out = make()
    s = Stub(turn=2, depth=1, name="researcher", stopped=StoppedByFinish())
    t.on_run_start(s)
    t.on_think_start(s)
    t.on_tool_start(s, ToolCall("web_search", {"query": "q"}, "c1"))
    t.on_run_end(s, None)
    assert out.getvalue() == (
        "    researcher started\n"
        "    [researcher turn 2] thinking\n"
        '      tool web_search(query="q")\n'
        "    researcher done: stopped by finish (2 turns)\n"
    )


def test_the_top_level_run_is_never_labelled():
    t, out = make()
    s = Stub(turn=1, depth=0, name="main")
    t.on_run_start(s)
    t.on_think_start(s)
    t.on_run_end(s, None)
    assert out.getvalue() == "[turn 1] thinking\ndone: (1 turn)\n"
    assert "main" not in out.getvalue()


def test_nameless_subagent_and_falsy_names():
    for name in ("", None):
        t, out = make()
        s = Stub(turn=3, depth=1, name=name)
        t.on_run_start(s)
        t.on_think_start(s)
        t.on_run_end(s, RuntimeError("boom"))
        assert out.getvalue() == "    started\n    [turn 3] thinking\n    done: error RuntimeError: boom (3 turns)\n"


def test_depth_zero_reads_only_turn_and_depth():
    t, out = make()
    s = OnlyTurnAndDepth(4)
    t.on_run_start(s)  # type: ignore[arg-type]
    t.on_think_start(s)  # type: ignore[arg-type]
    t.on_text(s, "hi")  # type: ignore[arg-type]
    t.on_think_end(s, reply())  # type: ignore[arg-type]
    t.on_tool_start(s, call())  # type: ignore[arg-type]
    t.on_tool_end(s, call(), "ok", ToolOutcome(ToolOutcomeKind.DONE))  # type: ignore[arg-type]
    t.on_model_event(s, ModelEvent("retry", "retrying"))  # type: ignore[arg-type]
    t.on_context_change(s, ContextChange("compact", 2000, 1000))  # type: ignore[arg-type]
    t.on_think_start(s)  # type: ignore[arg-type]
    assert out.getvalue() == (
        "[turn 4] thinking\nhi\n  tool a()\n  done 2B\n  model: retrying\n"
        "[turn 4] thinking\n  context compacted: 2k \u2192 1k tokens (cache rebuilds)\n"
    )


def test_text_shows_only_at_depth_zero_and_with_show_text():
    t, out = make()
    t.on_text(Stub(depth=1), "hidden\n")
    t.on_text(Stub(depth=0), "shown\n")
    assert out.getvalue() == "shown\n"
    t2, out2 = make()
    t2.show_text = False
    t2.on_text(Stub(depth=0), "shown\n")
    t2.on_text(Stub(depth=1), "hidden\n")
    assert out2.getvalue() == ""
    t2.on_text(Stub(depth=0), "")
    assert out2.getvalue() == ""


def test_text_chunks_join_and_lines_are_closed():
    t, out = make()
    s = Stub()
    t.on_text(s, "Let me look at ")
    t.on_text(s, "the repo.")
    t.on_think_end(s, reply())
    assert out.getvalue() == "Let me look at the repo.\n"
    t.on_think_end(s, reply())
    assert out.getvalue() == "Let me look at the repo.\n"
    t2, out2 = make()
    t2.on_text(s, "stopped mid-line")
    t2.on_run_end(s, None)
    assert out2.getvalue() == "stopped mid-line\ndone: (1 turn)\n"


def test_done_lines_show_sizes_and_images():
    s = Stub()
    cases = [
        ("x" * 1200, "  done 1.2KB\n"),
        ("x" * 100, "  done 100B\n"),
        ("x" * 3_565_158, "  done 3.4MB\n"),
        ((TextBlock("hello"), png(70), png(70)), "  done 145B (2 images)\n"),
        ((TextBlock("é"), png(70)), "  done 72B (1 image)\n"),
        ("(interrupted by user)", "  done 21B\n"),
    ]
    for result, expected in cases:
        t, out = make()
        t.on_tool_end(s, call(), result, ToolOutcome(ToolOutcomeKind.DONE))
        assert out.getvalue() == expected


def test_tool_end_lines_follow_the_outcome_kind():
    s = Stub()

    def line(result: Any, kind: str, name: str = "bash") -> str:
        t, out = make()
        t.on_tool_end(s, ToolCall(name, {}, "c"), result, ToolOutcome(kind))  # type: ignore[arg-type]
        return out.getvalue()

    assert line("(input error: path is missing)", "input_error") == "  (input error: path is missing)\n"
    assert line("(interrupted by user)", "interrupted") == "  aborted bash: (interrupted by user)\n"
    assert line("(aborted: RuntimeError)", "aborted") == "  aborted bash: (aborted: RuntimeError)\n"
    assert line("The user denied it", "denied") == "  denied bash: The user denied it\n"
    assert (
        line("(not run: the user stopped this turn)", "cancelled")
        == "  cancelled bash: (not run: the user stopped this turn)\n"
    )
    long = "y" * 150
    assert line(long + "\nsecond", "error", "x") == "  error x: " + "y" * 99 + "\u2026\n"
    assert line("  short\nmore", "error", "x") == "  error x: short\n"
    assert line("z" * 100, "error", "x") == "  error x: " + "z" * 100 + "\n"
    assert line("   ", "error", "x") == "  error x: \n"
    assert line("(aborted: nothing to do)", "done").startswith("  done ")


def test_context_lines_are_queued_until_the_next_header_or_run_end():
    t, out = make()
    s = Stub(turn=3)
    t.on_context_change(s, ContextChange("compact", 121000, 18000))
    assert out.getvalue() == ""
    t.on_think_start(s)
    assert out.getvalue() == "[turn 3] thinking\n  context compacted: 121k \u2192 18k tokens (cache rebuilds)\n"
    t2, out2 = make()
    s2 = Stub(turn=1)
    t2.on_context_change(s2, ContextChange("clear_tool_results", 900, 300))
    t2.on_run_end(s2, None)
    assert out2.getvalue() == "  tool results cleared: 900 \u2192 300 tokens\ndone: (1 turn)\n"
    t3, out3 = make()
    t3.on_context_change(s2, ContextChange("restore", 1500, 2500))
    t3.on_context_change(s2, ContextChange("import", 0, 999))
    t3.on_context_change(s2, ContextChange("other", 999999, 1499))  # type: ignore[arg-type]
    t3.on_think_start(s2)
    assert out3.getvalue() == (
        "[turn 1] thinking\n"
        "  context restored: 2k \u2192 2k tokens\n"
        "  context imported: 0 \u2192 999 tokens\n"
        "  other: 1000k \u2192 1k tokens\n"
    )
    t3.on_think_start(s2)  # the queue was flushed once
    assert out3.getvalue().count("context restored") == 1


def test_context_queues_are_per_state():
    t, out = make()
    alpha = Stub(turn=1, depth=1, name="alpha")
    beta = Stub(turn=1, depth=1, name="beta")
    t.on_context_change(alpha, ContextChange("compact", 121000, 18000))
    t.on_think_start(beta)
    t.on_run_end(beta, None)
    assert "compacted" not in out.getvalue()
    alpha.turn = 2
    t.on_think_start(alpha)
    assert out.getvalue().endswith(
        "    [alpha turn 2] thinking\n      alpha context compacted: 121k \u2192 18k tokens (cache rebuilds)\n"
    )


def test_final_lines_by_error_stop_cost_and_cache():
    def final(state: Stub, error: BaseException | None = None) -> str:
        t, out = make()
        t.on_run_end(state, error)
        return out.getvalue()

    usage = Usage(input_tokens=100, cache_read_tokens=525, requests=1, cost=0.42)
    assert (
        final(Stub(turn=5, usage=usage, stopped=StoppedByUntil("waiting_for_user")))
        == "done: stopped by waiting_for_user (5 turns, ~$0.42, cache hit 84%)\n"
    )
    assert (
        final(Stub(turn=50, usage=usage, stopped=StoppedByLimit(50)))
        == "done: reached limit(50), the task may be unfinished (50 turns)\n"
    )
    assert final(Stub(turn=3), KeyboardInterrupt()) == "done: interrupted by user (3 turns)\n"
    import asyncio

    assert final(Stub(turn=3), asyncio.CancelledError()) == "done: interrupted by user (3 turns)\n"
    assert final(Stub(turn=2), TimeoutError("slow")) == "done: error TimeoutError: slow (2 turns)\n"
    assert final(Stub(turn=0), TimeoutError()) == "done: error TimeoutError:  (0 turns)\n"
    assert final(Stub(turn=2)) == "done: (2 turns)\n"
    assert final(Stub(turn=1, usage=Usage(requests=1, cost=0.0))) == "done: (1 turn, ~$0.00)\n"
    zero_rate = Usage(input_tokens=10, requests=1)
    assert final(Stub(turn=1, usage=zero_rate)) == "done: (1 turn)\n"
    stop = StoppedByPermission(call(), "DecideByHuman()")
    assert final(Stub(turn=3, stopped=stop)) == "done: stopped by permission DecideByHuman() (3 turns)\n"


def test_model_event_line():
    t, out = make()
    t.on_model_event(Stub(depth=1, name="scout"), ModelEvent("fallback", "switched to backup"))
    assert out.getvalue() == "      model: switched to backup\n"


def test_ask_with_a_custom_input_reasks_until_the_answer_fits():
    prompts: list[str] = []
    answers = iter(["yes"])

    def reader(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    out = io.StringIO()
    t = Terminal(output=out, input=reader)
    assert t.ask(Stub(), "Run it?", returns=bool) is True
    assert prompts == ["Run it? (yes/no) "]
    assert out.getvalue() == ""

    prompts.clear()
    answers = iter(["yes"])
    assert t.ask(Stub(depth=2), "Run it?", returns=bool) is True
    assert prompts == ["        Run it? (yes/no) "]

    prompts.clear()
    answers = iter(["not sure", "yes"])
    assert t.ask(Stub(), "Run it?", returns=bool) is True
    assert "Answer 'yes' or 'no'" in out.getvalue()
    assert prompts == ["Run it? (yes/no) "] * 2

    prompts.clear()
    out.truncate(0)
    out.seek(0)
    answers = iter(["", "   ", " hello "])
    assert t.ask(Stub(), "What should I do?", returns=str) == "hello"
    assert prompts == ["What should I do? "] * 3
    assert out.getvalue().count("Empty answers are not accepted") == 2

    answers = iter(["2"])
    assert t.ask(Stub(), "Which?", returns=Literal[1, 2]) == 2


def test_ask_custom_input_closes_open_line():
    out = io.StringIO()
    t = Terminal(output=out, input=lambda prompt: "yes")
    t.on_text(Stub(), "partial")
    assert t.ask(Stub(), "Ok?", returns=bool) is True
    assert out.getvalue() == "partial\n"
    t.on_think_start(Stub(turn=2))
    assert out.getvalue() == "partial\n[turn 2] thinking\n"


def test_ask_errors_propagate():
    def eof(prompt: str) -> str:
        raise EOFError

    t = Terminal(output=io.StringIO(), input=eof)
    with pytest.raises(EOFError):
        t.ask(Stub(), "Continue?", bool)
    t2 = Terminal(output=io.StringIO(), input=lambda p: "1")
    with pytest.raises(TypeError):
        t2.ask(Stub(), "How many?", int)


def test_text_ending_in_a_newline_leaves_an_empty_line_before_the_tool_line():
    t, out = make()
    s = Stub(turn=1)
    t.on_think_start(s)
    t.on_text(s, "Hello\n")
    t.on_think_end(s, reply())
    t.on_tool_start(s, call())
    assert out.getvalue() == "[turn 1] thinking\nHello\n\n  tool a()\n"


class TtyStringIO(io.StringIO):
    def isatty(self) -> bool:
        return True


class BrokenTty(io.StringIO):
    def isatty(self) -> bool:
        raise ValueError("closed")


def test_ask_with_the_builtin_input_writes_the_prompt_to_output(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    log = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO("not sure\nyes\n"))
    t = Terminal(output=log)
    assert t.ask(Stub(), "Continue?", bool) is True
    assert "Continue? (yes/no)" in log.getvalue()
    assert "Answer 'yes' or 'no'" in log.getvalue()
    assert log.getvalue() == "Continue? (yes/no) \nAnswer 'yes' or 'no'\nContinue? (yes/no) \n"
    captured = capsys.readouterr()
    assert "Continue?" not in captured.out
    assert "Answer 'yes'" not in captured.out

    tty_out = TtyStringIO()
    monkeypatch.setattr(sys, "stdin", TtyStringIO("yes\n"))
    t2 = Terminal(output=tty_out)
    assert t2.ask(Stub(), "Continue?", bool) is True
    t2.on_think_start(Stub(turn=2))
    assert tty_out.getvalue() == "Continue? (yes/no) [turn 2] thinking\n"

    assert default_terminal() is default_terminal()


def test_builtin_input_isatty_errors_count_as_not_tty(monkeypatch: pytest.MonkeyPatch):
    out = BrokenTty()
    monkeypatch.setattr(sys, "stdin", TtyStringIO("yes\n"))
    t = Terminal(output=out)
    assert t.ask(Stub(depth=1), "Go?", bool) is True
    assert out.getvalue() == "    Go? (yes/no) \n"


def test_output_none_looks_up_stdout_on_every_write(capsys: pytest.CaptureFixture[str]):
    t = Terminal()
    t.on_think_start(Stub(turn=7))
    assert capsys.readouterr().out == "[turn 7] thinking\n"
    other = io.StringIO()
    saved = sys.stdout
    sys.stdout = other
    try:
        t.on_think_start(Stub(turn=8))
    finally:
        sys.stdout = saved
    assert other.getvalue() == "[turn 8] thinking\n"


def test_default_terminal_global(monkeypatch: pytest.MonkeyPatch):
    first = default_terminal()
    assert isinstance(first, Terminal)
    replacement = Terminal(output=io.StringIO())
    monkeypatch.setattr(terminal_module, "_default_terminal", replacement)
    assert default_terminal() is replacement
    monkeypatch.setattr(terminal_module, "_default_terminal", None)
    fresh = default_terminal()
    assert fresh is not replacement and fresh is default_terminal()


def test_lines_from_threads_never_interleave():
    t, out = make()
    states = [Stub(turn=i, depth=i % 3) for i in range(8)]

    def worker(s: Stub) -> None:
        for _ in range(200):
            t.on_tool_start(s, ToolCall("tool_with_a_long_name", {"arg": "x" * 40}, "c"))

    threads = [threading.Thread(target=worker, args=(s,)) for s in states]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    lines = out.getvalue().split("\n")
    assert lines[-1] == ""
    assert len(lines) == 8 * 200 + 1
    for line in lines[:-1]:
        assert line.strip() == 'tool tool_with_a_long_name(arg="' + "x" * 40 + '")'


def test_question_does_not_hold_output_lock():
    out = io.StringIO()
    asked = threading.Event()
    release = threading.Event()

    def reader(prompt: str) -> str:
        asked.set()
        release.wait(5)
        return "yes"

    t = Terminal(output=out, input=reader)
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(t.ask(Stub(), "Go?", bool)))
    thread.start()
    assert asked.wait(5)
    t.on_run_end(Stub(turn=1), KeyboardInterrupt())  # not blocked by the waiting question
    assert out.getvalue() == "done: interrupted by user (1 turn)\n"
    release.set()
    thread.join(5)
    assert result == [True]


def test_questions_are_serialized():
    out = io.StringIO()
    inside = 0
    overlap = False
    lock = threading.Lock()

    def reader(prompt: str) -> str:
        nonlocal inside, overlap
        with lock:
            inside += 1
            overlap = overlap or inside > 1
        threading.Event().wait(0.01)
        with lock:
            inside -= 1
        return "yes"

    t = Terminal(output=out, input=reader)
    threads = [threading.Thread(target=t.ask, args=(Stub(), "Go?", bool)) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    assert not overlap


def test_aask_default_runs_ask_on_a_thread():
    import asyncio

    idents: list[int] = []

    def reader(prompt: str) -> str:
        idents.append(threading.get_ident())
        return "yes"

    t = Terminal(output=io.StringIO(), input=reader)

    async def main() -> Any:
        return await t.aask(Stub(), "Go?", bool), threading.get_ident()

    answer, loop_thread = asyncio.run(main())
    assert answer is True
    assert idents and idents[0] != loop_thread


# --- transcripts of real runs ------------------------------------------------------------------------


def test_transcript_c_permission_stop_with_terminal_as_human():
    from alpineagents.agent import Agent
    from alpineagents.permissions import AllowByReadOnly, DecideByHuman
    from alpineagents.testing import FakeModel, tool_call
    from alpineagents.tool import tool

    @tool(read_only=True)
    def read_file(path: str) -> str:
        """Read."""
        return "text"

    @tool
    def write_file(path: str, content: str) -> str:
        """Write."""
        return "ok"

    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return "no"

    out = io.StringIO()
    term = Terminal(output=out, input=answer)
    agent = Agent(
        FakeModel([[tool_call("read_file", path="notes.md"), tool_call("write_file", path="notes.md", content="hi")]]),
        tools=[read_file, write_file],
        permissions=[AllowByReadOnly(), DecideByHuman()],
        reporter=term,
        human=term,
    )
    assert agent.run("Take notes") is None
    assert out.getvalue() == (
        "[turn 1] thinking\n"
        "  denied write_file: The user declined this call. Wait for their next message.\n"
        "  cancelled read_file: (not run: the user stopped this turn)\n"
        "done: stopped by permission DecideByHuman() (1 turn)\n"
    )
    assert prompts == ['Run write_file(path="notes.md", content="hi")? (yes/no) ']


def test_transcript_c_with_builtin_input(monkeypatch: pytest.MonkeyPatch):
    from alpineagents.agent import Agent
    from alpineagents.permissions import DecideByHuman
    from alpineagents.testing import FakeModel, tool_call
    from alpineagents.tool import tool

    @tool
    def write_file(path: str, content: str) -> str:
        """Write."""
        return "ok"

    monkeypatch.setattr(sys, "stdin", io.StringIO("no\n"))
    out = io.StringIO()
    term = Terminal(output=out)
    agent = Agent(
        FakeModel([tool_call("write_file", path="a", content="x")]),
        tools=[write_file],
        permissions=[DecideByHuman()],
        reporter=term,
        human=term,
    )
    agent.run("Write")
    assert out.getvalue() == (
        "[turn 1] thinking\n"
        'Run write_file(path="a", content="x")? (yes/no) \n'
        "  denied write_file: The user declined this call. Wait for their next message.\n"
        "done: stopped by permission DecideByHuman() (1 turn)\n"
    )


def test_transcript_a_and_b_top_level_and_subagent():
    from alpineagents.agent import Agent
    from alpineagents.testing import FakeModel, tool_call
    from alpineagents.tool import tool

    @tool
    def list_issues(state: str) -> str:
        """List issues."""
        return "x" * 812

    scout = Agent(
        FakeModel([tool_call("list_issues", state="open"), "Three: #1, #2, #3"]),
        tools=[list_issues],
        name="scout",
        description="Finds things",
    )
    out = io.StringIO()
    term = Terminal(output=out)
    lead = Agent(
        FakeModel([tool_call("scout", prompt="List the open issues"), "There are three open issues."]),
        tools=[scout],
        reporter=term,
        human=None,
    )
    assert lead.run("What is open?") == "There are three open issues."
    assert out.getvalue() == (
        "[turn 1] thinking\n"
        '  tool scout(prompt="List the open issues")\n'
        "    scout started\n"
        "    [scout turn 1] thinking\n"
        '      tool list_issues(state="open")\n'
        "      done 812B\n"
        "    [scout turn 2] thinking\n"
        "    scout done: stopped by waiting_for_user (2 turns)\n"
        "  done 17B\n"
        "[turn 2] thinking\n"
        "There are three open issues.\n"
        "done: stopped by waiting_for_user (2 turns)\n"
    )


def test_compaction_between_turns_shows_under_the_next_header():
    from alpineagents.agent import Agent
    from alpineagents.loop import loop
    from alpineagents.testing import FakeModel

    def never(state: Any) -> bool:
        return False

    @loop(until=never, limit=2)
    def body(agent: Any, state: Any) -> None:
        if state.turn == 1:
            state.compact("summary of turn 1")
        agent.think(state)

    out = io.StringIO()
    term = Terminal(output=out, show_text=False)
    agent = Agent(FakeModel(["one", "two"]), loop=body, reporter=term, human=None)
    agent.run("Go")
    lines = out.getvalue().split("\n")
    assert lines[0] == "[turn 1] thinking"
    assert lines[1] == "[turn 2] thinking"
    assert lines[2].startswith("  context compacted: ") and lines[2].endswith(" tokens (cache rebuilds)")
    assert lines[3] == "done: reached limit(2), the task may be unfinished (2 turns)"


def test_queued_lines_of_a_dropped_state_are_forgotten():
    import gc

    t, out = make()
    s = Stub(turn=1)
    t.on_context_change(s, ContextChange("compact", 5000, 1000))
    assert len(t._queues) == 1
    del s
    gc.collect()
    assert t._queues == {}
    assert out.getvalue() == ""


def test_a_run_printing_to_a_narrow_encoding_writes_question_marks_instead_of_failing():
    from alpineagents.agent import Agent
    from alpineagents.testing import FakeModel, tool_call
    from alpineagents.tool import tool

    @tool
    def note(text: str) -> str:
        """Note."""
        return "noted"

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii", write_through=True)  # a log file on a cp1252/ascii system
    agent = Agent(
        FakeModel([tool_call("note", text="caf\u00e9 \u2713"), "All done \u2705"]),
        tools=[note],
        reporter=Terminal(output=out),
        human=None,
    )
    assert agent.run("go") == "All done \u2705"
    assert raw.getvalue().decode("ascii").splitlines() == [
        "[turn 1] thinking",
        '  tool note(text="caf? ?")',
        "  done 5B",
        "[turn 2] thinking",
        "All done ?",
        "done: stopped by waiting_for_user (2 turns)",
    ]


def test_a_process_without_stdout_runs_with_the_default_terminal(monkeypatch: pytest.MonkeyPatch):
    from alpineagents.agent import Agent
    from alpineagents.testing import FakeModel

    monkeypatch.setattr(sys, "stdout", None)  # pythonw, or a service detached from any console
    agent = Agent(FakeModel(["Hello"]), reporter=Terminal(), human=None)
    assert agent.run("go") == "Hello"


HOSTILE = "ok\x1b[2K\rforged line\x07 \x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ \x9b31m \u202eevil"
"""Text a model, a tool or a store could hold: erase the line, return to its start, ring the bell, an OSC 8 link, an
8-bit CSI and a right-to-left override."""

ACTED_ON = ("\x1b", "\r", "\x07", "\x9b", "\u202e")


def test_control_characters_from_a_model_a_tool_or_a_store_are_shown_not_acted_on():
    t, out = make()
    hostile = Stub(turn=2, depth=1, name="agent" + HOSTILE, stopped=StoppedByFinish())
    t.on_text(Stub(), "thinking " + HOSTILE + "\nnext line")
    t.on_think_end(Stub(), reply())
    t.on_tool_start(Stub(), ToolCall("tool\x1b[1A", {"text": HOSTILE}, "c1"))
    for kind in ("error", "input_error", "aborted", "denied", "cancelled"):
        t.on_tool_end(Stub(), call(), HOSTILE, ToolOutcome(ToolOutcomeKind(kind)))
    t.on_tool_end(Stub(), call(), (TextBlock(HOSTILE),), ToolOutcome(ToolOutcomeKind.ERROR))
    t.on_model_event(Stub(), ModelEvent("retry", HOSTILE))
    t.on_run_start(hostile)
    t.on_think_start(hostile)
    t.on_run_end(hostile, RuntimeError(HOSTILE))
    asked: list[str] = []
    Terminal(output=out, input=lambda prompt: asked.append(prompt) or "yes").ask(Stub(), HOSTILE, returns=bool)
    text = out.getvalue()
    for char in ACTED_ON:
        assert char not in text and char not in asked[0]
    assert "thinking ok\\x1b[2K\\rforged line\\x07 \\x1b]8;;http://evil.example\\x1b\\link" in text
    assert "\\x9b31m \\u202eevil\nnext line\n" in text  # newlines stay, the rest is shown as escapes
    assert "  tool tool\\x1b[1A(" in text
    assert "  model: ok\\x1b[2K\\rforged" in text
    assert "done: error RuntimeError: ok\\x1b[2K" in text
    assert asked[0].startswith("ok\\x1b[2K\\rforged line\\x07")
    tab = Terminal(output=io.StringIO())
    tab.on_text(Stub(), "a\tb")
    assert tab._output.getvalue() == "a\tb"  # pyright: ignore[reportAttributeAccessIssue]
