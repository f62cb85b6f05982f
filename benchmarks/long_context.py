"""Benchmark: what a request of a long conversation costs on the client, through each adapter and through the SDK's
own `create`.

The fake provider server (tests/servers/provider.py) runs in a subprocess on 127.0.0.1. For each adapter
(Anthropic, OpenAICompatible, OpenAIResponses) and each size (100, 1,000 and 5,000 messages by default), a
conversation of that size grows by the reply and one user message per turn, and every turn is a real request
through the official SDK, read to its last stream event. Per request it measures the CPU time of this process (the
server runs in another), which is the whole client-side cost: ours and the SDK's.

- ours: `respond`: the adapter maps the new messages, encodes the body once and sends the bytes through the SDK's
  raw path (`client.post(path, content=...)`), then reads the SDK's typed stream into a `Reply`;
- create: the same request through the SDK's typed call (`messages.stream(...)`, `chat.completions.create(...)`,
  `responses.create(...)`) with the adapter's own arguments (already mapped, so this is the SDK's cost alone),
  reading the stream to its end;
- GC: the collector's pauses during the `respond` turns (`gc.callbacks`): full (generation 2) collections and the
  longest pause.

Run:  .venv/bin/python benchmarks/long_context.py [--sizes 100,1000,5000] [--turns 30]
The code measured is the `alpineagents` that Python imports: the installed one, or the one on `PYTHONPATH`. It exits
with 1 when a request of ours at the largest size costs more than 5 ms of CPU (median), or a collection paused the
`respond` turns for more than 20 ms.
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

OURS_LIMIT_MS = 5.0
PAUSE_LIMIT_MS = 20.0
CREATE_BUDGET_S = 4.0
"""Time given to the `create` turns of one adapter and size (the openai SDK's take about half a second each at
5,000 messages): at least 3 turns, at most `--turns`."""


def _models_benchmark() -> Any:
    """`models.py` of this folder, whose synthetic conversation this benchmark grows."""
    spec = importlib.util.spec_from_file_location("benchmarks_models", Path(__file__).with_name("models.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_MODELS = _models_benchmark()
SPECS: tuple[ToolSpec, ...] = _MODELS.SPECS
SYSTEM = "You are a careful coding agent."


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
    """What one adapter measured at one size (CPU times in ms)."""

    ours: list[float] = field(default_factory=list)
    create: list[float] = field(default_factory=list)
    full_collections: int = 0
    longest_pause: float = 0.0


def make_adapter(kind: str, url: str) -> tuple[Model, Callable[[Model, Request], None]]:
    """The adapter, and the same request sent through the SDK's typed call on the adapter's own client."""
    if kind == "Anthropic":
        model: Model = Anthropic("claude-bench", base_url=url, api_key="k", max_tokens=1024, retries=0)

        def create(model: Model, request: Request) -> None:
            assert isinstance(model, Anthropic)
            with model._client().messages.stream(**model._build_request_kwargs(request)) as stream:
                stream.get_final_message()

        return model, create
    cls = OpenAICompatible if kind == "OpenAICompatible" else OpenAIResponses
    model = cls("gpt-bench", base_url=url + "/v1", api_key="k", retries=0)

    def create_openai(model: Model, request: Request) -> None:
        assert isinstance(model, OpenAICompatible | OpenAIResponses)
        client = model._client()
        call = client.chat.completions.create if isinstance(model, OpenAICompatible) else client.responses.create
        for _ in call(**model._request_kwargs(request)):
            pass

    return model, create_openai


def run(kind: str, url: str, size: int, turns: int, warmup: int = 3) -> Figures:
    """`turns` requests through `respond`, then through `create`, of a conversation that starts at `size` messages
    and grows by two each turn."""
    model, create = make_adapter(kind, url)
    messages = conversation(size)
    figures = Figures()

    def turn(send: Callable[[Request], Any], into: list[float] | None) -> None:
        request = Request(SYSTEM, tuple(messages), SPECS)
        started = time.process_time()
        reply = send(request)
        spent = time.process_time() - started
        if into is not None:
            into.append(spent * 1e3)
        messages.append(reply.message if reply is not None else Message.assistant("Done."))
        messages.append(Message.user(f"Good. Now look at the next module ({len(messages)})."))

    for _ in range(warmup):
        turn(model.respond, None)
    gc.collect()
    with Pauses() as pauses:
        for _ in range(turns):
            turn(model.respond, figures.ours)
    figures.full_collections = sum(1 for generation, _ in pauses.pauses if generation == 2)
    figures.longest_pause = max((p for _, p in pauses.pauses), default=0.0) * 1e3
    turn(lambda request: create(model, request), None)  # warm up the typed call
    deadline = time.monotonic() + CREATE_BUDGET_S
    while len(figures.create) < turns and (len(figures.create) < 3 or time.monotonic() < deadline):
        turn(lambda request: create(model, request), figures.create)
    return figures


def report(kind: str, size: int, f: Figures) -> str:
    med = statistics.median
    return (
        f"{kind:<17}{size:>9}{med(f.ours):>10.2f}{max(f.ours):>9.2f}{med(f.create):>11.2f}"
        f"{med(f.create) / med(f.ours):>8.0f}x{f.full_collections:>6}{f.longest_pause:>10.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000,5000", help="messages at the start (100,1000,5000)")
    parser.add_argument("--turns", type=int, default=30, help="requests per adapter and size (30)")
    parser.add_argument("--adapters", default="Anthropic,OpenAICompatible,OpenAIResponses")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]

    proc, url = start_server()
    failed: list[str] = []
    try:
        print(f"alpineagents from {Path(alpineagents.__file__).parent}")
        print(f"{args.turns} requests per adapter and size (each adds 2 messages); client CPU ms per request")
        print(
            f"{'adapter':<17}{'messages':>9}{'ours':>10}{'ours max':>9}{'create':>11}{'':>9}{'full':>6}{'pause ms':>10}"
        )
        for kind in args.adapters.split(","):
            for size in sizes:
                figures = run(kind, url, size, args.turns)
                print(report(kind, size, figures), flush=True)
                if size == max(sizes) and statistics.median(figures.ours) > OURS_LIMIT_MS:
                    failed.append(f"{kind} at {size} messages: {statistics.median(figures.ours):.2f} ms a request")
                if figures.longest_pause > PAUSE_LIMIT_MS:
                    failed.append(f"{kind} at {size} messages: a collection paused {figures.longest_pause:.1f} ms")
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(5)
    print(
        "ours: median (and max) CPU time of respond, to the last stream event; create: the median of the same "
        "request through the SDK's typed call (and how many times ours); full: collections of generation 2 during "
        "the respond turns; pause ms: the longest collection pause in them"
    )
    for failure in failed:
        print("FAIL:", failure)
    if not failed:
        print(
            f"OK: at most {OURS_LIMIT_MS:g} ms a request at {max(sizes)} messages, no pause over {PAUSE_LIMIT_MS:g} ms"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
