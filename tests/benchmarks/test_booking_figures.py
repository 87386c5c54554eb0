"""The figures of make bench-booking from its rounds: each configuration's medians and the
ratio of booking's CPU, platform over stripped. No service, no timing."""

from __future__ import annotations

import pytest

from benchmarks import cpu as bench_cpu
from benchmarks import interpreters
from benchmarks.booking import (
    CheckoutFigures,
    ReplicaShare,
    Run,
    boundary_ratios,
    cpu_ratios,
    summarise,
)


def _round(rate: float, booking_cpu_ms: float, dropped: bool = False) -> CheckoutFigures:
    spent = bench_cpu.Spent({bench_cpu.SELF: booking_cpu_ms}, 3.0, 0.9, 2, 0.2, 10.0)
    checkouts = Run([0.001 * i for i in range(1, 101)], ["OK"] * 100, elapsed=100 / rate)
    race = Run([0.1, 0.2], ["OK", "ALREADY_EXISTS"], elapsed=0.2)
    return CheckoutFigures(checkouts, race, spent, dropped)


def test_a_configuration_s_figures_are_the_medians_of_its_rounds() -> None:
    rounds = [_round(500.0, 1.2), _round(400.0, 1.5), _round(600.0, 1.1, dropped=True)]
    figures = summarise(rounds, tps=2000.0)
    assert figures["checkouts_per_s"] == 500.0
    assert figures["ratio"] == 0.25
    assert figures["booking_cpu_ms_per_checkout"] == 1.2
    assert figures["booking_cpu_ms_per_round"] == [1.2, 1.5, 1.1]
    assert figures["p50_ms"] == 50.0
    assert figures["race_winners"] == 1
    assert figures["spans_dropped"] is True


def test_the_cpu_ratio_is_of_the_medians_and_each_round_s_pair_is_shown() -> None:
    platform = [_round(500.0, 1.3), _round(500.0, 1.6), _round(500.0, 1.2)]
    stripped = [_round(600.0, 1.0), _round(600.0, 1.1), _round(600.0, 1.2)]
    medians, per_round = cpu_ratios(platform, stripped)
    assert medians == pytest.approx(1.3 / 1.1)
    assert per_round == [1.3, 1.455, 1.0]


def test_the_boundary_s_cost_is_the_stripped_figures_over_those_without_it() -> None:
    on = {"checkouts_per_s": 750.0, "booking_cpu_ms_per_checkout": 1.3}
    off = {"checkouts_per_s": 800.0, "booking_cpu_ms_per_checkout": 1.25}
    assert boundary_ratios(on, off) == {
        "checkouts_per_s_ratio_on_off": 0.938,
        "booking_cpu_ms_per_checkout_ratio_on_off": 1.04,
    }


def test_two_interpreters_are_compared_by_the_medians_of_their_replicas_cpu_per_checkout() -> None:
    # Round by round the first replica, which leads the relay, spends more: 1.4 against 1.0.
    per_checkout = {"/a/python": [1.4, 1.0, 1.4, 1.0], "/b/python": [1.0, 1.4, 1.0, 1.4]}
    summary = interpreters.summary(per_checkout, ("/a/python", "/b/python"))
    assert summary["median_cpu_ms_per_checkout"] == {"/a/python": 1.2, "/b/python": 1.2}
    assert summary["other_over_this"] == 1.0  # the leader's extra work cancels
    faster = {"/a/python": [1.4, 1.0], "/b/python": [0.9, 1.26]}  # b: 10 % less in both places
    assert interpreters.summary(faster, ("/a/python", "/b/python"))["other_over_this"] == 0.9


def test_a_replica_s_share_is_its_cpu_over_the_checkouts_it_answered() -> None:
    assert ReplicaShare("/a/python", 2000, 2600.0).cpu_ms_per_checkout == 1.3
    assert ReplicaShare("/a/python", 0, 10.0).cpu_ms_per_checkout == 0.0
