"""Smoke tests of the benchmarks: their pieces run and print at a small size (the figures are not checked)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from scriptload import load_script


def test_turns_benchmark_runs_at_a_small_size(capsys: pytest.CaptureFixture[str]) -> None:
    turns = load_script("benchmarks", "turns")
    assert turns.sync_run(5) > 0
    assert turns.async_run(5) > 0
    floor = turns.Floor()
    try:
        assert floor.time(3) > 0
        assert floor.time(3, turns.GAP) > 0
        in_sync = turns.Samples()
        turns.sample_sync(in_sync, floor, {50: 1, 800: 1})
    finally:
        floor.close()
    in_async = turns.Samples()
    turns.sample_async(in_async, {50: 1, 800: 1})
    turns.print_sync("test", in_sync)
    turns.print_async("arun() test", in_async)
    out = capsys.readouterr().out
    assert out.count("above the in-turn floor") == 2
    assert "800/50 ratio" in out and "peak traced memory" in out
    assert 0 < in_sync.memory < 50 and 0 < in_async.memory < 50


def test_otel_benchmark_runs_at_a_small_size(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_script("benchmarks", "otel")
    bench.main(turns=5, rounds=1)
    out = capsys.readouterr().out
    assert out.count("tracing off") == 2 and "10 spans a run" in out


def test_fleet_benchmark_runs_at_a_small_size(tmp_path: Path) -> None:
    fleet = load_script("benchmarks", "fleet")
    written: dict[str, int] = {}
    for kind in ("none", "file", "sqlite"):
        folder = tmp_path / kind
        folder.mkdir()
        store = fleet.make_store(kind, folder)
        writes = fleet.count_writes(store) if store is not None else [0]
        assert asyncio.run(fleet.fleet(store, 5, 2)) > 0
        written[kind] = writes[0]
    assert written["none"] == 0
    assert written["file"] == written["sqlite"] > 5  # the same save points with either store


def test_long_context_benchmark_runs_at_a_small_size(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_script("benchmarks", "long_context")
    assert bench.main(["--messages", "60", "--turns", "3"]) == 0
    out = capsys.readouterr().out
    for adapter in ("Anthropic", "OpenAICompatible", "OpenAIResponses"):
        assert f"\n{adapter} " in out
    assert "OK: the adapter's own share is under 1 ms" in out
