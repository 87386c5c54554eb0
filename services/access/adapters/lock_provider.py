"""The smart-lock provider's access codes, behind an interface the service layer depends on.

The HTTP adapter speaks the sandbox lock provider's API, shaped like Seam's access codes:
every call a POST with a JSON body and a bearer key, a code named by the client. There is
no idempotency key: a create sent twice makes two codes, so the service names each code
with a stable alias and looks it up after an ambiguous answer. Errors are split by what
the caller may conclude: `ProviderUnavailable` means the outcome is unknown (time-out,
connection error, 5xx, an answer that is not a well-formed code); `ProviderRefused` is a
definite answer. An answer's PIN is kept only in the returned value, whose repr hides it.
"""

from __future__ import annotations

import abc
from datetime import datetime
from typing import Any, Final

import httpx

from servicekit.provider_http import JsonExchange, UnknownOutcome
from services.access.domain.model import RemoteCode

MAX_TEXT: Final = 256
MAX_CODES: Final = 5000  # a listing longer than any lock holds is not believed


class ProviderUnavailable(UnknownOutcome):
    """No definite answer: the request may or may not have been applied."""


class ProviderRefused(Exception):
    """The provider answered and declined (an unknown device, a code not found)."""

    def __init__(self, status: int, code: str) -> None:
        super().__init__(f"{status} {code}")
        self.status = status
        self.code = code


class LockProvider(abc.ABC):
    @abc.abstractmethod
    async def create_code(
        self, device_id: str, name: str, starts_at: datetime, ends_at: datetime
    ) -> RemoteCode: ...

    @abc.abstractmethod
    async def list_codes(
        self, device_id: str | None = None, name: str | None = None
    ) -> list[RemoteCode]:
        """Live codes (setting, set, removing), filtered by device and exact name."""

    @abc.abstractmethod
    async def get_code(self, provider_code_id: str) -> RemoteCode | None:
        """The code, or None when the provider no longer has it (removed or unknown)."""

    @abc.abstractmethod
    async def delete_code(self, provider_code_id: str) -> RemoteCode | None:
        """Starts or repeats a removal: the code as it is now, or None when it is gone."""

    async def aclose(self) -> None:
        return None


class HttpLockProvider(LockProvider):
    def __init__(self, client: httpx.AsyncClient) -> None:
        self._exchange = JsonExchange(
            client, "the lock provider", ProviderUnavailable, "lock_provider"
        )

    async def create_code(
        self, device_id: str, name: str, starts_at: datetime, ends_at: datetime
    ) -> RemoteCode:
        body = {
            "device_id": device_id,
            "name": name,
            "starts_at": starts_at.isoformat(),
            "ends_at": ends_at.isoformat(),
        }
        return remote_of(await self._call("/access_codes/create", body))

    async def list_codes(
        self, device_id: str | None = None, name: str | None = None
    ) -> list[RemoteCode]:
        body = {k: v for k, v in (("device_id", device_id), ("name", name)) if v is not None}
        found = (await self._call("/access_codes/list", body)).get("access_codes")
        if not isinstance(found, list) or len(found) > MAX_CODES:
            raise ProviderUnavailable("list: no list of access codes in the answer")
        return [remote_of({"access_code": item}) for item in found]

    async def get_code(self, provider_code_id: str) -> RemoteCode | None:
        return await self._gone_is_none("/access_codes/get", provider_code_id)

    async def delete_code(self, provider_code_id: str) -> RemoteCode | None:
        return await self._gone_is_none("/access_codes/delete", provider_code_id)

    async def aclose(self) -> None:
        await self._exchange.aclose()

    async def _gone_is_none(self, path: str, provider_code_id: str) -> RemoteCode | None:
        try:
            return remote_of(await self._call(path, {"access_code_id": provider_code_id}))
        except ProviderRefused as refused:
            if refused.status == 404 and refused.code == "access_code_not_found":
                return None
            raise

    async def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        # The path's last word names the operation: create, list, get, delete.
        operation = path.rsplit("/", 1)[-1]
        status, data = await self._exchange.call("POST", path, json=body, operation=operation)
        if status < 300:
            return data
        raise ProviderRefused(status, str(data.get("error", ""))[:MAX_TEXT])


def remote_of(data: dict[str, Any]) -> RemoteCode:
    """The provider's code object; an incomplete or mistyped one is no answer at all."""
    code = data.get("access_code")
    if not isinstance(code, dict):
        raise ProviderUnavailable("the answer holds no access code")
    pin = _text(code, "code")
    if not pin.isdigit():
        raise ProviderUnavailable("the access code in the answer has no valid PIN")
    return RemoteCode(
        provider_code_id=_text(code, "access_code_id"),
        device_id=_text(code, "device_id"),
        name=_text(code, "name"),
        status=_text(code, "status"),
        starts_at=_moment(code, "starts_at"),
        ends_at=_moment(code, "ends_at"),
        pin=pin,
    )


def _text(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT:
        raise ProviderUnavailable(f"the access code in the answer has no valid {name}")
    return value


def _moment(data: dict[str, Any], name: str) -> datetime:
    try:
        moment = datetime.fromisoformat(_text(data, name))
    except ValueError:
        raise ProviderUnavailable(f"the access code in the answer has no valid {name}") from None
    if moment.tzinfo is None:
        raise ProviderUnavailable(f"the access code in the answer has no zone in {name}")
    return moment
