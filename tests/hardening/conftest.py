"""The hardening suite drives the real services as their own suites start them."""

from __future__ import annotations

from tests.access.conftest import lock_provider_url  # noqa: F401
from tests.booking.conftest import booking, booking_settings, start_booking  # noqa: F401
from tests.e2e.conftest import platform  # noqa: F401
from tests.notify.conftest import mail_sandbox  # noqa: F401
from tests.payment.conftest import card_gateway_url, harness, make_harness  # noqa: F401
