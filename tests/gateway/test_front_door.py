"""A first visit: `/` sends a browser to the studios in its language and tells an API client
where the API is described; a method a path does not have is answered with the ones it has;
null for a field that does not apply reads as the field left out."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from tests.gateway.api import OPS, Api

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.mark.parametrize(("preferred", "lang"), [("en-GB,en;q=0.9", "en"), ("cs,en;q=0.5", "cs")])
async def test_a_browser_at_the_root_lands_on_the_studios_in_its_language(
    api: Api, preferred: str, lang: str
) -> None:
    headers = {"Accept": BROWSER, "Accept-Language": preferred}
    root = await api.call("GET", "/", headers=headers)
    assert root.status_code == 303, root.text
    assert root.headers["location"] == f"/web/{lang}/"
    page = await api.call("GET", root.headers["location"], headers=headers)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert f'lang="{lang}"' in page.text


async def test_an_api_client_at_the_root_is_pointed_to_the_api_reference(api: Api) -> None:
    root = await api.call("GET", "/", headers={"Accept": "application/json"})
    assert root.status_code == 200, root.text
    reference = root.json()["api_reference"]
    assert reference in root.headers["link"]
    assert (await api.call("GET", reference)).status_code == 200
    assert (await api.call("GET", root.json()["openapi"])).json()["openapi"].startswith("3.")


async def test_a_method_a_path_does_not_have_is_answered_with_the_methods_it_has(
    api: Api,
) -> None:
    answer = await api.call("DELETE", "/v1/plans")
    assert answer.status_code == 405, answer.text
    assert answer.headers["allow"] == "GET"
    assert answer.json()["code"] == "method_not_allowed"
    both = await api.call("OPTIONS", "/v1/ops/orgs", OPS)  # GET and POST are two routes
    assert both.status_code == 405, both.text
    assert both.headers["allow"] == "GET, POST"


async def test_a_pass_plan_with_a_null_period_is_a_pass_plan_without_one(api: Api) -> None:
    made = {}
    for period in ({"period_days": None}, {}):
        code = f"null-{uuid.uuid4().hex[:8]}"
        plan = {
            "plan_code": code,
            "plan_version": 1,
            "kind": "pass",
            "name": "Five entries",
            "price": {"amount": 150000, "currency": "CZK"},
            "entries": 5,
            **period,
        }
        answer = await api.call("POST", "/v1/ops/plans", OPS, plan)
        assert answer.status_code == 201, answer.text
        made[code] = answer.json()
    listed = {p["plan_code"]: p for p in (await api.call("GET", "/v1/plans")).json()}
    first, second = (listed[code] for code in made)
    assert first["period_days"] == second["period_days"] == 0
    document = (await api.call("GET", "/openapi.json")).json()
    period = document["components"]["schemas"]["PassPlan"]["properties"]["period_days"]
    assert {"type": "null"} in period["anyOf"]


async def test_a_slot_overlapping_the_studios_is_a_conflict_and_overlapping_its_own_is_invalid(
    api: Api,
) -> None:
    studio = await api.studio(1)
    path = f"/v1/ops/spaces/{studio.space_id}/slots"
    taken = studio.slots[0]
    price = {"amount": 45000, "currency": "CZK"}
    again = {"starts_at": taken["starts_at"], "ends_at": taken["ends_at"], "price": price}
    conflict = await api.call("POST", path, OPS, {"slots": [again]})
    assert (conflict.status_code, conflict.json()["code"]) == (409, "slots_overlap"), conflict.text
    start = datetime.fromisoformat(taken["starts_at"]) + timedelta(days=7)
    first = {"starts_at": _iso(start), "ends_at": _iso(start + timedelta(hours=1)), "price": price}
    second = {**first, "starts_at": _iso(start + timedelta(minutes=30))}
    second["ends_at"] = _iso(start + timedelta(minutes=90))
    invalid = await api.call("POST", path, OPS, {"slots": [first, second]})
    assert (invalid.status_code, invalid.json()["code"]) == (422, "validation_error"), invalid.text
    assert invalid.json()["errors"][0]["field"] == "slots"
    touching = {**second, "starts_at": first["ends_at"]}
    apart = await api.call("POST", path, OPS, {"slots": [first, touching]})
    assert apart.status_code == 201, apart.text


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")
