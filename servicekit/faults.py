"""What kind of failure an exception is, so every worker reacts to it the same way.

Three kinds matter. An *outage* (the database or the broker cannot be reached) says
nothing about the work itself: the work waits, spends no attempts, and resumes when the
dependency returns. A *transient conflict* (a deadlock, a serialization failure, a lock
or statement time-out) is the database asking for the same work to be tried again: it is
retried a bounded number of times. Anything else is a property of the work (a poison
message, a bug) and retrying it cannot help.
"""

from __future__ import annotations

from enum import StrEnum

from aiokafka import errors as kafka_errors
from sqlalchemy import exc as sa_exc

# Connection exceptions (class 08), the server going away or refusing connections, and too
# many connections: the database is unreachable for now.
_OUTAGE_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})
# Deadlock, serialization failure, lock time-out, statement time-out: try the work again.
_CONFLICT_STATES = frozenset({"40001", "40P01", "55P03", "57014"})


class Fault(StrEnum):
    OUTAGE = "outage"
    CONFLICT = "conflict"
    PERMANENT = "permanent"


def classify(error: BaseException) -> Fault:
    if database_unreachable(error) or broker_unreachable(error):
        return Fault.OUTAGE
    if sqlstate_of(error) in _CONFLICT_STATES:
        return Fault.CONFLICT
    return Fault.PERMANENT


def sqlstate_of(error: BaseException) -> str | None:
    """The SQLSTATE of a database error, through SQLAlchemy's wrapper and causes."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        state = getattr(current, "sqlstate", None)
        if isinstance(state, str) and state:
            return state
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__
    return None


def database_unreachable(error: BaseException) -> bool:
    """The database could not be reached or dropped the connection."""
    if isinstance(error, sa_exc.TimeoutError):  # no pooled connection came free in time
        return True
    if isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated:
        return True
    state = sqlstate_of(error)
    if state is not None:
        return state.startswith("08") or state in _OUTAGE_STATES
    # A connection that broke before the server said anything carries no SQLSTATE.
    return isinstance(error, (sa_exc.OperationalError, sa_exc.InterfaceError, OSError))


def broker_unreachable(error: BaseException) -> bool:
    return isinstance(error, BROKER_OUTAGE_ERRORS)


# Errors that say the broker could not be reached or did not answer in time, as opposed to
# a problem with one message.
BROKER_OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    kafka_errors.KafkaConnectionError,
    kafka_errors.KafkaTimeoutError,
    kafka_errors.NodeNotReadyError,
    kafka_errors.RequestTimedOutError,
    ConnectionError,
)
