"""The service layer: commands and reactions, each one transaction on a unit of work."""
