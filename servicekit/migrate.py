"""`python -m servicekit.migrate upgrade|check|revision SERVICE`: a service's schema by migration.

The database URL is the owner's (`--url`, or MIGRATION_DATABASE_URL); `--runtime-role` (or
RUNTIME_DATABASE_ROLE) names the role the service runs as, granted rows after an upgrade.
"""

from __future__ import annotations

import argparse
import os
import sys

from alembic.util.exc import CommandError

from servicekit import migrations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m servicekit.migrate")
    parser.add_argument("action", choices=["upgrade", "check", "revision"])
    parser.add_argument("service", choices=["booking", "payment", "access", "notify", "gateway"])
    parser.add_argument("--url", default=os.environ.get("MIGRATION_DATABASE_URL", ""))
    parser.add_argument("--runtime-role", default=os.environ.get("RUNTIME_DATABASE_ROLE", ""))
    parser.add_argument("-m", "--message", default="")
    args = parser.parse_args(argv)
    if not args.url:
        print("refusing to start: setting MIGRATION_DATABASE_URL is required", file=sys.stderr)
        return 2
    if args.action == "upgrade":
        try:
            migrations.upgrade(args.service, args.url, args.runtime_role or None)
        except CommandError as error:
            # Typically a database migrated by another version of the code (a rollback, or
            # a local database older than a rewritten unreleased migration): say so plainly.
            print(
                f"{args.service}: the database's schema revision is not one this code knows"
                f" ({error}); deploy the code that migrated it, or for a local development"
                f" database drop it and let `make up` create it again",
                file=sys.stderr,
            )
            return 3
    elif args.action == "check":
        migrations.check(args.service, args.url)
    else:
        migrations.revision(args.service, args.url, args.message or "change")
    return 0


if __name__ == "__main__":
    sys.exit(main())
