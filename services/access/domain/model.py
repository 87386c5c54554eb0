"""Grants and provisions, with their state machines.

A grant is the access one booking has to one slot: the slot, the window copied from the
booking when it was confirmed or moved, the lock device, and its state. A provision is one
attempt to put the grant's credential on the lock: it names the code at the provider with
a stable alias (its own id), so a code whose creation was answered ambiguously can be
found again, and it holds the provider's id of the code it adopted. A moved booking gets a
new grant and a new provision; the old ones are revoked. Every transition says whether it
changed anything, so a repeated, late or reordered input changes nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from servicekit.refusals import InvalidRequest


class GrantState(StrEnum):
    PLANNED = "planned"  # the credential is not at the provider yet
    ACTIVE = "active"  # the provider holds the code: its PIN may be disclosed
    REVOKE_PENDING = "revoke_pending"  # cancelled, moved or ended; removal not yet confirmed
    REVOKED = "revoked"  # no code of the grant opens the door any more
    FAILED = "failed"  # the provider refused, or its codes need a human


LIVE = frozenset({GrantState.PLANNED, GrantState.ACTIVE})


class ProvisionState(StrEnum):
    PENDING = "pending"  # nothing sent yet
    CREATING = "creating"  # a create may have reached the provider: look the alias up first
    CREATED = "created"  # the one code under the alias is adopted
    REMOVING = "removing"  # its code is being removed at the provider
    REMOVED = "removed"  # the provider confirmed the code gone
    ABANDONED = "abandoned"  # never created, and never will be
    DUPLICATED = "duplicated"  # several codes under the alias: none adopted, an incident
    FAILED = "failed"  # the provider refused the create


# Provisions whose code may still be at the provider, or may yet appear there.
UNSETTLED = frozenset({ProvisionState.CREATING, ProvisionState.CREATED, ProvisionState.REMOVING})


@dataclass(frozen=True)
class Window:
    """When the credential opens the door: [valid_from, valid_to)."""

    valid_from: datetime
    valid_to: datetime

    def __post_init__(self) -> None:
        if self.valid_from.tzinfo is None or not self.valid_from < self.valid_to:
            raise InvalidRequest("an access window needs aware times and valid_from < valid_to")

    def activation_at(self, lead: timedelta) -> datetime:
        """The earliest moment its credential may be created at the provider."""
        return self.valid_from - lead

    def allows_activation(self, now: datetime, lead: timedelta) -> bool:
        return self.activation_at(lead) <= now < self.valid_to

    def to_json(self) -> dict[str, str]:
        return {"valid_from": self.valid_from.isoformat(), "valid_to": self.valid_to.isoformat()}

    @classmethod
    def of_json(cls, data: dict[str, object]) -> Window:
        return cls(
            datetime.fromisoformat(str(data["valid_from"])),
            datetime.fromisoformat(str(data["valid_to"])),
        )


@dataclass
class Grant:
    grant_id: str
    booking_id: str
    org_id: str
    user: str
    slot_id: str
    device_id: str
    window: Window
    state: GrantState
    provision_id: str  # its current provision
    booking_move: int = 0  # the booking's move it serves: 0 as confirmed, n after its n-th
    failure: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def is_live(self) -> bool:
        return self.state in LIVE

    def holds(self, provision_id: str, window: Window) -> bool:
        """Is this still the grant a job was written for: live, same provision and window?"""
        return self.is_live and self.provision_id == provision_id and self.window == window

    def activate(self) -> bool:
        if self.state is not GrantState.PLANNED:
            return False
        self.state = GrantState.ACTIVE
        return True

    def end(self) -> bool:
        """Cancelled, moved or past its window: its code must go before it is revoked."""
        if not self.is_live:
            return False
        self.state = GrantState.REVOKE_PENDING
        return True

    def confirm_revoked(self) -> bool:
        if self.state is not GrantState.REVOKE_PENDING:
            return False
        self.state = GrantState.REVOKED
        return True

    def fail(self, why: str) -> bool:
        if not self.is_live:
            return False
        self.state, self.failure = GrantState.FAILED, why
        return True

    def reprovision(self, provision_id: str) -> bool:
        """A new credential for a live grant whose code vanished at the provider."""
        if not self.is_live:
            return False
        self.state, self.provision_id = GrantState.PLANNED, provision_id
        return True


@dataclass
class Provision:
    provision_id: str
    grant_id: str
    device_id: str
    state: ProvisionState
    provider_code_id: str | None = None  # the provider's id of the adopted code

    def alias(self, prefix: str) -> str:
        """The code's name at the provider: stable, so an ambiguous create can be found."""
        return alias(prefix, self.provision_id)

    def start_creating(self) -> bool:
        if self.state is not ProvisionState.PENDING:
            return False
        self.state = ProvisionState.CREATING
        return True

    def adopt(self, provider_code_id: str) -> bool:
        if self.state is not ProvisionState.CREATING:
            return False
        self.state, self.provider_code_id = ProvisionState.CREATED, provider_code_id
        return True

    def orphan(self, provider_code_id: str) -> bool:
        """A code arrived for a grant that moved on: it is removed, never adopted."""
        if self.state is not ProvisionState.CREATING:
            return False
        self.state, self.provider_code_id = ProvisionState.REMOVING, provider_code_id
        return True

    def start_removing(self) -> bool:
        if self.state is not ProvisionState.CREATED:
            return False
        self.state = ProvisionState.REMOVING
        return True

    def confirm_removed(self, provider_code_id: str) -> bool:
        if self.provider_code_id != provider_code_id or self.state not in UNSETTLED:
            return False
        self.state = ProvisionState.REMOVED
        return True

    def abandon(self) -> bool:
        """Nothing is (or ever was) at the provider under its alias."""
        if self.state not in (ProvisionState.PENDING, ProvisionState.CREATING):
            return False
        self.state = ProvisionState.ABANDONED
        return True

    def mark(self, state: ProvisionState) -> bool:
        """Duplicated or failed: the end of a creation that went wrong."""
        if self.state is not ProvisionState.CREATING:
            return False
        self.state = state
        return True


def alias(prefix: str, provision_id: str) -> str:
    return f"{prefix}-{provision_id}"


def provision_of_alias(prefix: str, name: str) -> str | None:
    """The provision id an alias names, or None for a code that is not one of ours."""
    head, dash, rest = name.partition("-")
    return rest if dash and head == prefix and rest else None


@dataclass(frozen=True)
class RemoteCode:
    """A code as the provider reports it. Its PIN is never shown in a repr or a log."""

    provider_code_id: str
    device_id: str
    name: str
    status: str  # setting, set, removing, removed
    starts_at: datetime
    ends_at: datetime
    pin: str = ""

    def __repr__(self) -> str:
        return (
            f"RemoteCode({self.provider_code_id!r}, device={self.device_id!r},"
            f" name={self.name!r}, status={self.status!r})"
        )

    @property
    def is_live(self) -> bool:
        return self.status in ("setting", "set")

    @property
    def is_gone(self) -> bool:
        return self.status == "removed"


@dataclass(frozen=True)
class CodeToRemove:
    """What a removal job expects to destroy: one code of one provision of one grant, for
    one window. The job does nothing if any of it changed, so an old removal never touches
    the replacement credential of a moved booking."""

    grant_id: str
    provision_id: str
    provider_code_id: str
    window: Window

    def to_json(self) -> dict[str, object]:
        return {
            "grant_id": self.grant_id,
            "provision_id": self.provision_id,
            "provider_code_id": self.provider_code_id,
            **self.window.to_json(),
        }

    @classmethod
    def of_json(cls, data: dict[str, object]) -> CodeToRemove:
        return cls(
            str(data["grant_id"]),
            str(data["provision_id"]),
            str(data["provider_code_id"]),
            Window.of_json(data),
        )

    def still_wanted_gone(self, grant: Grant | None, provision: Provision | None) -> bool:
        """The state the job expects: the provision of that grant and window, not creating
        (a lookup may still adopt its code), and the code not the grant's live credential."""
        if grant is None or provision is None or provision.grant_id != grant.grant_id:
            return False
        if grant.grant_id != self.grant_id or grant.window != self.window:
            return False
        if provision.state is ProvisionState.CREATING:
            return False
        live_code = (
            grant.is_live
            and grant.provision_id == provision.provision_id
            and provision.provider_code_id == self.provider_code_id
        )
        return not live_code


@dataclass(frozen=True)
class Activation:
    """What an activation job expects: the grant still live on this provision and window."""

    grant_id: str
    provision_id: str
    window: Window

    def to_json(self) -> dict[str, object]:
        return {
            "grant_id": self.grant_id,
            "provision_id": self.provision_id,
            **self.window.to_json(),
        }

    @classmethod
    def of_json(cls, data: dict[str, object]) -> Activation:
        return cls(str(data["grant_id"]), str(data["provision_id"]), Window.of_json(data))


class Lookup(StrEnum):
    """What a look-up by alias found, and what it allows."""

    NONE = "none"  # nothing there: the create may be sent (again)
    ONE = "one"  # exactly one code: adopt it
    SEVERAL = "several"  # a duplicate on the device: an incident, adopt neither


def judge_lookup(found: list[RemoteCode]) -> Lookup:
    live = [code for code in found if code.is_live]
    if not live:
        return Lookup.NONE
    return Lookup.ONE if len(live) == 1 else Lookup.SEVERAL
