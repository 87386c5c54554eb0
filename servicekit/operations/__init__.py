"""The operators' view every service serves beside its own API (liftfit.ops.v1).

Written once here: a booking as one service sees it, its outbox and the audited replay
of an effect, its incidents and their audited resolution, its drift findings, its backlog
and audit log. A service adds only two hooks (`hooks.BookingLookup`, `hooks.DriftSource`)
over its own tables, and registers `servicer.operator_api(...)` in its bootstrap.
"""
