"""The operators' view every service serves beside its own API (liftfit.ops.v1).

Written once here: a booking as one service sees it, its outbox and the audited replay
of an effect, its incidents and their audited resolution, its drift findings, its backlog
and audit log, and its records of bookings by state for the drift checks that join two
services. A service adds its hooks (`hooks.BookingLookup`, `hooks.DriftSource`, and
`hooks.StateSource` where another service's step follows its records) over its own
tables, and registers `servicer.operator_api(...)` in its bootstrap.
"""
