"""Adapters: the database, the card gateway."""
