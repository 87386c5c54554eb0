"""The contact snapshot: who gets the mails of a booking, payment or order.

Copied when the booking or order is created (the address may change later; a mail goes
where the customer said at the time) and carried in the events the notify service reads.
Each contract package has its own `Contact` message with `email` and `locale`; this is the
one value and the one check for all of them. No address means no mail; no locale means cs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar

from google.protobuf.message import Message

from servicekit import validation
from servicekit.refusals import invalid_fields_refused

M = TypeVar("M", bound=Message)


class ContactLike(Protocol):
    @property
    def email(self) -> str: ...

    @property
    def locale(self) -> str: ...


@dataclass(frozen=True)
class Contact:
    email: str = ""  # empty: the caller gave none, and no mail is sent
    locale: str = validation.LOCALES[0]

    def __post_init__(self) -> None:
        validation.email_address("contact.email", self.email)
        validation.locale("contact.locale", self.locale)

    @classmethod
    def checked(cls, value: ContactLike, field: str = "contact") -> Contact:
        """A caller's contact, refused naming the field when it breaks a rule; an unset
        message is the default (no address, cs)."""
        with invalid_fields_refused():
            return cls.of(value, field)

    @classmethod
    def of(cls, value: ContactLike, field: str = "contact") -> Contact:
        """A contact from a message; raises `validation.InvalidField` naming the field."""
        email = validation.email_address(f"{field}.email", value.email)
        return cls(email, validation.locale(f"{field}.locale", value.locale))


def message(kind: type[M], value: Contact) -> M:
    """A package's Contact message from the value."""
    return kind(email=value.email, locale=value.locale)


NO_CONTACT = Contact()  # what a caller that sends none gets: no mail, cs
