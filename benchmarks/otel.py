"""Per-turn cost of tracing: the same run with tracing off and with tracing on (`alpineagents.otel`).

Run: `.venv/bin/python benchmarks/otel.py` (needs the `test` extra: `opentelemetry-sdk`).

Each turn is one model request (FakeModel, answered inline) and one tool call, no store, no reporter: what tracing
adds is one `chat` and one `execute_tool` span per turn, plus the metrics of each. "On" sends spans to an
in-memory exporter through a `SimpleSpanProcessor` and metrics to an in-memory reader, so the figure is the cost
of making the spans and metrics, not of exporting them.

Prints µs per turn for `run()` (sync tool on a worker thread) and `arun()` (async tool), off and on, and the
difference. Off and on alternate run by run, and each figure is the lowest of the rounds, so that other work on
a shared machine inflates it less.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections import deque
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from alpineagents import otel
from alpineagents.agent import Agent
from alpineagents.loop import adefault_loop, default_loop
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool


@tool
def step(n: int) -> str:
    """One step."""
    return "ok"


@tool
async def astep(n: int) -> str:
    """One async step."""
    return "ok"


class InlineModel(FakeModel):
    """FakeModel whose `arespond` answers inline (the default hands each request to a worker thread)."""

    async def arespond(self, request: Any, on_text: Any = None, on_event: Any = None) -> Any:
        return self.respond(request, on_text, on_event)


def _model(turns: int, name: str) -> FakeModel:
    items: list[Any] = [tool_call(name, n=i) for i in range(turns - 1)]
    items.append("done")
    model = InlineModel(items)
    model.requests = deque(maxlen=1)  # type: ignore[assignment]
    return model


def sync_run(turns: int) -> float:
    agent = Agent(_model(turns, "step"), tools=[step], reporter=None, loop=default_loop.copy(limit=turns + 5))
    started = time.perf_counter()
    agent.run("Go")
    return time.perf_counter() - started


def async_run(turns: int) -> float:
    agent = Agent(_model(turns, "astep"), tools=[astep], reporter=None, loop=adefault_loop.copy(limit=turns + 5))

    async def main() -> float:
        started = time.perf_counter()
        await agent.arun("Go")
        return time.perf_counter() - started

    return asyncio.run(main())


class Telemetry:
    """An SDK tracer provider with an in-memory exporter and a meter provider with an in-memory reader."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])

    def on(self) -> None:
        otel.instrument(self.tracer_provider, self.meter_provider)

    def off(self) -> None:
        otel.uninstrument()
        self.exporter.clear()


def measure(run: Any, turns: int, rounds: int, telemetry: Telemetry) -> tuple[float, float, int]:
    """Best µs per turn off and on, alternating run by run; and the spans of one traced run."""
    off: list[float] = []
    on: list[float] = []
    spans = 0
    run(turns)  # warm up
    for _ in range(rounds):
        gc.collect()
        off.append(run(turns) / turns)
        telemetry.on()
        try:
            on.append(run(turns) / turns)
            spans = len(telemetry.exporter.get_finished_spans())
        finally:
            telemetry.off()
    return min(off) * 1e6, min(on) * 1e6, spans


def main(turns: int = 200, rounds: int = 15) -> None:
    telemetry = Telemetry()
    print(f"{turns} turns a run, best of {rounds} runs each, off and on alternating")
    for label, run in (("run() with a sync tool", sync_run), ("arun() with an async tool", async_run)):
        off, on, spans = measure(run, turns, rounds, telemetry)
        print(
            f"  {label}: tracing off {off:6.1f} µs/turn, on {on:6.1f} µs/turn "
            f"(+{on - off:5.1f} µs/turn; {spans} spans a run)"
        )
    telemetry.tracer_provider.shutdown()
    telemetry.meter_provider.shutdown()


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
