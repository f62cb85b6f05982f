"""Benchmark of the State fold: recording cost per entry at 1,000 and 100,000 entries, replay, and reads.

Run: ``.venv/bin/python benchmarks/fold.py``

Targets: at most 5 µs per recorded entry, the same at 1,000 and 100,000 entries (ratio at most 1.3);
``snapshot()`` O(1) and the same object until the next record; ``State(history=...)`` of 2,400 entries in at most
5 ms; ``state.messages``, ``state.pending_calls`` and ``state.usage`` O(1).

A realistic turn records three entries: ``model_request`` (``_begin_think``), ``model_reply`` with one tool call
(``_record_reply``) and ``tool_result`` (``_tool_result``). The replies are built beforehand (a model makes them).
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable

# Run as a script, this folder is sys.path[0]; its concurrent.py would shadow the standard library's package.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

from alpineagents.state import State  # noqa: E402
from alpineagents.types import (  # noqa: E402
    Message,
    ModelReplyEntry,
    ModelRequestEntry,
    Reply,
    TextBlock,
    ToolCall,
    ToolOutcomeKind,
    ToolResultEntry,
    Usage,
)

MODEL = "fake/fake"
# CPU time of this thread: other processes on a busy machine do not count against the figures.
_clock = time.thread_time
BATCH_TURNS = 300  # turns timed per sample (900 entries)


def make_turns(n: int, start: int = 0) -> list[tuple[ToolCall, Reply]]:
    turns = []
    for i in range(start, start + n):
        call = ToolCall("read_file", {"path": f"src/file_{i}.py"}, f"call_{i}")
        reply = Reply(
            Message("assistant", (TextBlock("Reading the file."), call)),
            Usage(input_tokens=1200, output_tokens=40, requests=1, cost=0.001),
            context_tokens=1240 + i,
            stop_reason="tool_use",
            model=MODEL,
        )
        turns.append((call, reply))
    return turns


def record(state: State, turns: list[tuple[ToolCall, Reply]]) -> None:
    for call, reply in turns:
        state._begin_think(MODEL)
        state._record_reply(reply)
        state._tool_result(call, "def main():\n    return 0\n", ToolOutcomeKind.DONE)


def grow_to(state: State, entries: int) -> None:
    """Record turns until the history has about ``entries`` entries."""
    missing = (entries - len(state.history)) // 3
    start = 0
    while missing > 0:
        chunk = min(missing, 5000)
        record(state, make_turns(chunk, start))
        start += chunk
        missing -= chunk


def per_entry(sizes: tuple[int, ...], samples: int = 11) -> list[float]:
    """Fastest µs per recorded entry for each size: batches of ``BATCH_TURNS`` turns recorded on a State that
    holds that many entries. The States take turns batch by batch, so a change in machine load hits all alike.
    (A State grows by ``samples * 900`` entries during the measurement.)"""
    states = []
    for size in sizes:
        state = State(messages=[Message.user("Find the bug")])
        grow_to(state, size)
        states.append(state)
    results: list[list[float]] = [[] for _ in sizes]
    offset = 10_000_000
    for sample in range(samples):
        for index, state in enumerate(states):
            turns = make_turns(BATCH_TURNS, offset + (sample * len(sizes) + index) * BATCH_TURNS)
            gc.collect()
            gc.disable()
            started = _clock()
            record(state, turns)
            elapsed = _clock() - started
            gc.enable()
            results[index].append(elapsed / (3 * BATCH_TURNS) * 1e6)
    return [min(values) for values in results]


def best_of(fn: Callable[[], object], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        started = _clock()
        fn()
        times.append(_clock() - started)
    return min(times)


def per_call_ns(fn: Callable[[], object], n: int = 100_000) -> float:
    """Fastest ns per call of ``fn`` (loop overhead included)."""
    best = float("inf")
    for _ in range(5):
        started = _clock()
        for _ in range(n):
            fn()
        best = min(best, (_clock() - started) / n * 1e9)
    return best


def main() -> int:
    call, reply = make_turns(1)[0]
    entries_us = (
        per_call_ns(lambda: ModelRequestEntry(content=MODEL, turn=1), 20_000)
        + per_call_ns(lambda: ModelReplyEntry(content=reply, turn=1), 20_000)
        + per_call_ns(lambda: ToolResultEntry(content="x", call=call, outcome=ToolOutcomeKind.DONE, turn=1), 20_000)
    ) / 3000
    print(f"machine: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (times are CPU time)")
    print(f"reference: building one entry object (types.py) takes {entries_us:.2f} µs on average")

    small, large = per_entry((1_000, 100_000))
    ratio = large / small
    print(f"record, 1,000 entries:    {small:6.2f} µs per entry (target <= 5)")
    print(f"record, 100,000 entries:  {large:6.2f} µs per entry (target <= 5)")
    print(f"ratio 100,000 / 1,000:    {ratio:6.2f} (target <= 1.3)")

    state = State(messages=[Message.user("Find the bug")])
    grow_to(state, 100_000)
    snap = state.snapshot()
    same = all(state.snapshot() is snap for _ in range(1000))
    snapshot_ns = per_call_ns(state.snapshot)
    print(f"snapshot() at 100,000:    {snapshot_ns:6.0f} ns (same object until the next record: {same})")
    reads = {
        "pending_calls": lambda: state.pending_calls,
        "usage": lambda: state.usage,
        "turn": lambda: state.turn,
    }
    shown = ", ".join(f"{name} {per_call_ns(fn):.0f} ns" for name, fn in reads.items())
    print(f"reads at 100,000:         {shown}")
    first = best_of(lambda: state.messages, repeat=1)
    again = per_call_ns(lambda: state.messages)
    count = len(state.messages)
    print(
        f"messages at 100,000:      {again:.0f} ns per read; the first read of a new snapshot builds its tuple once "
        f"({count} messages: {first * 1e3:.2f} ms)"
    )

    small_state = State(messages=[Message.user("Find the bug")])
    grow_to(small_state, 2_400)
    history = small_state.history
    replay = best_of(lambda: State(history=history))
    print(f"State(history=...) 2,400: {replay * 1e3:6.2f} ms for {len(history)} entries (target <= 5)")

    ok = small <= 5 and large <= 5 and ratio <= 1.3 and same and replay <= 0.005
    print("all targets met" if ok else "SOME TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
