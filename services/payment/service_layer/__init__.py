"""Use cases: commands from the API, reactions to booking events, durable jobs."""
