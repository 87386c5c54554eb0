"""Handlers, the send job and the unit of work."""
