"""Benchmark: a long conversation (5,000 messages by default) through each adapter, turn after turn.

The fake provider server (tests/servers/provider.py) runs in a subprocess on 127.0.0.1. For each adapter
(Anthropic, OpenAICompatible, OpenAIResponses), the conversation grows by the reply and one user message per turn,
and every turn is a real `respond` through the official SDK. Per turn it measures:

- own: the adapter's mapping of the Request to the SDK's arguments (timed around that step inside `respond`);
- SDK build: from those arguments to the HTTP request the SDK hands to its transport (an httpx request hook);
- in-process: the CPU time of this process over the whole `respond` (the server runs in another process);
- GC: the collections that ran during the turns (`gc.callbacks`): full (generation 2) ones and the longest pause;
- objects: the container objects still alive after each step (`gc.get_count()` deltas with the collector
  paused), which is what counts towards the collector's thresholds: the adapter's mapping against the SDK's build.

Run:  .venv/bin/python benchmarks/long_context.py [--messages 5000] [--turns 50]
The code measured is the `alpineagents` that Python imports: the installed one, or the one on `PYTHONPATH`, so
`PYTHONPATH=/path/to/other/src .venv/bin/python benchmarks/long_context.py` measures another checkout. It exits with
1 when the adapter's own share is above 1 ms a request.
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/concurrent.py would shadow the standard library's `concurrent` package: drop this folder from the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib.util  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "src"))  # last: an installed or PYTHONPATH alpineagents comes first

import alpineagents  # noqa: E402
from alpineagents.models import Anthropic, Model, OpenAICompatible, OpenAIResponses  # noqa: E402
from alpineagents.types import Message, Request, ToolSpec  # noqa: E402


def _models_benchmark() -> Any:
    """`models.py` of this folder, whose synthetic conversation this benchmark grows."""
    spec = importlib.util.spec_from_file_location("benchmarks_models", Path(__file__).with_name("models.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_MODELS = _models_benchmark()
SPECS: tuple[ToolSpec, ...] = _MODELS.SPECS
OWN_LIMIT_US = 1000.0


def conversation(size: int) -> list[Message]:
    """`size` messages: the user asks, then the assistant calls a tool and its result comes back, over and over
    (`models.py`'s conversation)."""
    return list(_MODELS.context(size).messages)


def start_server() -> tuple[subprocess.Popen[str], str]:
    """The fake provider server in a subprocess, and its URL."""
    sys.path.append(str(ROOT / "tests"))
    from servers.provider import start_in_subprocess

    return start_in_subprocess()


class Pauses:
    """The collector's pauses while it is installed in `gc.callbacks`: each pause's length and generation."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((info["generation"], time.perf_counter() - self._started))

    def __enter__(self) -> Pauses:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


@dataclass
class Figures:
    """What one adapter's turns measured (times in µs)."""

    own: list[float] = field(default_factory=list)
    sdk: list[float] = field(default_factory=list)
    total: list[float] = field(default_factory=list)
    own_objects: list[int] = field(default_factory=list)
    sdk_objects: list[int] = field(default_factory=list)
    full_collections: int = 0
    collections: int = 0
    longest_pause: float = 0.0
    gc_time: float = 0.0


class Probe:
    """Marks the moments of one `respond`: before and after the adapter's mapping, and when the SDK hands the
    HTTP request to its transport; with the collector's live-object count at each."""

    def __init__(self) -> None:
        self.marks: dict[str, tuple[float, int]] = {}

    def mark(self, name: str) -> None:
        self.marks[name] = (time.perf_counter(), gc.get_count()[0])

    def on_request(self, _request: object) -> None:
        self.mark("sent")

    def wrap(self, model: Model, name: str) -> None:
        """Time the adapter's mapping step `name` inside `respond` (the adapter calls it through `self`)."""
        real: Callable[..., Any] = getattr(model, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            self.mark("own_start")
            try:
                return real(*args, **kwargs)
            finally:
                self.mark("own_end")

        setattr(model, name, timed)


def make_adapter(kind: str, url: str, probe: Probe) -> Model:
    """The adapter with its SDK client, whose transport hook marks when a request leaves the SDK."""
    if kind == "Anthropic":
        import anthropic

        model: Model = Anthropic("claude-bench", base_url=url, api_key="k", max_tokens=1024, retries=0)
        http = anthropic.DefaultHttpxClient(event_hooks={"request": [probe.on_request]})
        client: Any = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0, http_client=http)
        probe.wrap(model, "_build_request_kwargs")
    else:
        import openai

        cls = OpenAICompatible if kind == "OpenAICompatible" else OpenAIResponses
        model = cls("gpt-bench", base_url=url + "/v1", api_key="k", retries=0)
        http = openai.DefaultHttpxClient(event_hooks={"request": [probe.on_request]})
        client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, http_client=http)
        probe.wrap(model, "_prepared")
    model._client = lambda: client  # type: ignore[method-assign]  # the client with the hook
    return model


def run(kind: str, url: str, size: int, turns: int, warmup: int = 3) -> Figures:
    """`turns` requests of a conversation that starts at `size` messages and grows by two each turn."""
    probe = Probe()
    model = make_adapter(kind, url, probe)
    messages = conversation(size)
    figures = Figures()

    def turn(measure: bool) -> None:
        request = Request("You are a careful coding agent.", tuple(messages), SPECS)
        started = time.process_time()
        reply = model.respond(request)
        spent = time.process_time() - started
        if measure:
            marks = probe.marks
            figures.own.append((marks["own_end"][0] - marks["own_start"][0]) * 1e6)
            figures.sdk.append((marks["sent"][0] - marks["own_end"][0]) * 1e6)
            figures.total.append(spent * 1e6)
        messages.append(reply.message)
        messages.append(Message.user(f"Good. Now look at the next module ({len(messages)})."))

    for _ in range(warmup):
        turn(False)
    gc.collect()
    with Pauses() as pauses:
        for _ in range(turns):
            turn(True)
    figures.collections = len(pauses.pauses)
    figures.full_collections = sum(1 for generation, _ in pauses.pauses if generation == 2)
    figures.longest_pause = max((p for _, p in pauses.pauses), default=0.0) * 1e6
    figures.gc_time = sum(p for _, p in pauses.pauses) * 1e6
    gc.disable()  # the live objects each step leaves, with no collection in between to reset the count
    try:
        for _ in range(5):
            turn(False)
            marks = probe.marks
            figures.own_objects.append(marks["own_end"][1] - marks["own_start"][1])
            figures.sdk_objects.append(marks["sent"][1] - marks["own_end"][1])
    finally:
        gc.enable()
    return figures


def report(kind: str, f: Figures, turns: int) -> str:
    med = statistics.median
    return (
        f"{kind:<17}{med(f.own):>9.0f}{max(f.own):>9.0f}{med(f.sdk):>10.0f}{med(f.total):>10.0f}"
        f"{statistics.mean(f.total):>10.0f}{f.gc_time / turns:>9.0f}{f.full_collections:>6}{f.collections:>6}"
        f"{f.longest_pause / 1000:>8.1f}{med(f.own_objects):>9.0f}{med(f.sdk_objects):>9.0f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=5000, help="messages in the context at the start (5000)")
    parser.add_argument("--turns", type=int, default=50, help="requests per adapter (50)")
    parser.add_argument("--adapters", default="Anthropic,OpenAICompatible,OpenAIResponses")
    args = parser.parse_args(argv)

    proc, url = start_server()
    failed = False
    try:
        print(f"alpineagents from {Path(alpineagents.__file__).parent}")
        print(f"{args.messages} messages at the start, {args.turns} turns (each adds 2); times in µs unless noted")
        print(
            f"{'adapter':<17}{'own':>9}{'own max':>9}{'SDK build':>10}{'in-proc':>10}{'mean':>10}"
            f"{'GC/turn':>9}{'full':>6}{'all':>6}{'max ms':>8}{'own obj':>9}{'SDK obj':>9}"
        )
        for kind in args.adapters.split(","):
            figures = run(kind, url, args.messages, args.turns)
            failed |= statistics.median(figures.own) > OWN_LIMIT_US
            print(report(kind, figures, args.turns), flush=True)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(5)
    print(
        "own: median (and max) of the adapter's mapping; SDK build: median from the SDK call to the HTTP request; "
        "in-proc: median (and mean) CPU time of respond; GC/turn: collector time per turn; full/all: collections "
        "of generation 2 / of any generation in the turns; max ms: the longest pause; own/SDK obj: container "
        "objects each step leaves alive (median)"
    )
    print("FAIL: the adapter's own share is above 1 ms" if failed else "OK: the adapter's own share is under 1 ms")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
