"""The booking domain: pure state machines and rules, no database and no I/O."""
