"""access's outbox announces its commits

Revision ID: c4e1a7d2f903
Revises: 713b789d528d

AccessActivated and RevocationConfirmed reach booking at their commit.
The trigger is servicekit.schema.announce_commits; the relay listens (servicekit.relay).
"""

from servicekit import migrations

revision: str = "c4e1a7d2f903"
down_revision: str | None = "713b789d528d"
upgrade = migrations.announce_outbox_commits
downgrade = migrations.stop_announcing_outbox_commits
