"""The gateway (backend for frontend): the public HTTP API that web clients and operators call."""
