"""Adapters: the booking database's tables and repositories."""
