"""Rows into typed values at the adapter boundary, without a line per column.

A repository turns each row into its domain value; the fields whose column has their name
come across as they are, and the repository names only the ones it converts.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def record(kind: type[T], row: Any, **converted: Any) -> T:
    """A dataclass `kind` from a row: each field from the column of its name (when the row
    has one), except the fields given converted."""
    assert dataclasses.is_dataclass(kind), f"{kind} is not a dataclass"
    values = {
        field.name: getattr(row, field.name)
        for field in dataclasses.fields(kind)
        if field.name not in converted and hasattr(row, field.name)
    }
    return kind(**values, **converted)


def columns(value: Any, *names: str, **converted: Any) -> dict[str, Any]:
    """A row's column values from a domain value: the named attributes as they are, and
    the columns given converted."""
    return {**{name: getattr(value, name) for name in names}, **converted}
