"""Many runs in one process: N `arun`s at once, and what Python's garbage collector costs them.

Run: `.venv/bin/python benchmarks/many_runs.py` (`--runs 10000`, `--turns 5`, `--repeat 1`,
`--modes census,default,off,freeze,threshold,both`, `--threshold 100000,50,1000`, `--src DIR`).

The workload is `fleet.py`'s with no store: each run has `turns` turns (an async tool call each, then the answer)
against a model that awaits 10 ms per request, with `reporter=None, human=None`. Each figure comes from a fresh
child process, so that one setting cannot leave the collector in a state the next one inherits:

- `census`: the tracked objects each run holds while every run is parked in its first model request (the
  objects made since start-up, counted after a full collection, divided by N), split by who made them: this
  library, asyncio and the interpreter (contexts, tokens), the benchmark (its model, its tasks). Containers
  (dicts, lists, tuples, cells) count for the first owner found that refers to them. Here the model's first
  request waits on a future of its own instead of `asyncio.sleep`, so that all runs can be held at that point: two
  objects fewer than a sleep (its timer handle and that handle's arguments).
- `default`: the wall time of the N runs with the collector's default settings, the collector's time in it (the
  time between the "start" and "stop" calls of `gc.callbacks`) and its share, and the passes of each generation.
- `off`: the same with `gc.disable()`, for reference.
- `freeze`: `gc.freeze()` after start-up (imports done, one full collection): the objects alive then are never
  examined again.
- `threshold`: `gc.set_threshold(*THRESHOLD)` before the runs (default 100000, 50, 1000).
- `both`: the freeze and the raised threshold together.

`--src DIR` (repeatable) puts DIR first on `sys.path` in the children, to measure another copy of the library
(`--src /path/to/other/checkout/src`); with several, the figures alternate between them (before, after, before,
after, ...) `--repeat` times, and a summary gives the median of each.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# This folder holds concurrent.py, which would shadow the standard library's package: drop it from the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
MODES = ("census", "default", "off", "freeze", "threshold", "both")
THRESHOLD = (100_000, 50, 1000)


def _load_fleet() -> Any:
    """`fleet.py` of this folder, whose model, tool and replies are the workload."""
    spec = importlib.util.spec_from_file_location("benchmarks_fleet", HERE / "fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# --- the collector's time -------------------------------------------------------------------------------------


class Collector:
    """Sums the collector's time through `gc.callbacks` and counts its passes per generation."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.passes = [0, 0, 0]
        self.by_generation = [0.0, 0.0, 0.0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            took = time.perf_counter() - self._started
            self.seconds += took
            self.passes[info["generation"]] += 1
            self.by_generation[info["generation"]] += took

    def __enter__(self) -> Collector:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def timed(mode: str, runs: int, turns: int) -> dict[str, Any]:
    """The wall time of `runs` concurrent runs under `mode`, and the collector's time and passes in it."""
    fleet = _load_fleet()
    gc.collect()
    threshold = gc.get_threshold()
    if mode in ("freeze", "both"):
        gc.freeze()
    if mode in ("threshold", "both"):
        gc.set_threshold(*THRESHOLD)
    if mode == "off":
        gc.disable()
    try:
        with Collector() as collector:
            wall = asyncio.run(fleet.fleet(None, runs, turns))
    finally:  # as it was (the smoke test runs this in the test process)
        gc.enable()
        gc.set_threshold(*threshold)
        gc.unfreeze()
    return {"wall": wall, "gc": collector.seconds, "passes": collector.passes, "full": collector.by_generation[2]}


# --- the objects of a run in flight ---------------------------------------------------------------------------

_PACKAGE_MARK = f"{os.sep}alpineagents{os.sep}"
_ASYNCIO_MARK = f"{os.sep}asyncio{os.sep}"


def _owner_of_code(filename: str) -> str | None:
    if _PACKAGE_MARK in filename:
        return "alpineagents"
    if _ASYNCIO_MARK in filename:
        return "asyncio"
    return None


def _owner_of_module(module: object) -> str | None:
    if not isinstance(module, str):
        return None
    if module == "alpineagents" or module.startswith("alpineagents."):
        return "alpineagents"
    if module in ("asyncio", "_asyncio", "_contextvars", "contextvars") or module.startswith("asyncio."):
        return "asyncio"
    if module.startswith("benchmarks_") or module == "__main__":
        return "benchmark"
    return None


_HELD_FOR_OTHERS = frozenset({"Token", "Context", "hamt", "hamt_bitmap_node", "hamt_array_node", "deque"})
"""Types counted for whoever refers to them (the frame that set a context variable holds its token)."""


def owner(obj: object) -> str | None:
    """Who made `obj`, when its own type or code says so: "alpineagents", "asyncio" or "benchmark"."""
    code = getattr(obj, "cr_code", None) or getattr(obj, "gi_code", None) or getattr(obj, "ag_code", None)
    if code is not None:
        return _owner_of_code(code.co_filename) or "benchmark"
    kind = type(obj)
    if kind.__name__ in ("function", "method", "builtin_function_or_method"):
        func = getattr(obj, "__func__", obj)
        found = _owner_of_module(getattr(func, "__module__", None))
        if found is None and kind.__name__ == "builtin_function_or_method":
            found = owner(getattr(obj, "__self__", None))  # a bound method of a C type (a queue's put)
        return found
    if kind.__module__ == "builtins" or kind.__name__ in _HELD_FOR_OTHERS:
        return None
    return _owner_of_module(kind.__module__) or "other"


def attribute(objects: list[object]) -> dict[str, Counter[str]]:
    """The objects by owner, then by type name: those whose type or code names an owner, then the containers
    they refer to (breadth first, the first owner found wins)."""
    ids = {id(obj): obj for obj in objects}
    found: dict[int, str] = {}
    frontier: list[object] = []
    for obj in objects:
        who = owner(obj)
        if who is not None:
            found[id(obj)] = who
            frontier.append(obj)
    while frontier:
        following: list[object] = []
        for obj in frontier:
            who = found[id(obj)]
            for child in gc.get_referents(obj):
                key = id(child)
                if key in ids and key not in found:
                    found[key] = who
                    following.append(child)
        frontier = following
    table: dict[str, Counter[str]] = {}
    for obj in objects:
        who = found.get(id(obj), "unattributed")
        table.setdefault(who, Counter())[type(obj).__name__] += 1
    return table


def census(runs: int, turns: int) -> dict[str, Any]:
    """Hold every run at its first model request, then count the tracked objects made since start-up."""
    fleet = _load_fleet()
    held: list[asyncio.Future[None]] = []
    counts: dict[str, Any] = {}

    def count() -> None:
        gc.collect()
        objects = gc.get_objects()  # the frozen start-up objects are not listed
        counts["total"] = len(objects)
        table = attribute(objects)
        counts["by_owner"] = {who: sum(types.values()) for who, types in table.items()}
        counts["types"] = {who: dict(types.most_common(12)) for who, types in table.items()}
        del objects, table
        for future in held:
            future.set_result(None)

    class HeldModel(fleet.SleepyModel):  # type: ignore[misc, name-defined]
        async def arespond(self, request: Any, on_text: Any = None, on_event: Any = None) -> Any:
            if len(request.messages) > 1:  # not the first request
                return await super().arespond(request, on_text, on_event)
            loop = asyncio.get_running_loop()
            future = loop.create_future()
            held.append(future)
            if len(held) == runs:
                loop.call_soon(count)  # once this run, the last, is parked too
            await future
            return self.respond(request, on_text, on_event)

    fleet.SleepyModel = HeldModel
    gc.collect()
    gc.freeze()
    try:
        asyncio.run(fleet.fleet(None, runs, turns))
    finally:
        gc.unfreeze()
    held.clear()
    return counts


# --- the children and the summary -----------------------------------------------------------------------------


def child(mode: str, runs: int, turns: int) -> dict[str, Any]:
    return census(runs, turns) if mode == "census" else timed(mode, runs, turns)


def run_child(src: str | None, mode: str, runs: int, turns: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", mode, "--runs", str(runs), "--turns", str(turns)]
    command += ["--threshold", ",".join(map(str, THRESHOLD))]
    if src is not None:
        command += ["--src", src]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def show(label: str, mode: str, result: dict[str, Any], runs: int) -> None:
    if mode == "census":
        owners = ", ".join(f"{who} {n / runs:.1f}" for who, n in sorted(result["by_owner"].items()))
        print(f"  {label} census: {result['total'] / runs:.1f} tracked objects per run in flight ({owners})")
        for who, types in sorted(result["types"].items()):
            shown = ", ".join(f"{name} {n / runs:.2f}" for name, n in types.items() if n / runs >= 0.05)
            print(f"      {who}: {shown}")
        return
    share = result["gc"] / result["wall"]
    passes = result["passes"]
    print(
        f"  {label} {mode:>9}: {result['wall']:6.2f} s, collector {result['gc']:5.2f} s ({share:4.0%}), "
        f"passes gen0/1/2 {passes[0]}/{passes[1]}/{passes[2]} (full passes {result['full']:.2f} s)"
    )


def summary(results: dict[tuple[str, str], list[dict[str, Any]]], labels: dict[str, str], runs: int) -> None:
    print("medians:")
    for (src, mode), rows in results.items():
        if mode == "census":
            print(f"  {labels[src]} objects per run: {statistics.median(r['total'] for r in rows) / runs:.1f}")
            continue
        wall = statistics.median(r["wall"] for r in rows)
        collector = statistics.median(r["gc"] for r in rows)
        share = statistics.median(r["gc"] / r["wall"] for r in rows)
        full = statistics.median(r["passes"][2] for r in rows)
        print(
            f"  {labels[src]} {mode:>9}: {wall:6.2f} s, collector {collector:5.2f} s ({share:4.0%}), "
            f"{full:g} full passes"
        )


def main(argv: list[str] | None = None) -> None:
    global THRESHOLD
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--threshold", default=",".join(map(str, THRESHOLD)))
    parser.add_argument("--src", action="append", default=[], help="a folder put first on sys.path (repeatable)")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    THRESHOLD = tuple(int(part) for part in options.threshold.split(","))  # type: ignore[assignment]
    if options.child is not None:
        print(json.dumps(child(options.child, options.runs, options.turns)))
        return
    modes = options.modes.split(",")
    sources: list[str | None] = list(options.src) or [None]
    labels = {src: (src or "installed") for src in sources}
    print(
        f"{options.runs} arun() at once, {options.turns} tool turns + the answer each, model 10 ms, no store; "
        f"threshold mode: gc.set_threshold{THRESHOLD}"
    )
    results: dict[tuple[str | None, str], list[dict[str, Any]]] = {}
    for _ in range(options.repeat):
        for mode in modes:
            for src in sources:
                result = run_child(src, mode, options.runs, options.turns)
                results.setdefault((src, mode), []).append(result)
                show(labels[src], mode, result, options.runs)
    if options.repeat > 1 or len(sources) > 1:
        summary(results, labels, options.runs)  # type: ignore[arg-type]


def _use_src(argv: list[str]) -> None:
    """In a child, put the `--src` folder first on `sys.path` before the library is imported."""
    if "--child" in argv and "--src" in argv:
        sys.path.insert(0, os.path.abspath(argv[argv.index("--src") + 1]))


if __name__ == "__main__":
    _use_src(sys.argv)
    main()
