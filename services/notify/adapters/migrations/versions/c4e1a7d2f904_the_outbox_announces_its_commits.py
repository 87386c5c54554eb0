"""notify's outbox announces its commits

Revision ID: c4e1a7d2f904
Revises: f0c6d177abbe

The mail service's delivery records, too, leave at their commit rather than at a poll.
The trigger is servicekit.schema.announce_commits; the relay listens (servicekit.relay).
"""

from servicekit import migrations

revision: str = "c4e1a7d2f904"
down_revision: str | None = "f0c6d177abbe"
upgrade = migrations.announce_outbox_commits
downgrade = migrations.stop_announcing_outbox_commits
