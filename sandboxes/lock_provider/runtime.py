"""The running lock provider: settings and state, handed to the HTTP layer."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from .settings import Settings
from .state import AccessCode, LockState


@dataclass
class LockProvider:
    settings: Settings
    state: LockState

    def describe(self, code: AccessCode) -> dict[str, object]:
        return {"access_code": code.to_api(self.state.now())}

    async def hang(self) -> None:
        """Hold a response back long enough for the client to give up waiting."""
        await asyncio.sleep(self.state.faults.hang_seconds)


# The sandbox's dependencies are coroutines: FastAPI runs a plain function in a worker thread,
# a hop to another thread and back on every request.
async def get_provider(request: Request) -> LockProvider:
    provider: LockProvider = request.app.state.provider
    return provider


ProviderDep = Annotated[LockProvider, Depends(get_provider)]
