"""Entrypoints: the gRPC API (the HTTP gateway forwards notifications to it), the
booking-events consumer, the hint retrier."""
