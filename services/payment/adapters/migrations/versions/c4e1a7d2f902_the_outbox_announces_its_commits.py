"""payment's outbox announces its commits

Revision ID: c4e1a7d2f902
Revises: 56dc7349da3a

Payment's answers to booking (PaymentSucceeded, PaymentFailed) leave at their commit.
The trigger is servicekit.schema.announce_commits; the relay listens (servicekit.relay).
"""

from servicekit import migrations

revision: str = "c4e1a7d2f902"
down_revision: str | None = "56dc7349da3a"
upgrade = migrations.announce_outbox_commits
downgrade = migrations.stop_announcing_outbox_commits
