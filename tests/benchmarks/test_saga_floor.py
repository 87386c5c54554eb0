"""The pure logic of the saga floor: the parts' counters read from a /metrics page, the
work per saga from two readings, and the floor's CPU per saga and ratio from the prices.
No platform, no timing."""

from __future__ import annotations

import pytest

from benchmarks import units
from benchmarks.saga_floor import floor_ratio, price

PAGE = """\
# HELP liftfit_grpc_server_requests_total gRPC requests answered
# TYPE liftfit_grpc_server_requests_total counter
liftfit_grpc_server_requests_total{method="/b.B/GetBooking",code="OK"} 7.0
liftfit_grpc_server_requests_total{method="/b.B/Checkout",code="ALREADY_EXISTS"} 2.0
# HELP liftfit_grpc_server_requests_created when
# TYPE liftfit_grpc_server_requests_created gauge
liftfit_grpc_server_requests_created{method="/b.B/GetBooking",code="OK"} 1.7e9
# HELP liftfit_inbox_applied_total Events applied
# TYPE liftfit_inbox_applied_total counter
liftfit_inbox_applied_total{topic="payment.events"} 4.0
# HELP liftfit_inbox_ignored_total Events dropped
# TYPE liftfit_inbox_ignored_total counter
liftfit_inbox_ignored_total{topic="booking.events"} 3.0
# HELP liftfit_provider_calls_total Calls to an external provider
# TYPE liftfit_provider_calls_total counter
liftfit_provider_calls_total{provider="card_gateway",operation="create",outcome="ok"} 5.0
liftfit_provider_calls_total{provider="lock_provider",operation="set",outcome="unknown"} 1.0
liftfit_provider_calls_total{provider="mail",operation="send",outcome="ok"} 2.0
# HELP liftfit_http_requests_total HTTP requests answered
# TYPE liftfit_http_requests_total counter
liftfit_http_requests_total{method="GET",route="/v1/orgs/{org}/bookings/{id}",status="200"} 11.0
"""


def test_a_metrics_page_counts_each_kind_of_work_from_its_counters_and_nothing_else() -> None:
    counted = units.counted(PAGE)
    assert counted == {
        "grpc_calls": 9.0,  # every method and code; the _created gauge is no call
        "deliveries": 7.0,
        "provider_http_calls": 6.0,  # the mail is no HTTP call
        "mails": 2.0,
        "gateway_http_requests": 11.0,
    }


def test_the_work_of_a_loop_is_what_the_summed_pages_gained_between_two_readings() -> None:
    before = units.summed([units.counted(PAGE), units.counted("")])
    after = units.summed([units.counted(PAGE), units.counted(PAGE)])
    gained = units.gained(before, after)
    assert gained["grpc_calls"] == pytest.approx(9.0)
    assert gained["mails"] == pytest.approx(2.0)


def test_the_floor_prices_each_kind_by_what_one_saga_asked_and_http_from_every_caller() -> None:
    prices = {
        "transaction": 0.5,
        "grpc_call": 0.25,
        "http_request": 1.0,
        "record_produced": 0.2,
        "delivery": 0.4,
        "mail": 4.0,
    }
    saga = {
        "tx_per_saga": 60.0,
        "grpc_calls": 20.0,
        "gateway_http_requests": 8.0,
        "provider_http_calls": 4.0,
        "sandbox_requests": 10.0,
        "kafka_records_per_saga": 9.0,
        "deliveries": 30.0,
        "mails": 1.0,
    }
    by_kind = price(prices, saga)
    assert by_kind == pytest.approx(
        {
            "transaction": 30.0,
            "grpc_call": 5.0,
            "http_request": 22.0,
            "record_produced": 1.8,
            "delivery": 12.0,
            "mail": 4.0,
        }
    )


def test_the_floor_ratio_is_the_busy_cores_rate_over_pgbench_capacity() -> None:
    # 2 cores at 100 ms a saga: 20 sagas/s; 3,000 tps over 60 a saga: 50 sagas/s.
    assert floor_ratio(100.0, 2, 60.0, 3000.0) == pytest.approx(0.4)
    assert floor_ratio(0.0, 2, 60.0, 3000.0) == 0.0
    assert floor_ratio(100.0, 2, 60.0, 0.0) == 0.0
