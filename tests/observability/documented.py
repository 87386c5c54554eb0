"""The metrics the table of docs/operations.md documents, process by process."""

from __future__ import annotations

EVERY_SERVICE = (
    "liftfit_grpc_server_requests_total",
    "liftfit_grpc_server_request_duration_seconds",
    "liftfit_outbox_pending_rows",
    "liftfit_outbox_oldest_pending_age_seconds",
    "liftfit_outbox_failed_rows",
    "liftfit_relay_published_total",
    "liftfit_relay_publish_failures_total",
    "liftfit_producer_replacements_total",
    "liftfit_lease_held",
    "liftfit_inbox_applied_total",
    "liftfit_inbox_ignored_total",
    "liftfit_inbox_duplicates_total",
    "liftfit_inbox_parked_total",
    "liftfit_consumer_lag_messages",
    "liftfit_timers_due",
    "liftfit_timers_overdue",
    "liftfit_incidents_open",
    "liftfit_drift_findings",
)
PROVIDER_CALLS = ("liftfit_provider_calls_total", "liftfit_provider_call_duration_seconds")
DOCUMENTED = {
    "booking": EVERY_SERVICE,
    "payment": EVERY_SERVICE + PROVIDER_CALLS,
    "access": EVERY_SERVICE + PROVIDER_CALLS,
    "notify": (*EVERY_SERVICE, *PROVIDER_CALLS, "liftfit_mails"),
    "gateway": (
        "liftfit_http_requests_total",
        "liftfit_http_request_duration_seconds",
        "liftfit_http_rate_limited_total",
        "liftfit_consumer_lag_messages",
        "liftfit_gateway_booking_reads_total",
        "liftfit_gateway_booking_changes_total",
    ),
}
