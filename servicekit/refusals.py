"""Refusals: what a service tells a caller it will not do, and of which kind.

A refusal is a value of the domain (pure: no gRPC here), with the contract's
machine-readable `reason` and a `kind`. `servicekit.errors` turns the kind into one status
code, the same in every service. The few refusals every service shares (a malformed
request, an unknown id, a reused idempotency key) are defined once here; each service
defines its own beside them, subclassing `Refusal`.
"""

from __future__ import annotations

from enum import StrEnum
from types import TracebackType
from typing import ClassVar

from servicekit.validation import InvalidField


class Kind(StrEnum):
    INVALID = "invalid"  # the request itself is malformed
    NOT_FOUND = "not_found"
    # What the request would create, or its idempotency key, already names something else.
    ALREADY_EXISTS = "already_exists"
    PRECONDITION = "precondition"  # well formed, but the current state refuses it
    UNAVAILABLE = "unavailable"  # a provider did not answer; the caller may try again


class Refusal(Exception):
    """Base of every error a caller can be told about.

    A refusal names its reason and kind where it is declared:
    `class SlotUnavailable(Refusal, reason="slot_unavailable", kind=Kind.PRECONDITION)`.
    """

    reason: ClassVar[str] = "refused"
    kind: ClassVar[Kind] = Kind.PRECONDITION

    def __init_subclass__(cls, reason: str = "", kind: Kind | None = None) -> None:
        super().__init_subclass__()
        if reason:
            cls.reason = reason
        if kind is not None:
            cls.kind = kind

    @property
    def metadata(self) -> dict[str, str]:
        """What the caller may need beside the reason (an existing id, a field)."""
        return {}


class InvalidRequest(Refusal, reason="validation_error", kind=Kind.INVALID):
    """A malformed request; `field` names the bad field when one is to blame."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field

    @property
    def metadata(self) -> dict[str, str]:
        return {"field": self.field} if self.field else {}


class InvalidIdempotencyKey(InvalidRequest, reason="invalid_idempotency_key"):
    """The key is not 1 to 128 characters of A-Z a-z 0-9 . _ : -."""


class NotFound(Refusal, reason="not_found", kind=Kind.NOT_FOUND):
    """No such resource, or one the caller may not know exists."""


class IdempotencyConflict(Refusal, reason="idempotency_conflict", kind=Kind.ALREADY_EXISTS):
    """The key was used before for a different request; the original is untouched."""


class invalid_fields_refused:  # lower case: it reads as the function it replaced
    """Turns servicekit's `InvalidField` into an `InvalidRequest` (or a subclass).

    A class rather than a generator-based context manager: every field a request names
    is checked inside one, ten in a checkout, and a generator costs several times more
    to enter and leave."""

    __slots__ = ("_as_error",)

    def __init__(self, as_error: type[InvalidRequest] = InvalidRequest) -> None:
        self._as_error = as_error

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: TracebackType | None
    ) -> None:
        if isinstance(error, InvalidField):
            raise self._as_error(error.problem, error.field) from None
