"""booking's outbox announces its commits

Revision ID: c4e1a7d2f901
Revises: 9a4c2e7d1b35

A card checkout's PaymentRequested leaves as soon as the checkout commits, not at
the relay's next poll: one of the card saga's hops between services.
The trigger is servicekit.schema.announce_commits; the relay listens (servicekit.relay).
"""

from servicekit import migrations

revision: str = "c4e1a7d2f901"
down_revision: str | None = "9a4c2e7d1b35"
upgrade = migrations.announce_outbox_commits
downgrade = migrations.stop_announcing_outbox_commits
