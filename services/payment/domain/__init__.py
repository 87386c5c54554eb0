"""The payment domain: pure rules, no I/O."""
