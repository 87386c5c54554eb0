"""The lock provider's model: devices, their access codes, the door log and the faults.

Pure and synchronous, like the card gateway's: every operation runs to completion on the
event loop, so nothing needs a lock. A code's status is not moved on by a timer. Each code
carries its timeline of status changes, written in full when it is created or deleted
(a change still in the future when a delay fault is set), and its status is the latest
change that is not in the future. So delays need no background task, and the sandbox
clock moves statuses along with everything else. Every device added, code written and
door try is also written to the records (sandboxes/records.py), from which a restarted
provider restores them; the faults and the clock offset are the sandbox's own controls and
start afresh.
"""

from __future__ import annotations

import secrets
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sandboxes.faults import Faults
from sandboxes.records import Records
from sandboxes.refusals import Refusal

Status = Literal["setting", "set", "removing", "removed"]
# A lock keeps honouring a code until it confirms the removal.
OPENS_THE_DOOR: frozenset[Status] = frozenset({"set", "removing"})
MAX_LIVE_CODES_PER_DEVICE = 1000
MAX_DEVICES = 1000
# The door log keeps the newest tries; an audit after a long soak reads it before it wraps.
MAX_DOOR_LOG = 100_000


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


def new_pin() -> str:
    return f"{secrets.randbelow(10**6):06d}"


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _moment(raw: object) -> datetime:
    return datetime.fromisoformat(str(raw))


@dataclass
class LockFaults(Faults):
    timeout_next_creates: int = 0
    timeout_next_deletes: int = 0
    duplicate_next_creates: int = 0
    fail_next_calls: int = 0
    setting_delay_ms: int = 0
    removing_delay_ms: int = 0
    hang_seconds: float = 30.0


@dataclass(frozen=True)
class StatusChange:
    status: Status
    at: datetime

    def to_api(self) -> dict[str, object]:
        return {"status": self.status, "at": iso(self.at)}


@dataclass(frozen=True)
class CodeRequest:
    """What a create call asks for; ``code`` None lets the provider choose the PIN."""

    device_id: str
    name: str
    starts_at: datetime
    ends_at: datetime
    code: str | None = None


@dataclass
class AccessCode:
    id: str
    request: CodeRequest
    code: str
    created_at: datetime
    timeline: list[StatusChange]

    def status(self, now: datetime) -> Status:
        current = self.timeline[0].status
        for change in self.timeline:
            if change.at <= now:
                current = change.status
        return current

    def opens(self, pin: str, at: datetime, now: datetime) -> bool:
        in_window = self.request.starts_at <= at < self.request.ends_at
        return pin == self.code and in_window and self.status(now) in OPENS_THE_DOOR

    def remove(self, now: datetime, delay: timedelta) -> None:
        # A code deleted while still being set is never set.
        self.timeline = [change for change in self.timeline if change.at <= now]
        self.timeline += [StatusChange("removing", now), StatusChange("removed", now + delay)]

    def to_api(self, now: datetime) -> dict[str, object]:
        return {
            "access_code_id": self.id,
            "device_id": self.request.device_id,
            "name": self.request.name,
            "code": self.code,
            "starts_at": iso(self.request.starts_at),
            "ends_at": iso(self.request.ends_at),
            "status": self.status(now),
            "created_at": iso(self.created_at),
        }

    def history(self, now: datetime) -> list[dict[str, object]]:
        return [change.to_api() for change in self.timeline if change.at <= now]

    def to_record(self) -> dict[str, object]:
        request = self.request
        return {
            "id": self.id,
            "device_id": request.device_id,
            "name": request.name,
            "starts_at": request.starts_at.isoformat(),
            "ends_at": request.ends_at.isoformat(),
            "requested_code": request.code,
            "code": self.code,
            "created_at": self.created_at.isoformat(),
            "timeline": [[change.status, change.at.isoformat()] for change in self.timeline],
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> AccessCode:
        request = CodeRequest(
            record["device_id"],
            record["name"],
            _moment(record["starts_at"]),
            _moment(record["ends_at"]),
            record["requested_code"],
        )
        timeline = [StatusChange(status, _moment(at)) for status, at in record["timeline"]]
        return cls(record["id"], request, record["code"], _moment(record["created_at"]), timeline)


@dataclass(frozen=True)
class DoorTry:
    """One PIN typed on a device: when (the provider's now, and the real time, which the
    clock offset does not move), for which moment, and the code that opened, if any."""

    device_id: str
    pin: str
    at: datetime
    now: datetime
    wall: datetime
    access_code_id: str | None

    def to_api(self) -> dict[str, object]:
        return {
            "device_id": self.device_id,
            "pin": self.pin,
            "at": iso(self.at),
            "now": iso(self.now),
            "wall": iso(self.wall),
            "opens": self.access_code_id is not None,
            "access_code_id": self.access_code_id,
        }

    def to_record(self) -> dict[str, object]:
        return {
            "device_id": self.device_id,
            "pin": self.pin,
            "at": self.at.isoformat(),
            "now": self.now.isoformat(),
            "wall": self.wall.isoformat(),
            "access_code_id": self.access_code_id,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> DoorTry:
        at, now, wall = (_moment(record[name]) for name in ("at", "now", "wall"))
        return cls(record["device_id"], record["pin"], at, now, wall, record["access_code_id"])


@dataclass
class LockState:
    devices: set[str]
    clock: Callable[[], datetime] = utc_now
    make_id: Callable[[], str] = new_id
    make_pin: Callable[[], str] = new_pin
    codes: dict[str, AccessCode] = field(default_factory=dict)
    faults: LockFaults = field(default_factory=LockFaults)
    clock_offset: timedelta = timedelta(0)
    door_log: deque[DoorTry] = field(default_factory=lambda: deque(maxlen=MAX_DOOR_LOG))
    records: Records = field(default_factory=Records)
    door_tries: int = 0  # every try ever logged: the key of the next one in the records

    def restore(self) -> None:
        """Read back the devices added, the codes and the door log of the records."""
        self.devices.update(str(record["device_id"]) for record in self.records.load("device"))
        for record in self.records.load("code"):
            code = AccessCode.from_record(record)
            self.codes[code.id] = code
        for record in self.records.load("door"):
            self.door_log.append(DoorTry.from_record(record))
            self.door_tries += 1

    def now(self) -> datetime:
        return self.clock() + self.clock_offset

    # --- the provider API -------------------------------------------------------------

    def create(self, request: CodeRequest) -> AccessCode:
        live = self._live_pins(request.device_id)
        if request.code is not None and request.code in live:
            raise Refusal(409, "code_in_use")
        if len(live) >= MAX_LIVE_CODES_PER_DEVICE:
            raise Refusal(409, "too_many_access_codes")
        created = self._add(request, request.code or self._free_pin(request.device_id))
        if self.faults.take("duplicate_next_creates"):
            # What a provider does when it applies one request twice: two codes, one name.
            self._add(request, self._free_pin(request.device_id))
        return created

    def find(self, device_id: str | None, name: str | None) -> list[AccessCode]:
        if device_id is not None:
            self._require_device(device_id)
        now = self.now()
        return [
            code
            for code in self.codes.values()
            if code.status(now) != "removed"
            and (device_id is None or code.request.device_id == device_id)
            and (name is None or code.request.name == name)
        ]

    def get(self, access_code_id: str) -> AccessCode:
        code = self.codes.get(access_code_id)
        if code is None or code.status(self.now()) == "removed":
            raise Refusal(404, "access_code_not_found")
        return code

    def delete(self, access_code_id: str) -> AccessCode:
        code = self.get(access_code_id)
        now = self.now()
        if code.status(now) != "removing":
            code.remove(now, timedelta(milliseconds=self.faults.removing_delay_ms))
            self._save(code)
        return code

    # --- the sandbox's own controls -----------------------------------------------------

    def door(self, device_id: str, pin: str, at: datetime | None) -> AccessCode | None:
        """The code that opens the door for ``pin`` at ``at`` (default now), if any; every
        try on a known device is written to the door log."""
        self._require_device(device_id)
        wall = self.clock()
        now = wall + self.clock_offset
        moment = now if at is None else at
        on_device = (c for c in self.codes.values() if c.request.device_id == device_id)
        code = next((c for c in on_device if c.opens(pin, moment, now)), None)
        entry = DoorTry(device_id, pin, moment, now, wall, code.id if code else None)
        self.door_log.append(entry)
        self.records.put("door", f"{self.door_tries:012d}", entry.to_record())
        self.door_tries += 1
        return code

    def add_device(self, device_id: str) -> bool:
        """Adds a device; False when it already exists."""
        if device_id in self.devices:
            return False
        if len(self.devices) >= MAX_DEVICES:
            raise Refusal(409, "too_many_devices")
        self.devices.add(device_id)
        self.records.put("device", device_id, {"device_id": device_id})
        return True

    def set_clock_offset(self, seconds: float) -> None:
        self.clock_offset = timedelta(seconds=seconds)

    def reset(self) -> None:
        self.codes.clear()
        self.door_log.clear()
        self.faults.clear()
        self.clock_offset = timedelta(0)
        self.records.clear()
        # Devices added since the start are kept by a reset; so are their records.
        for device_id in self.devices:
            self.records.put("device", device_id, {"device_id": device_id})

    def _add(self, request: CodeRequest, pin: str) -> AccessCode:
        now = self.now()
        delay = timedelta(milliseconds=self.faults.setting_delay_ms)
        timeline = [StatusChange("setting", now), StatusChange("set", now + delay)]
        code = AccessCode(self.make_id(), request, pin, now, timeline)
        self.codes[code.id] = code
        self._save(code)
        return code

    def _save(self, code: AccessCode) -> None:
        self.records.put("code", code.id, code.to_record())

    def _live_pins(self, device_id: str) -> set[str]:
        self._require_device(device_id)
        now = self.now()
        return {
            code.code
            for code in self.codes.values()
            if code.request.device_id == device_id and code.status(now) != "removed"
        }

    def _free_pin(self, device_id: str) -> str:
        # Live codes per device are capped far below a million, so this ends quickly.
        taken = self._live_pins(device_id)
        while (pin := self.make_pin()) in taken:
            pass
        return pin

    def _require_device(self, device_id: str) -> None:
        if device_id not in self.devices:
            raise Refusal(404, "device_not_found")
