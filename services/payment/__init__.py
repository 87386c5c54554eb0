"""The payment service: orders, card payments at the gateway, reconciliation and refunds."""
