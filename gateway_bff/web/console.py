"""The operators' console: its pages under /web/{lang}/console/, for the operator role only."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/web", include_in_schema=False)
