"""Entrypoints: the gRPC API, the booking-events consumer, the notification receiver."""
