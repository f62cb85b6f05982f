"""Smoke test of `benchmarks/turns.py`: its runs and its floor work at a tiny size (the figures are not checked)."""

from __future__ import annotations

from scriptload import load_script


def test_turns_benchmark_runs_at_a_tiny_size() -> None:
    turns = load_script("benchmarks", "turns")
    assert turns.sync_run(5) > 0
    assert turns.async_run(5) > 0
    floor = turns.Floor()
    try:
        assert floor.time(3) > 0
        assert floor.time(3, turns.GAP) >= 0
        run, back_to_back, in_turn, median = turns.paired(turns.sync_run, floor, 3, 3)
        assert run > 0 and back_to_back > 0 and in_turn > 0
        assert isinstance(median, float)
    finally:
        floor.close()
