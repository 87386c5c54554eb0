"""The booking service: exclusive slots, idempotent checkout, passes, holds and moves."""
