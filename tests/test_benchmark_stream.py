"""Smoke test of benchmarks/stream.py: its pieces run at a small size (the figures are not checked)."""

from __future__ import annotations

from scriptload import load_script


def test_stream_benchmark_runs_at_a_small_size() -> None:
    stream = load_script("benchmarks", "stream")
    assert stream.no_reader(5) > 0
    seconds, events = stream.async_reader(5)
    assert seconds > 0 and events >= 5 * 4
    seconds, events = stream.sync_reader(5)
    assert seconds > 0 and events >= 5 * 4
