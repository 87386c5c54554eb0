"""Alembic's entry point for this service's revisions; the mechanics are servicekit's."""

from servicekit.migrations import run_environment

run_environment()
