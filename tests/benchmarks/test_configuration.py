"""benchmarks/configuration.py: an environment unlike the platform's is named, each way."""

from __future__ import annotations

from benchmarks.configuration import Configuration, deviations

AS_MAKE_UP = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_DB_SPANS": "off"} | {
    f"{part}_TLS_DIR": f"/tls/{part}"
    for part in ("BOOKING", "PAYMENT", "ACCESS", "NOTIFY", "GATEWAY")
}


def test_a_platform_configured_otherwise_than_make_up_is_refused_with_the_reason() -> None:
    assert deviations(AS_MAKE_UP) == []
    otherwise = AS_MAKE_UP | {
        "LIFTFIT_GRPC_PLAINTEXT": "for-measurement-only",
        "NOTIFY_TLS_DIR": "",
    }
    assert deviations(otherwise) == [
        "LIFTFIT_GRPC_PLAINTEXT is set: no mutual TLS",
        "NOTIFY_TLS_DIR is empty",
    ]
    assert deviations(AS_MAKE_UP | {"OTEL_TRACES_EXPORTER": "none"}) == [
        "OTEL_TRACES_EXPORTER is not otlp: no trace export"
    ]


def test_sampling_fewer_traces_or_logging_less_is_not_the_platform() -> None:
    assert deviations(AS_MAKE_UP | {"OTEL_TRACES_SAMPLER": "parentbased_always_on"}) == []
    assert deviations(AS_MAKE_UP | {"OTEL_TRACES_SAMPLER": "traceidratio"}) == [
        "OTEL_TRACES_SAMPLER is set: not every trace sampled"
    ]
    assert deviations(AS_MAKE_UP | {"LOG_LEVEL": "warning"}) == ["LOG_LEVEL is not INFO"]


def test_one_service_is_checked_for_its_own_certificates_and_metrics_only() -> None:
    booking = {"OTEL_TRACES_EXPORTER": "otlp", "BOOKING_TLS_DIR": "/tls/booking"}
    assert deviations(booking, ("booking",), ("booking",)) == [
        "BOOKING_METRICS_ADDRESS is empty: no /metrics"
    ]
    served = booking | {"BOOKING_METRICS_ADDRESS": "127.0.0.1:20001"}
    assert deviations(served, ("booking",), ("booking",)) == []


def test_the_platform_exports_every_trace_and_the_stripped_configuration_none() -> None:
    platform = Configuration("platform", "as make up", platform=True)
    stripped = Configuration("stripped", "for comparison", platform=False)
    endpoint = "http://127.0.0.1:20002"
    assert deviations(AS_MAKE_UP | platform.traces(endpoint)) == []
    assert platform.traces(endpoint)["OTEL_EXPORTER_OTLP_ENDPOINT"] == endpoint
    assert deviations(AS_MAKE_UP | stripped.traces(endpoint)) == [
        "OTEL_TRACES_EXPORTER is not otlp: no trace export"
    ]
