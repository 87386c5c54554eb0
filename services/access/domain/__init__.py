"""The access domain: grants, provisions and their rules; pure, no database and no I/O."""
