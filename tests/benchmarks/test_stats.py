"""The one percentile every benchmark reports its latencies with (benchmarks/stats.py)."""

from __future__ import annotations

from benchmarks.stats import percentile


def test_percentile_is_the_nearest_rank_of_the_values_in_any_order() -> None:
    values = [float(v) for v in range(100, 0, -1)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([3.0, 1.0], 0.5) == 1.0
    assert percentile([7.0], 0.99) == 7.0


def test_the_percentile_of_no_values_is_zero_so_an_empty_load_still_prints() -> None:
    assert percentile([], 0.5) == 0.0


def test_percentile_takes_any_iterable_once() -> None:
    assert percentile((v for v in [5.0, 1.0, 3.0]), 0.5) == 3.0
