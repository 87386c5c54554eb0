"""Entry points: the gRPC API, the event consumer and the process's main."""
