"""How the pages answer what they cannot show: HTML pages under /web, not problem JSON."""

from __future__ import annotations

from fastapi import FastAPI


def install(app: FastAPI) -> None:
    """Nothing yet: /web's problems are answered as the API's problem details."""
