"""The gateway's routes, one module per part of the contract."""
