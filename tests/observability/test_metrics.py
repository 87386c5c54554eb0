"""Every documented metric is served by each process of the platform as `make up` starts
it, in Prometheus's text format (parsed by prometheus-client's own parser), and
Prometheus scrapes every process: its API shows each target up."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.gateway.api import OPS
from tests.observability.documented import DOCUMENTED
from tests.observability.scrape import SERVICES, Scrape, scrape
from tests.support.platform import Platform
from tests.support.waiting import eventually

# Read by the sampler or counted at once, so samples are there within a few seconds of
# the start: the health checks that readied each service are gRPC requests, and every
# consumer group joined its topics.
SAMPLED_AT_ONCE = {
    **{
        service: (
            "liftfit_grpc_server_requests_total",
            "liftfit_outbox_pending_rows",
            "liftfit_outbox_failed_rows",
            "liftfit_consumer_lag_messages",
        )
        for service in SERVICES
    },
    "gateway": ("liftfit_consumer_lag_messages",),
}


async def test_every_documented_metric_is_served_by_each_process(platform: Platform) -> None:
    async with httpx.AsyncClient() as http:
        # A request, so the gateway has counted one.
        assert (await http.get(f"{platform.gateway}/healthz")).status_code == 200
        for process, documented in DOCUMENTED.items():

            async def sampled(process: str = process) -> Scrape | None:
                served = await scrape(http, platform, process)
                wanted = SAMPLED_AT_ONCE[process]
                return served if all(served.samples(name) for name in wanted) else None

            served = await eventually(sampled, 30, every=0.5)
            missing = [name for name in documented if not served.has(name)]
            assert missing == [], f"{process} does not serve {missing}"
        gateway = await scrape(http, platform, "gateway")
        assert gateway.value("liftfit_http_requests_total", route="/healthz", status="200") >= 1
        groups = {labels["group"] for labels in gateway.samples("liftfit_consumer_lag_messages")}
        prefix = platform.env["TOPIC_PREFIX"]
        assert {f"{prefix}{service}" for service in SERVICES} <= groups


async def test_a_refused_request_is_counted_under_its_status_code(platform: Platform) -> None:
    method = "/liftfit.ops.v1.OperationsService/ReplayEffect"
    async with httpx.AsyncClient() as http:
        before = await scrape(http, platform, "booking")
        replay = f"{platform.gateway}/v1/ops/outbox/booking/{uuid.uuid4()}/replay"
        answer = await http.post(replay, headers={"X-Dev-User": OPS}, json={})
        assert answer.status_code == 404, answer.text
        after = await scrape(http, platform, "booking")
    requests = "liftfit_grpc_server_requests_total"
    refused = {"method": method, "code": "NOT_FOUND"}
    assert after.value(requests, **refused) == before.value(requests, **refused) + 1
    duration = "liftfit_grpc_server_request_duration_seconds_count"
    assert after.value(duration, method=method) == before.value(duration, method=method) + 1


async def test_prometheus_scrapes_every_process(platform: Platform) -> None:
    api = f"http://{platform.env['PROMETHEUS_ADDRESS']}/api/v1/targets"
    wanted = {*SERVICES, "gateway"}

    async with httpx.AsyncClient() as http:

        async def every_target_up() -> dict[str, Any] | None:
            answer = await http.get(api, timeout=5)
            assert answer.status_code == 200, answer.text
            targets = answer.json()["data"]["activeTargets"]
            health = {t["labels"]["job"]: t["health"] for t in targets}
            return health if health == dict.fromkeys(wanted, "up") else None

        await eventually(every_target_up, 30, every=0.5)


async def test_each_service_shows_its_one_process_relaying_its_outbox(platform: Platform) -> None:
    """`make up` runs one process per service: it takes the relay's lease and says so, so an
    operator can tell which replica relays (servicekit.leadership)."""
    async with httpx.AsyncClient() as http:
        for service in SERVICES:

            async def leads(service: str = service) -> bool:
                served = await scrape(http, platform, service)
                return served.value("liftfit_lease_held", lease="relay of outbox") == 1

            assert await eventually(leads, 30, every=0.5), service
