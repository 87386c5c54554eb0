"""The hardening suite drives the real booking and payment services, as the e2e suite does."""

from tests.e2e.conftest import platform  # noqa: F401
from tests.payment.conftest import card_gateway_url  # noqa: F401
