"""Use cases: reactions to booking events, lock provider jobs, disclosures, the drift check."""
