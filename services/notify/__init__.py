"""The notify service: the mails of bookings, payments and orders, each once, with a
durable status and an explicit unknown outcome for an operator."""
