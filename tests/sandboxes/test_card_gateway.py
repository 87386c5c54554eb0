"""The sandbox card gateway, tested as its clients see it: a real process over HTTP.

The gateway runs as ``python -m sandboxes.card_gateway`` on a free port (so startup
configuration is exercised too) and posts its notifications to a small stdlib HTTP
receiver running in a thread of the test process.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandboxes.card_gateway.signing import parse, sign, verify
from tests.support.card_gateway import free_port, gateway_env, running_card_gateway
from tests.support.sandboxes import CONTROL_TOKEN, SandboxAuth, killable_sandbox

REPO_ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk_test_sandbox"
SECRETS = ("whsec_current", "whsec_previous")  # two secrets: a rotation in progress


# --- notification receiver ------------------------------------------------------------


@dataclass(frozen=True)
class Notification:
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data

    @property
    def signature(self) -> str:
        return self.headers["gateway-signature"]


class Receiver:
    """Collects notifications; can be told to answer 500 to exercise the gateway's retries."""

    def __init__(self) -> None:
        self.received: list[Notification] = []
        self.fail_next = 0
        self._cond = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/notifications"

    def wait_for(self, count: int, timeout: float = 5.0) -> list[Notification]:
        with self._cond:
            self._cond.wait_for(lambda: len(self.received) >= count, timeout)
            return list(self.received)

    def clear(self) -> None:
        with self._cond:
            self.received.clear()
            self.fail_next = 0

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _record(self, headers: dict[str, str], body: bytes) -> int:
        with self._cond:
            if self.fail_next > 0:
                self.fail_next -= 1
                return 500
            self.received.append(Notification(headers, body))
            self._cond.notify_all()
            return 200

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                self.send_response(receiver._record(headers, body))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep the test output clean

        return Handler


# --- fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_card_gateway(tmp_path_factory.mktemp("card_gateway"), API_KEY, SECRETS) as url:
        yield url


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    rec = Receiver()
    yield rec
    rec.close()


@pytest.fixture
def api(gateway_url: str, receiver: Receiver) -> Iterator[httpx.Client]:
    """An authenticated client against a freshly reset gateway notifying ``receiver``."""
    with httpx.Client(base_url=gateway_url, auth=SandboxAuth(API_KEY), timeout=5) as client:
        client.post("/_sandbox/reset").raise_for_status()
        client.post("/_sandbox/config", json={"notify_url": receiver.url}).raise_for_status()
        receiver.clear()
        yield client


# --- helpers --------------------------------------------------------------------------


def create(api: httpx.Client, key: str, **params: Any) -> httpx.Response:
    body = {"amount": 25000, "currency": "CZK", "reference": "booking-1", **params}
    return api.post("/v1/payments", json=body, headers={"Idempotency-Key": key})


def paid_payment(api: httpx.Client, key: str = "pay-key", **params: Any) -> dict[str, Any]:
    payment: dict[str, Any] = create(api, key, **params).json()
    settle = api.post(f"/_sandbox/payments/{payment['id']}/settle", json={"outcome": "succeed"})
    assert settle.json()["state"] == "paid"
    return payment


def refund(api: httpx.Client, payment_id: str, key: str, amount: int) -> httpx.Response:
    url = f"/v1/payments/{payment_id}/refunds"
    return api.post(url, json={"amount": amount}, headers={"Idempotency-Key": key})


def stored_payments(api: httpx.Client) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = api.get("/_sandbox/payments").json()["data"]
    return rows


def set_faults(api: httpx.Client, **faults: Any) -> None:
    api.post("/_sandbox/faults", json=faults).raise_for_status()


def eventually(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


# --- creating payments ------------------------------------------------------------------


def test_create_returns_a_pending_payment_with_a_checkout_url(
    api: httpx.Client, gateway_url: str
) -> None:
    response = create(api, "key-1")

    assert response.status_code == 201
    payment = response.json()
    assert payment["id"].startswith("pay_")
    assert payment["state"] == "pending"
    assert (payment["amount"], payment["currency"]) == (25000, "CZK")
    assert payment["reference"] == "booking-1"
    assert payment["refunded_amount"] == 0
    assert payment["checkout_url"] == f"{gateway_url}/checkout/{payment['id']}"


def test_same_idempotency_key_and_params_returns_the_same_payment(api: httpx.Client) -> None:
    first = create(api, "key-1")
    again = create(api, "key-1")

    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert len(stored_payments(api)) == 1


def test_same_idempotency_key_with_other_params_is_rejected_as_reused(api: httpx.Client) -> None:
    create(api, "key-1")
    reused = create(api, "key-1", amount=30000)

    assert reused.status_code == 409
    assert reused.json() == {"error": "idempotency_key_reused"}
    assert len(stored_payments(api)) == 1


def test_create_without_idempotency_key_is_rejected(api: httpx.Client) -> None:
    body = {"amount": 25000, "currency": "CZK", "reference": "booking-1"}
    response = api.post("/v1/payments", json=body)

    assert response.status_code == 400
    assert stored_payments(api) == []


@pytest.mark.parametrize(
    "body",
    [
        {"amount": 0, "currency": "CZK", "reference": "r"},
        {"amount": "100", "currency": "CZK", "reference": "r"},
        {"amount": 100, "currency": "czk", "reference": "r"},
    ],
    ids=["zero-amount", "amount-as-string", "lowercase-currency"],
)
def test_invalid_create_bodies_are_rejected(api: httpx.Client, body: dict[str, Any]) -> None:
    response = api.post("/v1/payments", json=body, headers={"Idempotency-Key": "k"})

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert stored_payments(api) == []


def test_payments_can_be_found_by_reference(api: httpx.Client) -> None:
    wanted = create(api, "key-1", reference="booking-7").json()
    create(api, "key-2", reference="booking-8")

    found = api.get("/v1/payments", params={"reference": "booking-7"}).json()["data"]

    assert [p["id"] for p in found] == [wanted["id"]]


def test_unknown_payment_is_not_found(api: httpx.Client) -> None:
    response = api.get("/v1/payments/pay_missing")

    assert response.status_code == 404
    assert response.json() == {"error": "not_found"}


@pytest.mark.parametrize(
    "authorization",
    [None, f"Bearer {API_KEY}x", f"Basic {API_KEY}"],
    ids=["missing", "wrong-token", "wrong-scheme"],
)
def test_calls_without_the_api_key_are_unauthorized(
    api: httpx.Client, gateway_url: str, authorization: str | None
) -> None:
    headers = {"Idempotency-Key": "k"} | ({"Authorization": authorization} if authorization else {})
    body = {"amount": 100, "currency": "CZK", "reference": "r"}

    response = httpx.post(f"{gateway_url}/v1/payments", json=body, headers=headers)

    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized"}
    assert stored_payments(api) == []


@pytest.mark.parametrize(
    "authorization",
    [None, f"Bearer {API_KEY}", f"Bearer {CONTROL_TOKEN}x", f"Basic {CONTROL_TOKEN}"],
    ids=["missing", "the-api-key", "wrong-token", "wrong-scheme"],
)
def test_the_controls_answer_only_to_the_control_token(
    api: httpx.Client, gateway_url: str, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    with httpx.Client(base_url=gateway_url, headers=headers, timeout=5) as stranger:
        refused = [
            stranger.post("/_sandbox/faults", json={"fail_next_calls": 1}),
            stranger.get("/_sandbox/payments"),
            stranger.get("/_sandbox/refunds"),
            stranger.post("/_sandbox/config", json={"notify_url": "http://127.0.0.1:1/"}),
            stranger.post("/_sandbox/reset"),
        ]
    assert [r.status_code for r in refused] == [401] * 5
    assert refused[0].json() == {"error": "unauthorized"}
    # Nothing changed: the next call is served, and the notifications go where they went.
    assert create(api, "after-the-stranger").status_code == 201
    assert api.get("/_sandbox/config").json()["notify_url"] != "http://127.0.0.1:1/"


def test_with_the_control_token_the_fault_applies(api: httpx.Client) -> None:
    set_faults(api, fail_next_calls=1)

    assert create(api, "key-1").status_code == 503
    assert create(api, "key-1").status_code == 201


def test_the_health_probe_needs_no_token(gateway_url: str) -> None:
    assert httpx.get(f"{gateway_url}/healthz").status_code == 200


# --- hosted payment page and notifications -----------------------------------------------


def test_hosted_page_shows_the_amount_and_both_outcomes(api: httpx.Client) -> None:
    payment = create(api, "key-1", amount=25050).json()

    page = api.get(payment["checkout_url"])

    assert page.status_code == 200
    assert "250.50 CZK" in page.text
    assert 'value="succeed"' in page.text
    assert 'value="fail"' in page.text


def test_paying_on_hosted_page_sends_a_notification_signed_with_every_secret(
    api: httpx.Client, receiver: Receiver
) -> None:
    payment = create(api, "key-1").json()

    page = api.post(payment["checkout_url"], data={"outcome": "succeed"})

    assert page.status_code == 200
    assert api.get(f"/v1/payments/{payment['id']}").json()["state"] == "paid"
    [notification] = receiver.wait_for(1)
    event = notification.json()
    assert event["id"].startswith("evt_")
    assert event["type"] == "payment.updated"
    assert event["data"] == {"payment_id": payment["id"], "reference": "booking-1", "state": "paid"}
    _, signatures = parse(notification.signature)
    assert len(signatures) == 2
    now = int(time.time())
    for secret in SECRETS:
        assert verify(notification.signature, notification.body, secret, now)
    assert not verify(notification.signature, notification.body, "whsec_other", now)


def test_declining_on_hosted_page_marks_the_payment_failed(
    api: httpx.Client, receiver: Receiver
) -> None:
    payment = create(api, "key-1").json()

    api.post(payment["checkout_url"], data={"outcome": "fail"})

    assert api.get(f"/v1/payments/{payment['id']}").json()["state"] == "failed"
    assert receiver.wait_for(1)[0].json()["data"]["state"] == "failed"


def test_hosted_page_redirects_to_the_return_url(api: httpx.Client) -> None:
    payment = create(api, "key-1", return_url="http://shop.test/back?booking=1").json()

    response = api.post(payment["checkout_url"], data={"outcome": "succeed"})

    assert response.status_code == 303
    assert response.headers["location"] == "http://shop.test/back?booking=1"


def test_paying_a_payment_that_is_no_longer_pending_is_refused(api: httpx.Client) -> None:
    payment = create(api, "key-1").json()
    api.post(payment["checkout_url"], data={"outcome": "succeed"})

    again = api.post(payment["checkout_url"], data={"outcome": "fail"})

    assert again.status_code == 409
    assert api.get(f"/v1/payments/{payment['id']}").json()["state"] == "paid"


def test_duplicate_notifications_delivers_each_event_extra_times(
    api: httpx.Client, receiver: Receiver
) -> None:
    set_faults(api, duplicate_notifications=3)

    paid_payment(api)

    received = receiver.wait_for(4)
    time.sleep(0.3)  # a fifth delivery would be a bug too
    assert len(receiver.received) == 4
    assert len({n.json()["id"] for n in received}) == 1


def test_dropped_notifications_are_logged_but_not_delivered(
    api: httpx.Client, receiver: Receiver
) -> None:
    set_faults(api, drop_notifications=True)

    paid_payment(api)

    time.sleep(0.3)
    assert receiver.received == []
    log = api.get("/_sandbox/notifications").json()["data"]
    assert [entry["status"] for entry in log] == ["dropped"]


def test_reorder_notifications_delivers_the_later_event_first(
    api: httpx.Client, receiver: Receiver
) -> None:
    first = create(api, "key-1", reference="booking-1").json()
    second = create(api, "key-2", reference="booking-2").json()
    set_faults(api, reorder_notifications=True)

    api.post(f"/_sandbox/payments/{first['id']}/settle", json={"outcome": "succeed"})
    time.sleep(0.3)
    assert receiver.received == []  # held until the next one arrives
    api.post(f"/_sandbox/payments/{second['id']}/settle", json={"outcome": "succeed"})

    order = [n.json()["data"]["payment_id"] for n in receiver.wait_for(2)]
    assert order == [second["id"], first["id"]]


def test_flush_releases_a_held_notification(api: httpx.Client, receiver: Receiver) -> None:
    set_faults(api, reorder_notifications=True)
    payment = paid_payment(api)
    assert api.get("/_sandbox/notifications").json()["data"][0]["status"] == "held"

    released = api.post("/_sandbox/notifications/flush").json()

    assert released == {"released": 1}
    assert receiver.wait_for(1)[0].json()["data"]["payment_id"] == payment["id"]


def test_delayed_notification_arrives_only_after_the_delay(
    api: httpx.Client, receiver: Receiver
) -> None:
    set_faults(api, delay_notifications_ms=800)

    paid_payment(api)

    time.sleep(0.4)
    assert receiver.received == []
    assert len(receiver.wait_for(1)) == 1


def test_notification_is_retried_after_a_server_error(
    api: httpx.Client, receiver: Receiver
) -> None:
    receiver.fail_next = 2

    paid_payment(api)

    assert len(receiver.wait_for(1)) == 1

    def logged_as_sent() -> bool:
        entry = api.get("/_sandbox/notifications").json()["data"][0]
        return bool(entry["status"] == "sent" and entry["attempts"] == 3)

    assert eventually(logged_as_sent)


def test_settle_delay_keeps_the_payment_pending_until_it_elapses(
    api: httpx.Client, receiver: Receiver
) -> None:
    payment = create(api, "key-1").json()
    set_faults(api, settle_delay_ms=600)

    response = api.post(f"/_sandbox/payments/{payment['id']}/settle", json={"outcome": "succeed"})

    assert response.status_code == 202
    assert api.get(f"/v1/payments/{payment['id']}").json()["state"] == "pending"
    assert receiver.wait_for(1)[0].json()["data"]["state"] == "paid"
    assert api.get(f"/v1/payments/{payment['id']}").json()["state"] == "paid"


# --- timeouts and outages -------------------------------------------------------------


def test_timed_out_create_is_stored_and_a_retry_with_the_same_key_returns_it(
    api: httpx.Client,
) -> None:
    set_faults(api, timeout_next_creates=1, hang_seconds=3)

    with pytest.raises(httpx.ReadTimeout):
        api.post(
            "/v1/payments",
            json={"amount": 25000, "currency": "CZK", "reference": "booking-1"},
            headers={"Idempotency-Key": "key-1"},
            timeout=0.5,
        )
    retry = create(api, "key-1")

    assert retry.status_code == 200
    [stored] = stored_payments(api)
    assert retry.json()["id"] == stored["id"]
    assert stored["idempotency_key"] == "key-1"


def test_timed_out_refund_is_applied_and_a_retry_returns_the_same_refund(
    api: httpx.Client,
) -> None:
    payment = paid_payment(api)
    set_faults(api, timeout_next_refunds=1, hang_seconds=3)

    with pytest.raises(httpx.ReadTimeout):
        api.post(
            f"/v1/payments/{payment['id']}/refunds",
            json={"amount": 1000},
            headers={"Idempotency-Key": "refund-1"},
            timeout=0.5,
        )
    retry = refund(api, payment["id"], "refund-1", 1000)

    assert retry.status_code == 200
    assert api.get(f"/v1/payments/{payment['id']}").json()["refunded_amount"] == 1000


def test_fail_next_calls_answers_503_without_doing_anything(api: httpx.Client) -> None:
    set_faults(api, fail_next_calls=2)

    outages = [create(api, "key-1"), create(api, "key-1")]
    recovered = create(api, "key-1")

    assert [r.status_code for r in outages] == [503, 503]
    assert outages[0].json() == {"error": "service_unavailable"}
    assert recovered.status_code == 201
    assert len(stored_payments(api)) == 1


# --- refunds, cancellation, expiry, tampering ----------------------------------------------


def test_refund_with_the_same_key_returns_the_same_refund(api: httpx.Client) -> None:
    payment = paid_payment(api)

    first = refund(api, payment["id"], "refund-1", 1000)
    again = refund(api, payment["id"], "refund-1", 1000)

    assert first.status_code == 201
    assert first.json()["id"].startswith("re_")
    assert first.json()["state"] == "succeeded"
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert api.get(f"/v1/refunds/{first.json()['id']}").json()["amount"] == 1000
    assert api.get(f"/v1/payments/{payment['id']}").json()["refunded_amount"] == 1000


def test_refund_key_reused_with_another_amount_is_rejected(api: httpx.Client) -> None:
    payment = paid_payment(api)
    refund(api, payment["id"], "refund-1", 1000)

    reused = refund(api, payment["id"], "refund-1", 2000)

    assert reused.status_code == 409
    assert reused.json() == {"error": "idempotency_key_reused"}
    assert api.get(f"/v1/payments/{payment['id']}").json()["refunded_amount"] == 1000


def test_full_refund_marks_the_payment_refunded_and_notifies(
    api: httpx.Client, receiver: Receiver
) -> None:
    payment = paid_payment(api)
    refund(api, payment["id"], "refund-1", 5000)
    refund(api, payment["id"], "refund-2", 20000)

    current = api.get(f"/v1/payments/{payment['id']}").json()

    assert (current["state"], current["refunded_amount"]) == ("refunded", 25000)
    # Each event leaves in its own delivery, as a provider's do: they may arrive in any order.
    states = [n.json()["data"]["state"] for n in receiver.wait_for(2)]
    assert sorted(states) == ["paid", "refunded"]


def test_every_refund_is_listed_with_its_key(api: httpx.Client) -> None:
    payment = paid_payment(api)
    first = refund(api, payment["id"], "refund-1", 5000).json()
    second = refund(api, payment["id"], "refund-2", 20000).json()

    listed = api.get("/_sandbox/refunds").json()["data"]

    assert listed == [
        first | {"idempotency_key": "refund-1"},
        second | {"idempotency_key": "refund-2"},
    ]


def test_refund_of_an_unpaid_payment_is_not_refundable(api: httpx.Client) -> None:
    payment = create(api, "key-1").json()

    response = refund(api, payment["id"], "refund-1", 1000)

    assert response.status_code == 409
    assert response.json()["error"] == "not_refundable"
    assert response.json()["payment"]["state"] == "pending"


def test_refund_beyond_the_remaining_amount_is_refused(api: httpx.Client) -> None:
    payment = paid_payment(api)

    response = refund(api, payment["id"], "refund-1", 25001)

    assert response.status_code == 409
    assert response.json()["error"] == "refund_exceeds_remaining"


def test_cancel_pending_payment_then_it_is_not_cancellable(
    api: httpx.Client, receiver: Receiver
) -> None:
    payment = create(api, "key-1").json()

    cancelled = api.post(f"/v1/payments/{payment['id']}/cancel")
    again = api.post(f"/v1/payments/{payment['id']}/cancel")

    assert cancelled.json()["state"] == "cancelled"
    assert again.status_code == 409
    assert again.json()["error"] == "not_cancellable"
    assert again.json()["payment"]["state"] == "cancelled"
    assert receiver.wait_for(1)[0].json()["data"]["state"] == "cancelled"


def test_expired_payment_can_no_longer_be_paid(api: httpx.Client) -> None:
    payment = create(api, "key-1").json()

    expired = api.post(f"/_sandbox/payments/{payment['id']}/expire")
    pay = api.post(payment["checkout_url"], data={"outcome": "succeed"})

    assert expired.json()["state"] == "expired"
    assert pay.status_code == 409
    assert api.get(f"/v1/payments/{payment['id']}").json()["state"] == "expired"


def test_tamper_makes_the_gateway_report_another_amount_and_currency(api: httpx.Client) -> None:
    payment = create(api, "key-1").json()

    api.post(f"/_sandbox/payments/{payment['id']}/tamper", json={"amount": 1, "currency": "EUR"})

    reported = api.get(f"/v1/payments/{payment['id']}").json()
    assert (reported["amount"], reported["currency"]) == (1, "EUR")


def test_reset_clears_payments_and_faults(api: httpx.Client) -> None:
    create(api, "key-1")
    set_faults(api, fail_next_calls=5)

    api.post("/_sandbox/reset")

    assert stored_payments(api) == []
    assert api.get("/_sandbox/faults").json()["fail_next_calls"] == 0


# --- startup configuration and signing ---------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"CARD_GATEWAY_API_KEY": ""}, "CARD_GATEWAY_API_KEY"),
        ({"CARD_GATEWAY_CONTROL_TOKEN": ""}, "CARD_GATEWAY_CONTROL_TOKEN"),
        ({"CARD_GATEWAY_WEBHOOK_SECRETS": " , "}, "CARD_GATEWAY_WEBHOOK_SECRETS"),
        ({"CARD_GATEWAY_PORT": "http"}, "CARD_GATEWAY_PORT"),
        ({"CARD_GATEWAY_NOTIFY_URL": "not-a-url"}, "CARD_GATEWAY_NOTIFY_URL"),
    ],
    ids=["api-key", "control-token", "webhook-secrets", "port", "notify-url"],
)
def test_gateway_refuses_to_start_naming_the_bad_setting(
    overrides: dict[str, str], named: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sandboxes.card_gateway"],
        cwd=REPO_ROOT,
        env=gateway_env(API_KEY, SECRETS, **{"CARD_GATEWAY_PORT": str(free_port()), **overrides}),
        capture_output=True,
        text=True,
        timeout=20,
    )

    assert result.returncode == 2
    assert named in result.stderr


def test_sign_gives_one_hmac_of_timestamp_and_body_per_secret() -> None:
    body = b'{"id":"evt_1"}'
    expected = [
        hmac.new(secret.encode(), b"1700000000." + body, hashlib.sha256).hexdigest()
        for secret in SECRETS
    ]

    header = sign(body, list(SECRETS), 1700000000)

    assert header == f"t=1700000000,v1={expected[0]},v1={expected[1]}"


def test_verify_rejects_a_stale_timestamp() -> None:
    header = sign(b"{}", ["s"], 1700000000)

    assert verify(header, b"{}", "s", now=1700000100)
    assert not verify(header, b"{}", "s", now=1700000000 + 301)


# --- records across a restart -----------------------------------------------------------


def test_a_killed_gateway_comes_back_with_its_payments_refunds_and_unsent_notifications(
    tmp_path: Path, receiver: Receiver
) -> None:
    records = tmp_path / "records"
    env = gateway_env(
        API_KEY, SECRETS, CARD_GATEWAY_STATE_DIR=str(records), CARD_GATEWAY_NOTIFY_URL=receiver.url
    )
    with killable_sandbox("card_gateway", tmp_path, env, ["CARD_GATEWAY_PORT"]) as gateway:
        url = f"http://127.0.0.1:{gateway.ports['CARD_GATEWAY_PORT']}"
        gateway.start(f"{url}/healthz")
        with httpx.Client(base_url=url, auth=SandboxAuth(API_KEY), timeout=5) as api:
            receiver.clear()
            refunded = paid_payment(api, "kill-1")
            first_refund = refund(api, refunded["id"], "kill-refund", 25000).json()
            set_faults(api, reorder_notifications=True)
            held = paid_payment(api, "kill-2", reference="booking-2")
            log = api.get("/_sandbox/notifications").json()["data"]
            assert [d["status"] for d in log if d["event"]["data"]["payment_id"] == held["id"]] == [
                "held"
            ]

            gateway.kill()
            gateway.start(f"{url}/healthz")

            assert api.get(f"/v1/payments/{refunded['id']}").json()["state"] == "refunded"
            assert api.get(f"/v1/payments/{held['id']}").json()["state"] == "paid"
            assert [r["id"] for r in api.get("/_sandbox/refunds").json()["data"]] == [
                first_refund["id"]
            ]
            # Retries after the restart are answered as the first requests were.
            again = create(api, "kill-2", reference="booking-2")
            assert (again.status_code, again.json()["id"]) == (200, held["id"])
            retried = refund(api, refunded["id"], "kill-refund", 25000)
            assert (retried.status_code, retried.json()["id"]) == (200, first_refund["id"])

            def held_one_sent() -> bool:
                return any(n.json()["data"]["payment_id"] == held["id"] for n in receiver.received)

            assert eventually(held_one_sent), "the held notification was not sent after restart"
