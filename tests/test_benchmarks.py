"""Smoke tests of the benchmarks: their pieces run and print at a small size (the figures are not checked)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from helpers.scriptload import load_script


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
    assert bench.main(["--sizes", "20,60", "--turns", "3"]) == 0
    out = capsys.readouterr().out
    for adapter in ("Anthropic", "OpenAICompatible", "OpenAIResponses"):
        assert f"\n{adapter} " in out
    assert "OK: at most 5 ms a request at 60 messages" in out


def test_many_runs_benchmark_runs_at_a_small_size(capsys: pytest.CaptureFixture[str]) -> None:
    many = load_script("benchmarks", "many_runs")
    threshold = many.gc.get_threshold()
    counted = many.child("census", 20, 2)
    assert counted["total"] > 20 * 10 and counted["by_owner"]["alpineagents"] > 0
    for mode in ("default", "off", "freeze", "threshold", "both"):
        result = many.child(mode, 20, 2)
        assert result["wall"] > 0 and result["gc"] >= 0 and len(result["passes"]) == 3
        many.show("test", mode, result, 20)
    assert many.gc.isenabled() and many.gc.get_threshold() == threshold and many.gc.get_freeze_count() == 0
    many.show("test", "census", counted, 20)
    out = capsys.readouterr().out
    assert "tracked objects per run in flight" in out and out.count("collector") == 5


def test_many_runs_benchmark_measures_a_given_source_folder() -> None:
    many = load_script("benchmarks", "many_runs")
    result = many.run_child(str(Path(__file__).resolve().parent.parent / "src"), "default", 10, 1)
    assert result["wall"] > 0


def test_viewer_list_benchmark_runs_at_a_small_size(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    viewer_list = load_script("benchmarks", "viewer_list")
    monkeypatch.setattr(sys, "argv", ["viewer_list.py", "--runs", "150", "--stores", "sqlite"])
    viewer_list.main()
    out = capsys.readouterr().out
    assert "content search (1 run in 100)" in out and "the search says: 2 of 150 runs" in out


def test_lone_turn_benchmark_compares_two_source_folders(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_script("benchmarks", "lone_turn")
    src = str(Path(__file__).resolve().parents[1] / "src")
    bench.main(["--old", src, "--pairs", "2", "--turns", "3"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["file", "wall"],
        ["file", "cpu"],
        ["sqlite", "wall"],
        ["sqlite", "cpu"],
    ]
    assert all("new/old median" in line and "n=2" in line for line in lines)
    with pytest.raises(SystemExit):
        bench.main(["--old", str(Path(__file__).parent)])
    load_script("benchmarks", "store").lone_turn_vs([src, "--pairs", "1", "--turns", "2", "--stores", "none"])
    assert [line.split()[:2] for line in capsys.readouterr().out.splitlines()] == [["none", "wall"], ["none", "cpu"]]
