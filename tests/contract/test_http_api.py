"""The gateway's OpenAPI document against the public HTTP API of the contract: every path and
method the contract fixes is there, with the status codes it names, and every error answer
is documented as problem details. Built from the application itself, without a network."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway_bff.identity import DevAuthenticator
from gateway_bff.main import bootstrap
from gateway_bff.settings import SERVICES, Settings
from tests.support import tls

# (method, path, the statuses the contract names for it)
CONTRACT = (
    ("get", "/v1/spaces", {200}),
    ("get", "/v1/spaces/{space_id}/slots", {200}),
    ("get", "/v1/plans", {200}),
    ("post", "/v1/orgs/{org_id}/bookings", {201, 400, 401, 404, 409, 422}),
    ("get", "/v1/orgs/{org_id}/bookings", {200, 401, 404}),
    ("get", "/v1/orgs/{org_id}/bookings/{booking_id}", {200, 404}),
    ("post", "/v1/orgs/{org_id}/bookings/{booking_id}/cancel", {200, 409}),
    ("post", "/v1/orgs/{org_id}/bookings/{booking_id}/reschedule", {200, 409}),
    ("get", "/v1/orgs/{org_id}/bookings/{booking_id}/access", {200}),
    ("post", "/v1/orgs/{org_id}/orders", {201, 409, 422}),
    ("get", "/v1/orgs/{org_id}/orders/{order_id}", {200}),
    ("get", "/v1/orgs/{org_id}/passes", {200}),
    ("post", "/v1/payments/notifications", {200, 400}),
    ("get", "/v1/payments/return", {200}),
    ("post", "/v1/ops/spaces", {201, 403}),
    ("post", "/v1/ops/spaces/{space_id}/slots", {201, 403}),
    ("post", "/v1/ops/orgs", {201, 403}),
    ("post", "/v1/ops/orgs/{org_id}/members", {201, 403}),
    ("post", "/v1/ops/plans", {201, 403, 409}),
    ("get", "/v1/ops/bookings/{booking_id}/timeline", {200, 403}),
    ("get", "/v1/ops/outbox", {200, 403}),
    ("post", "/v1/ops/outbox/{service}/{effect_id}/replay", {202, 403}),
    ("get", "/v1/ops/incidents", {200, 403}),
    ("post", "/v1/ops/incidents/{incident_id}/resolve", {200, 403}),
    ("get", "/v1/ops/drift", {200, 403}),
    ("get", "/v1/ops/lag", {200, 403}),
    ("get", "/v1/ops/audit", {200, 403}),
    ("get", "/healthz", {200}),
    ("get", "/readyz", {200}),
    ("get", "/metrics", {200}),
)


@pytest.fixture
async def document() -> AsyncIterator[dict[str, Any]]:
    settings = Settings(
        address="127.0.0.1:0",
        database_url="postgresql+psycopg://nobody:nothing@127.0.0.1:1/none",
        service_addresses={name: "127.0.0.1:1" for name in SERVICES},
        kafka_bootstrap="127.0.0.1:1",
        tls_dir=tls.folder("gateway"),
    )
    yield bootstrap(settings, DevAuthenticator()).openapi()


@pytest.mark.parametrize(("method", "path", "statuses"), CONTRACT, ids=lambda v: str(v))
async def test_the_openapi_document_has_every_path_of_the_contract_with_its_statuses(
    document: dict[str, Any], method: str, path: str, statuses: set[int]
) -> None:
    operation = document["paths"][path][method]
    documented = {int(status) for status in operation["responses"]}
    assert statuses <= documented, sorted(statuses - documented)


async def test_every_error_answer_is_documented_as_problem_details(
    document: dict[str, Any],
) -> None:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, answer in operation["responses"].items():
                if int(status) >= 400 and path != "/readyz":
                    assert "application/problem+json" in answer.get("content", {}), (
                        method,
                        path,
                        status,
                    )
