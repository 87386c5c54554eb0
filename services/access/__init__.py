"""The access service: planned grants, credentials at the lock provider in their window,
stale work rejected, revocation confirmed before an old PIN's slot is sold again."""
