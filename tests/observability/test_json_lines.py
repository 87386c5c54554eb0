"""The log line's shape (servicekit.logs), without a platform: what each line holds, what it
binds, and what it keeps out."""

from __future__ import annotations

import json
import logging
import sys
import uuid
from datetime import datetime
from typing import Any

from liftfit.access.v1 import access_pb2
from opentelemetry.sdk.trace import TracerProvider

from servicekit import logs

BOOKING = str(uuid.uuid4())


def _line(formatter: logs.JsonLines, message: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    record = logging.getLogger("services.booking.test").makeRecord(
        "services.booking.test", logging.WARNING, __file__, 1, message, args, None, **kwargs
    )
    line: dict[str, Any] = json.loads(formatter.format(record))
    return line


def test_a_line_holds_time_level_service_logger_message_and_the_current_span() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("work") as span:
        line = _line(logs.JsonLines("booking"), "booking %s confirmed", BOOKING)
    assert line["message"] == f"booking {BOOKING} confirmed"
    assert (line["level"], line["service"], line["logger"]) == (
        "WARNING",
        "booking",
        "services.booking.test",
    )
    assert line["time"].endswith("Z") and datetime.fromisoformat(line["time"])
    assert line["trace_id"] == format(span.get_span_context().trace_id, "032x")
    assert line["span_id"] == format(span.get_span_context().span_id, "016x")


def test_outside_a_span_there_is_no_trace_id() -> None:
    assert "trace_id" not in _line(logs.JsonLines("booking"), "idle")


def test_ids_bound_by_the_work_at_hand_or_passed_as_extra_are_fields() -> None:
    grant, payment = str(uuid.uuid4()), str(uuid.uuid4())
    request = access_pb2.GetAccessRequest(booking_id=BOOKING)
    with logs.about(**logs.ids_in(request)), logs.about(grant_id=grant):
        line = _line(logs.JsonLines("access"), "x", extra={"payment_id": payment})
    assert (line["booking_id"], line["grant_id"], line["payment_id"]) == (BOOKING, grant, payment)
    assert "booking_id" not in _line(logs.JsonLines("access"), "after the work")


def test_an_id_a_caller_sent_is_bound_only_when_it_is_a_canonical_uuid() -> None:
    with logs.about(booking_id="\x00" + "x" * 10_000, grant_id=BOOKING.upper()):
        line = _line(logs.JsonLines("access"), "hostile")
    assert "booking_id" not in line and "grant_id" not in line


def test_an_exception_is_a_field_of_the_same_line() -> None:
    try:
        raise ValueError("no such slot")
    except ValueError:
        record = logging.getLogger("t").makeRecord(
            "t", logging.ERROR, __file__, 1, "failed", (), sys.exc_info()
        )
    text = logs.JsonLines("payment").format(record)
    assert "\n" not in text
    assert "ValueError: no such slot" in json.loads(text)["exception"]


def test_e_mail_addresses_are_masked_and_secret_settings_redacted() -> None:
    environment = {
        "PAYMENT_WEBHOOK_SECRETS": "whsec_one_current,whsec_two_previous",
        "ACCESS_PIN_KEYS": "k1:c2VjcmV0LWtleS1ieXRlcw==",
        "CARD_GATEWAY_API_KEY": "sk_live_abcdefgh",
        "BOOKING_DATABASE_URL": "postgresql+psycopg://app:s3cret-pass@db:5432/booking",
        "GATEWAY_DATABASE_URL": "postgresql+psycopg://liftfit_app:liftfit_app@db/gateway",
        "BOOKING_GRPC_ADDRESS": "127.0.0.1:15051",
    }
    formatter = logs.JsonLines("payment", logs.secrets_of(environment))
    message = (
        "to jana.novak@example.com, signed whsec_two_previous with c2VjcmV0LWtleS1ieXRlcw== "
        "and sk_live_abcdefgh via postgresql://app:s3cret-pass@db and liftfit_app:liftfit_app@db"
    )
    line = _line(formatter, message)["message"]
    assert "j***@example.com" in line and "jana.novak" not in line
    for secret in ("whsec_two_previous", "c2VjcmV0LWtleS1ieXRlcw==", "sk_live", "s3cret-pass"):
        assert secret not in line
    assert ":liftfit_app@" not in line
    assert "127.0.0.1:15051" not in logs.secrets_of(environment)
