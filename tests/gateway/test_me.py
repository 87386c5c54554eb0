"""GET /v1/me: any identity may ask who it is to the platform, and learns only its own
memberships (organisation, role, locale); no identity is 401."""

from __future__ import annotations

import uuid

from tests.gateway.api import OPS, Api


async def test_a_caller_sees_its_own_memberships_with_their_locale_and_nobody_elses(
    api: Api,
) -> None:
    first, second, other = await api.org(), await api.org(), await api.org()
    added = await api.call(
        "POST",
        f"/v1/ops/orgs/{second.org_id}/members",
        OPS,
        {"user": first.owner, "role": "member", "locale": "cs"},
    )
    assert added.status_code == 201, added.text

    answer = await api.call("GET", "/v1/me", first.owner)

    assert answer.status_code == 200, answer.text
    me = answer.json()
    assert (me["user"], me["operator"]) == (first.owner, False)
    shown = {(m["org_id"], m["role"], m["locale"]) for m in me["memberships"]}
    assert shown == {(first.org_id, "owner", "en"), (second.org_id, "member", "cs")}
    assert other.org_id not in {m["org_id"] for m in me["memberships"]}


async def test_an_operator_is_told_so_and_no_identity_is_unauthenticated(api: Api) -> None:
    operator = (await api.call("GET", "/v1/me", OPS)).json()
    assert operator["operator"] is True
    stranger = await api.call("GET", "/v1/me", f"nobody-{uuid.uuid4().hex[:8]}")
    assert stranger.json()["memberships"] == []

    anonymous = await api.call("GET", "/v1/me")

    assert (anonymous.status_code, anonymous.json()["code"]) == (401, "unauthenticated")
    assert anonymous.headers["content-type"] == "application/problem+json"
