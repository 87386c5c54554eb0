"""`GET /healthz`: the sandbox serves. Open, for the probes that start it (scripts/platform.sh,
the test suites), which hold no token."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()


@router.get("/healthz")
async def alive() -> dict[str, str]:
    return {"status": "serving"}
