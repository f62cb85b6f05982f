"""What serving costs: the latency `alpineagents.serve` adds to the first event and to each event, and how many
streams one server process holds.

Run: `.venv/bin/python benchmarks/serve.py` (`--runs 30`, `--words 400`, `--streams 1000`).

The server is `alpineagents serve` in a child process (uvicorn, one process) over a FileStore in a temporary
folder in memory (`/dev/shm`), its Agent a scripted model with no network: each reply streams `words` words, and each word is the time
(`time.perf_counter_ns`, one clock for every process of the machine) at which the model handed it over. So the
client knows, for every piece of text it reads, how long it took from the model to the client.

- **first event**: from the client's `POST /api/runs` (with `Accept: text/event-stream`) to the first `TextDelta`
  it reads, against `agent.astream` in one process with the same model and store (what the server adds: HTTP, the
  JSON of the request, the run's start and the stream's encoding). Median and 90th percentile over `runs`.
- **per event**: for every word of a streamed reply, the time from the model's `on_text` to the client reading it,
  in the native dialect and in AG-UI's (median and 90th percentile over all words of all runs). The server sends
  what is new each time it wakes, so a reader that falls behind gets several words in one event.
- **streams held**: `streams` clients read one run whose model writes a word every 50 ms for as long as the test
  lasts; the figures are the server's resident memory before and with every stream open (and per stream), and
  whether each stream got the words written while all were open.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
MEMORY = "/dev/shm" if os.path.isdir("/dev/shm") else None
"""Where the stores go: a folder in memory where there is one, so that the figures are the server's and not the
disk's (a FileStore's first save of a run waits for its fsyncs, which vary with what else the disk does)."""
# This folder holds concurrent.py, which would shadow the standard library's package: drop it from the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]


def clock_agent(words: int, delay: float) -> Any:
    """An Agent whose every reply is `words` words, each the clock reading when the model handed it over."""
    from alpineagents import Agent
    from alpineagents.models.base import Model
    from alpineagents.types import Message, Reply, TextBlock, Usage

    class Clock(Model):
        provider = "bench"
        name = "clock"
        context_window = 1_000_000

        def respond(self, request: Any, on_text: Any = None, on_event: Any = None) -> Reply:
            pieces = []
            for _ in range(words):
                if delay:
                    time.sleep(delay)
                piece = f"{time.perf_counter_ns()} "
                pieces.append(piece)
                if on_text is not None:
                    on_text(piece)
            message = Message("assistant", (TextBlock("".join(pieces)),))
            return Reply(message, Usage(input_tokens=1, output_tokens=words), stop_reason="end_turn")

    return Agent(Clock(), reporter=None, human=None)


def serve_child(port: int, store: str, words: int, delay: float) -> None:
    """The server process: `serve.app` of the clock Agent on 127.0.0.1:port."""
    from alpineagents import FileStore, serve

    app = serve.app(clock_agent(words, delay), store=FileStore(store))
    sock = serve.listen("127.0.0.1", port, None)
    print("ready", flush=True)
    serve.run_server(app, sock)


def start_server(store: str, words: int, delay: float) -> tuple[subprocess.Popen[str], str]:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    child = subprocess.Popen(
        [sys.executable, __file__, "--child", str(port), store, str(words), str(delay)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child, f"http://127.0.0.1:{port}"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def sse_data(buffer: str) -> tuple[list[str], str]:
    """The data of each complete SSE event in `buffer`, and what is left."""
    out = []
    while "\n\n" in buffer:
        block, buffer = buffer.split("\n\n", 1)
        data = "".join(line[6:] for line in block.split("\n") if line.startswith("data: "))
        if data:
            out.append(data)
    return out, buffer


def text_in(data: str, dialect: str) -> str:
    event = json.loads(data)
    if dialect == "native":
        return event.get("text", "") if event.get("type") == "TextDelta" else ""
    return event.get("delta", "") if event.get("type") == "TEXT_MESSAGE_CONTENT" else ""


async def one_run(http: httpx.AsyncClient, dialect: str, lags: list[float]) -> float:
    """One run through the server: the time to the first text, and each word's lag appended to `lags` (ms)."""
    started = time.perf_counter()
    first = 0.0
    url = "/api/runs" if dialect == "native" else "/agui"
    body: dict[str, Any] = {"prompt": "go"}
    if dialect == "agui":
        body = {
            "threadId": os.urandom(8).hex(),
            "runId": "r",
            "messages": [{"id": "u", "role": "user", "content": "go"}],
        }
    async with http.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}) as response:
        buffer = ""
        async for chunk in response.aiter_text():
            now = time.perf_counter_ns()
            datas, buffer = sse_data(buffer + chunk)
            for data in datas:
                text = text_in(data, dialect)
                if text and not first:
                    first = time.perf_counter() - started
                lags.extend((now - int(word)) / 1e6 for word in text.split())
    return first * 1000


async def in_process_first(agent: Any) -> float:
    """The time to the first TextDelta of `agent.astream`, in this process (ms)."""
    from alpineagents.events import TextDelta

    started = time.perf_counter()
    first = 0.0
    async for event in agent.astream("go"):
        if isinstance(event, TextDelta) and not first:
            first = time.perf_counter() - started
    return first * 1000


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def latency(runs: int, words: int) -> None:
    """First-event and per-word figures; the in-process run and the two dialects take turns, run by run."""
    from alpineagents import FileStore

    folder = tempfile.mkdtemp(dir=MEMORY)
    child, url = start_server(folder, words, 0.0005)
    agent = clock_agent(words, 0.0005).copy(store=FileStore(tempfile.mkdtemp(dir=MEMORY)))
    firsts: dict[str, list[float]] = {"in process": [], "native": [], "agui": []}
    lags: dict[str, list[float]] = {"native": [], "agui": []}

    async def main() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            for dialect in lags:
                await one_run(http, dialect, [])  # warm-up
            await in_process_first(agent)
            for _ in range(runs):
                firsts["in process"].append(await in_process_first(agent))
                for dialect, found in lags.items():
                    firsts[dialect].append(await one_run(http, dialect, found))

    try:
        asyncio.run(main())
    finally:
        child.terminate()
        child.wait(10)
    local = statistics.median(firsts["in process"])
    for name, values in firsts.items():
        added = "" if name == "in process" else f"  (adds {statistics.median(values) - local:5.2f} ms)"
        print(f"first event, {name:10}: median {statistics.median(values):6.2f} ms  p90 {p90(values):6.2f} ms{added}")
    for name, values in lags.items():
        print(
            f"per word, model to client ({name:6}): median {statistics.median(values):5.2f} ms  "
            f"p90 {p90(values):5.2f} ms  ({len(values)} words, one every 0.5 ms)"
        )


def held(streams: int) -> None:
    folder = tempfile.mkdtemp(dir=MEMORY)
    child, url = start_server(folder, 100_000, 0.05)
    try:

        async def main() -> tuple[float, float, int]:
            limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=streams + 10)
            async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
                run = (await http.post("/api/runs", json={"prompt": "go"})).json()
                await asyncio.sleep(0.5)
                saved = (await http.get(f"/api/runs/{run['id']}")).json()["run"]["entries"]
                before = rss_mb(child.pid)
                opened = 0
                got = [0] * streams
                all_open = asyncio.Event()

                async def read(n: int) -> None:
                    nonlocal opened
                    path = f"/api/runs/{run['id']}/events"
                    async with http.stream("GET", path, params={"after": saved}) as response:
                        opened += 1
                        if opened == streams:
                            all_open.set()
                        async for chunk in response.aiter_text():
                            if all_open.is_set():
                                got[n] += chunk.count("TextDelta")
                            if got[n] >= 3:
                                return

                readers = [asyncio.create_task(read(n)) for n in range(streams)]
                await asyncio.wait_for(all_open.wait(), 300)
                await asyncio.sleep(1.0)
                during = rss_mb(child.pid)
                outcomes = await asyncio.wait_for(asyncio.gather(*readers, return_exceptions=True), 300)
                failed = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
                if failed:
                    print(f"{len(failed)} streams failed, the first with {failed[0]!r}")
                await http.post(f"/api/runs/{run['id']}/cancel")
                return before, during, sum(1 for n in got if n >= 3)

        before, during, fed = asyncio.run(main())
        print(
            f"{streams} streams of one run held by one server process: RSS {before:.1f} MB -> {during:.1f} MB "
            f"({(during - before) * 1024 / streams:.1f} kB a stream); {fed}/{streams} streams got the new words"
        )
    finally:
        child.terminate()
        child.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--words", type=int, default=400)
    parser.add_argument("--streams", type=int, default=1000)
    args = parser.parse_args()
    latency(args.runs, args.words)
    held(args.streams)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        serve_child(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    else:
        main()
