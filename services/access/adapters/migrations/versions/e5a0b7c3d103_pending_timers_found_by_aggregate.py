"""access's pending timers found by kind and aggregate

Revision ID: e5a0b7c3d103
Revises: c4e1a7d2f903

A handler's question whether an aggregate has a pending timer (and its cancel) read every
pending timer. The index is servicekit.schema's; the same in every service.
"""

from servicekit import migrations

revision: str = "e5a0b7c3d103"
down_revision: str | None = "c4e1a7d2f903"
upgrade = migrations.index_pending_timers_by_aggregate
downgrade = migrations.drop_pending_timers_by_aggregate
