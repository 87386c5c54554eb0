"""The mechanics every LIFT & FIT service repeats, written once.

Transactional outbox and its relay, the consumer inbox, durable timers, tracing,
configuration and gRPC server set-up. No booking, payment, access or e-mail logic
lives here: services share these mechanisms and the contracts in protos/, never
domain classes.
"""
