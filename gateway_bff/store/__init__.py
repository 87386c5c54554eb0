"""What the edge owns: organisations, their members, operators, and its audit log."""
