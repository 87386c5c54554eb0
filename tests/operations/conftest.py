"""The operators' view is served by each of the four services: its tests start them as their
own suites do."""

from __future__ import annotations

from tests.access.conftest import access, lock_provider_url, make_access  # noqa: F401
from tests.booking.conftest import booking, booking_settings, start_booking  # noqa: F401
from tests.notify.conftest import mail_sandbox, make_notify, notify, pin_desk  # noqa: F401
from tests.payment.conftest import card_gateway_url, harness, make_harness  # noqa: F401
