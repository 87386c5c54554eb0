"""Adapters: the access database, the PIN vault and the lock provider client."""
