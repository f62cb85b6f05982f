"""Benchmark: the model adapters' own time per request, beside the bare SDK call on the same local server.

The fake provider server (tests/servers/provider.py) runs in a subprocess on 127.0.0.1. For a context of N
messages with tool calls (200 by default), it measures per request:

- bare SDK: the official SDK client streaming the same, pre-built request (what any caller pays);
- adapter: `Anthropic.respond` / `OpenAICompatible.respond` / `OpenAIResponses.respond` / `Gemini.respond` /
  `Bedrock.respond` end to end (Gemini's REST stream and Bedrock's Converse event stream come from the same
  server);
- own: the adapter's own work, timed directly: mapping the Request to the SDK's arguments from scratch (the
  adapter's wire form of earlier requests is emptied first; `long_context.py` measures a conversation that grows,
  where only the new messages are mapped), the per-chunk work while streaming, and building the Reply from the
  SDK's result.

Run:  .venv/bin/python benchmarks/models.py [--requests 200] [--messages 200]
It fails (exit 1) if the adapter's own cost is 10 % of the bare SDK call or more, or if the own cost per
message at 4N messages is more than twice that at N/4 (it should stay flat: each message is serialised once).
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/concurrent.py would shadow the standard library's `concurrent` package: drop this folder from the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import TypeVar  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from alpineagents.models import Anthropic, Bedrock, Gemini, OpenAICompatible, OpenAIResponses  # noqa: E402
from alpineagents.types import Message, Request, TextBlock, ToolCall, ToolResultBlock, ToolSpec  # noqa: E402

M = TypeVar("M", Anthropic, OpenAICompatible, OpenAIResponses, Gemini, Bedrock)

SPECS = (
    ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec("search", "Search the code", {"type": "object", "properties": {"q": {"type": "string"}}}),
)


def context(messages: int) -> Request:
    """A conversation of `messages` messages: user asks, assistant calls a tool, the result comes back."""
    out: list[Message] = [Message.user("Find the bug in the parser and fix it. " * 4)]
    turn = 0
    while len(out) < messages:
        turn += 1
        call = ToolCall("read_file", {"path": f"src/module_{turn}.py", "options": {"lines": [1, 200]}}, f"call_{turn}")
        out.append(Message("assistant", (TextBlock(f"Let me look at module {turn}. " * 3), call)))
        body = f"def f{turn}(x):\n    return x * {turn}\n" * 12
        out.append(Message("user", (ToolResultBlock(call.id, body, "read_file"),)))
    return Request("You are a careful coding agent.", tuple(out[:messages]), SPECS)


def best_of(rounds: int, fn: Callable[[], None], count: int, *, low: bool = False) -> float:
    """Median (or, with `low`, the lowest) over `rounds` of the mean µs per call of `fn` over `count` calls.

    The lowest is the least disturbed by other work on the machine; it is used for the short own-cost loops.
    """
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(count):
            fn()
        samples.append((time.perf_counter() - start) / count * 1e6)
    return min(samples) if low else statistics.median(samples)


def start_server() -> tuple[subprocess.Popen[str], str]:
    """The fake provider server in a subprocess, and its URL."""
    sys.path.append(str(ROOT / "tests"))
    from servers.provider import start_in_subprocess

    return start_in_subprocess()


def bench_anthropic(url: str, request: Request, count: int, rounds: int) -> dict[str, float]:
    import anthropic

    model = Anthropic("claude-bench", base_url=url, api_key="k", max_tokens=1024, retries=0)
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
    model._client = lambda: client  # type: ignore[method-assign]  # same client for both
    kwargs = model._build_request_kwargs(request, 1024)

    def bare() -> None:
        with client.messages.stream(**kwargs) as stream:
            for _ in stream.text_stream:
                pass
            stream.get_final_message()

    def adapter() -> None:
        model.respond(request, lambda _t: None)

    with client.messages.stream(**kwargs) as stream:
        chunks = list(stream.text_stream)
        final = stream.get_final_message()

    def own() -> None:
        model._mapped.clear()
        model._build_request_kwargs(request, 1024)
        for chunk in chunks:
            (lambda _t: None)(chunk)
        model._to_reply(final)

    for fn in (bare, adapter):  # warm up
        for _ in range(5):
            fn()
    return {
        "bare": best_of(rounds, bare, count),
        "adapter": best_of(rounds, adapter, count),
        "own": best_of(max(rounds, 10), own, count, low=True),
    }


def bench_openai(url: str, request: Request, count: int, rounds: int) -> dict[str, float]:
    import openai

    model = OpenAICompatible("gpt-bench", base_url=url + "/v1", retries=0)
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    model._client = lambda: client  # type: ignore[method-assign]
    kwargs = model._request_kwargs(request)

    def bare() -> None:
        stream = client.chat.completions.create(**kwargs)
        for _ in stream:
            pass
        stream.close()

    def adapter() -> None:
        model.respond(request, lambda _t: None)

    chunks = list(client.chat.completions.create(**kwargs))

    def own() -> None:
        model._mapped.clear()
        _kwargs, reader = model._prepared(request, lambda _t: None)
        for chunk in chunks:
            reader.add(chunk)
        model._finish(reader, True)

    for fn in (bare, adapter):
        for _ in range(5):
            fn()
    return {
        "bare": best_of(rounds, bare, count),
        "adapter": best_of(rounds, adapter, count),
        "own": best_of(max(rounds, 10), own, count, low=True),
    }


def bench_responses(url: str, request: Request, count: int, rounds: int) -> dict[str, float]:
    import openai

    model = OpenAIResponses("gpt-bench", base_url=url + "/v1", retries=0)
    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    model._client = lambda: client  # type: ignore[method-assign]
    kwargs = model._request_kwargs(request)

    def bare() -> None:
        stream = client.responses.create(**kwargs)
        for _ in stream:
            pass
        stream.close()

    def adapter() -> None:
        model.respond(request, lambda _t: None)

    events = list(client.responses.create(**kwargs))

    def own() -> None:
        model._mapped.clear()
        _kwargs, reader = model._prepared(request, lambda _t: None)
        for event in events:
            reader.add(event)
        model._finish(reader, True)

    for fn in (bare, adapter):
        for _ in range(5):
            fn()
    return {
        "bare": best_of(rounds, bare, count),
        "adapter": best_of(rounds, adapter, count),
        "own": best_of(max(rounds, 10), own, count, low=True),
    }


def bench_gemini(url: str, request: Request, count: int, rounds: int) -> dict[str, float]:
    from google import genai

    model = Gemini("gemini-bench", base_url=url, api_key="k", retries=0)
    client = genai.Client(api_key="k", http_options={"base_url": url})
    model._client = lambda: client  # type: ignore[method-assign]
    kwargs = model._request_body(request)

    def bare() -> None:
        for _ in client.models.generate_content_stream(**kwargs):
            pass

    def adapter() -> None:
        model.respond(request, lambda _t: None)

    chunks = list(client.models.generate_content_stream(**kwargs))

    def own() -> None:
        model._mapped.clear()
        model._request_body(request)
        reader = model._reader(lambda _t: None)
        for chunk in chunks:
            reader.add(chunk)
        reader.reply()

    for fn in (bare, adapter):
        for _ in range(5):
            fn()
    return {
        "bare": best_of(rounds, bare, count),
        "adapter": best_of(rounds, adapter, count),
        "own": best_of(max(rounds, 10), own, count, low=True),
    }


def bench_bedrock(url: str, request: Request, count: int, rounds: int) -> dict[str, float]:
    import boto3.session
    from botocore.config import Config

    session = boto3.session.Session(
        aws_access_key_id="AKIABENCH", aws_secret_access_key="bench", region_name="us-east-1"
    )
    client = session.client("bedrock-runtime", endpoint_url=url, config=Config(retries={"total_max_attempts": 1}))
    model = Bedrock("anthropic.claude-bench-v1:0", client=client, retries=0)
    kwargs = model._converse_kwargs(request)

    def bare() -> None:
        for _ in client.converse_stream(**kwargs)["stream"]:
            pass

    def adapter() -> None:
        model.respond(request, lambda _t: None)

    events = list(client.converse_stream(**kwargs)["stream"])

    def own() -> None:
        model._mapped.clear()
        model._converse_kwargs(request)
        reader = model._reader(lambda _t: None)
        for event in events:
            reader.add(event)
        reader.reply()

    for fn in (bare, adapter):
        for _ in range(5):
            fn()
    return {
        "bare": best_of(rounds, bare, count),
        "adapter": best_of(rounds, adapter, count),
        "own": best_of(max(rounds, 10), own, count, low=True),
    }


def fresh(model: M) -> M:
    """The model with its wire form of earlier requests emptied, so the next request is mapped from scratch."""
    model._mapped.clear()
    return model


def scaling(make_own: Callable[[Request], Callable[[], None]], sizes: list[int]) -> list[tuple[int, float]]:
    out = []
    for size in sizes:
        fn = make_own(context(size))
        out.append((size, best_of(15, fn, 10, low=True)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100, help="requests per round (default 100)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the median is reported (default 5)")
    parser.add_argument("--messages", type=int, default=200, help="messages in the context (default 200)")
    args = parser.parse_args()

    proc, url = start_server()
    failed = False
    try:
        request = context(args.messages)
        print(f"context: {args.messages} messages with tool calls; {args.rounds} rounds x {args.requests} requests")
        print(f"{'adapter':<18}{'bare SDK µs':>14}{'adapter µs':>14}{'own µs':>10}{'own/bare':>10}")
        benches = (
            ("Anthropic", bench_anthropic),
            ("OpenAICompatible", bench_openai),
            ("OpenAIResponses", bench_responses),
            ("Gemini", bench_gemini),
            ("Bedrock", bench_bedrock),
        )
        for label, bench in benches:
            r = bench(url, request, args.requests, args.rounds)
            share = r["own"] / r["bare"]
            failed |= share >= 0.10
            print(f"{label:<18}{r['bare']:>14.0f}{r['adapter']:>14.0f}{r['own']:>10.0f}{share:>10.1%}")

        anthropic_model = Anthropic("claude-bench", max_tokens=1024)
        openai_model = OpenAICompatible("gpt-bench")
        responses_model = OpenAIResponses("gpt-bench")
        gemini_model = Gemini("gemini-bench")
        bedrock_model = Bedrock("anthropic.claude-bench-v1:0")
        sizes = [args.messages // 4, args.messages, args.messages * 4]
        print("\nown request mapping per message (µs) as the context grows:")
        for label, rows in (
            ("Anthropic", scaling(lambda r: lambda: fresh(anthropic_model)._build_request_kwargs(r, 1024), sizes)),
            ("OpenAICompatible", scaling(lambda r: lambda: fresh(openai_model)._request_kwargs(r), sizes)),
            ("OpenAIResponses", scaling(lambda r: lambda: fresh(responses_model)._request_kwargs(r), sizes)),
            ("Gemini", scaling(lambda r: lambda: fresh(gemini_model)._request_body(r), sizes)),
            ("Bedrock", scaling(lambda r: lambda: fresh(bedrock_model)._converse_kwargs(r), sizes)),
        ):
            per = [us / size for size, us in rows]
            cells = "  ".join(
                f"{size} msgs: {us:.0f} µs ({p:.2f}/msg)" for (size, us), p in zip(rows, per, strict=True)
            )
            print(f"  {label:<18}{cells}")
            failed |= per[-1] > per[0] * 2
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(5)
    print("\nFAIL" if failed else "\nOK: own cost under 10 % of the bare SDK call, and linear in the context")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
