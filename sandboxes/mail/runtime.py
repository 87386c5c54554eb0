"""The running mail sandbox: settings and state, handed to the HTTP layer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from .settings import Settings
from .state import MailState


@dataclass
class MailSandbox:
    settings: Settings
    state: MailState

    def faults_json(self) -> dict[str, object]:
        return {**self.state.faults.to_api(), "offline_for_ms": self.state.offline_ms_left()}


# The sandbox's dependencies are coroutines: FastAPI runs a plain function in a worker thread,
# a hop to another thread and back on every request.
async def get_sandbox(request: Request) -> MailSandbox:
    sandbox: MailSandbox = request.app.state.sandbox
    return sandbox


SandboxDep = Annotated[MailSandbox, Depends(get_sandbox)]
