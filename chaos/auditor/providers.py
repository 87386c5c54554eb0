"""Snapshots of the sandboxes' own records: the card gateway's payments and refunds, the lock
provider's codes and door log, the mail server's messages and its delivery log by Message-ID.

Every answer is hostile until parsed: a record of the wrong shape, an answer that is not
JSON or a sandbox that does not answer is reported as a violation naming the store and the
record, never raised, and the audit goes on with the records it could read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import httpx

from chaos.auditor import snapshots as s
from chaos.auditor.findings import Violation
from services.notify.domain.model import message_id

READABLE = "provider_records_readable"
TIMEOUT_S = 30.0
LOOKUPS_AT_ONCE = 8
MAX_TEXT = 512
T = TypeVar("T")


@dataclass(frozen=True)
class Sandbox:
    url: str
    control_token: str

    def client(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.control_token}"} if self.control_token else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=TIMEOUT_S)


def sandboxes(env: Mapping[str, str]) -> dict[str, Sandbox]:
    lookup = env.get("MAIL_LOOKUP_URL", "").removesuffix("/v1/lookup")
    mail = (
        env.get("MAIL_SANDBOX_URL")
        or lookup
        or f"http://127.0.0.1:{env.get('MAIL_SANDBOX_HTTP_PORT', '18083')}"
    )
    return {
        "card_gateway": Sandbox(
            env.get("CARD_GATEWAY_URL", ""), env.get("CARD_GATEWAY_CONTROL_TOKEN", "")
        ),
        "lock_provider": Sandbox(
            env.get("LOCK_PROVIDER_URL", ""), env.get("LOCK_PROVIDER_CONTROL_TOKEN", "")
        ),
        "mail": Sandbox(mail, env.get("MAIL_SANDBOX_CONTROL_TOKEN", "")),
    }


class Unreadable(ValueError):
    pass


def text(record: Mapping[str, Any], name: str) -> str:
    value = record.get(name)
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise Unreadable(f"{name}: {str(value)[:80]!r}")
    return value


def optional_text(record: Mapping[str, Any], name: str) -> str | None:
    return None if record.get(name) is None else text(record, name)


def number(record: Mapping[str, Any], name: str) -> int:
    value = record.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise Unreadable(f"{name}: {str(value)[:80]!r}")
    return value


def moment(record: Mapping[str, Any], name: str) -> datetime:
    value = datetime.fromisoformat(text(record, name))
    if value.tzinfo is None:
        raise Unreadable(f"{name}: no time zone")
    return value


def parsed_records(
    store: str, answer: object, parse: Callable[[Mapping[str, Any]], T], problems: list[Violation]
) -> list[T]:
    """The records of a `{"data": [...]}` answer that parse; each other one is a problem."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        problems.append(_unreadable(store, "the answer", "no list under data"))
        return []
    records: list[T] = []
    for index, record in enumerate(data):
        try:
            if not isinstance(record, dict):
                raise Unreadable("not an object")
            records.append(parse(record))
        except (Unreadable, ValueError, TypeError) as why:
            problems.append(_unreadable(store, f"record {index}", str(why)[:200]))
    return records


def _unreadable(store: str, record: str, why: str) -> Violation:
    return Violation(READABLE, {"store": store, "record": record}, {store: why})


def charge(r: Mapping[str, Any]) -> s.Charge:
    return s.Charge(
        text(r, "id"),
        text(r, "reference"),
        text(r, "state"),
        number(r, "amount"),
        text(r, "currency"),
        number(r, "refunded_amount"),
    )


def refund(r: Mapping[str, Any]) -> s.Refund:
    return s.Refund(
        text(r, "id"), text(r, "payment_id"), number(r, "amount"), text(r, "idempotency_key")
    )


def lock_code(r: Mapping[str, Any]) -> s.LockCode:
    return s.LockCode(
        text(r, "access_code_id"),
        text(r, "device_id"),
        text(r, "name"),
        text(r, "code"),
        moment(r, "starts_at"),
        moment(r, "ends_at"),
        text(r, "status"),
    )


def door_try(r: Mapping[str, Any]) -> s.DoorTry:
    opened = optional_text(r, "access_code_id")
    if r.get("opens") is not (opened is not None):
        raise Unreadable(f"opens {r.get('opens')!r} with code {opened!r}")
    return s.DoorTry(
        text(r, "device_id"), text(r, "pin"), moment(r, "at"), moment(r, "wall"), opened
    )


def mail_message_id(r: Mapping[str, Any]) -> str:
    return optional_text(r, "message_id") or ""


async def _get(
    client: httpx.AsyncClient, store: str, path: str, problems: list[Violation], **params: str
) -> object:
    try:
        answer = await client.get(path, params=params)
        if answer.status_code != 200:
            raise Unreadable(f"HTTP {answer.status_code}")
        return answer.json()
    except (httpx.HTTPError, Unreadable, ValueError) as why:
        problems.append(_unreadable(store, path, f"{type(why).__name__}: {str(why)[:200]}"))
        return None


async def read_providers(env: Mapping[str, str], stores: s.Stores) -> None:
    boxes = sandboxes(env)
    problems = stores.unreadable
    async with boxes["card_gateway"].client() as card:
        found = await _get(card, "card_gateway", "/_sandbox/payments", problems)
        stores.charges += parsed_records("card_gateway", found, charge, problems)
        found = await _get(card, "card_gateway", "/_sandbox/refunds", problems)
        stores.refunds += parsed_records("card_gateway", found, refund, problems)
    async with boxes["lock_provider"].client() as lock:
        found = await _get(lock, "lock_provider", "/_sandbox/access_codes", problems)
        stores.codes += parsed_records("lock_provider", found, lock_code, problems)
        found = await _get(lock, "lock_provider", "/_sandbox/door_log", problems)
        stores.door_log += parsed_records("lock_provider", found, door_try, problems)
    async with boxes["mail"].client() as mail:
        found = await _get(mail, "mail", "/messages", problems)
        stores.mail_message_ids.update(parsed_records("mail", found, mail_message_id, problems))
        await _copies(mail, stores)


async def _copies(mail: httpx.AsyncClient, stores: s.Stores) -> None:
    """How many copies of each delivery's mail the server took, by its delivery log."""
    gate = asyncio.Semaphore(LOOKUPS_AT_ONCE)

    async def copies(key: str) -> None:
        async with gate:
            found = await _get(
                mail, "mail", "/v1/lookup", stores.unreadable, message_id=message_id(key)
            )
        copied = _lookup_copies(found) if isinstance(found, dict) else None
        if isinstance(found, dict) and copied is None and found.get("status") != "cannot_tell":
            stores.unreadable.append(_unreadable("mail", f"lookup of {key}", str(found)[:200]))
        stores.mail_copies[key] = copied

    await asyncio.gather(*(copies(d.delivery_key) for d in stores.deliveries))


def _lookup_copies(found: Mapping[str, Any]) -> int | None:
    status = found.get("status")
    if status == "not_received":
        return 0
    if status == "received":
        copies = found.get("copies")
        return copies if isinstance(copies, int) and not isinstance(copies, bool) else None
    return None  # cannot_tell, or an answer of another shape
