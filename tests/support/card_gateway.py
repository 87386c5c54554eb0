"""Starting the real sandbox card gateway process for a test suite."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from tests.support.sandboxes import free_port, running_sandbox, sandbox_env

__all__ = ["free_port", "gateway_env", "running_card_gateway"]


def gateway_env(api_key: str, secrets: Sequence[str], **overrides: str) -> dict[str, str]:
    settings = {
        "CARD_GATEWAY_API_KEY": api_key,
        "CARD_GATEWAY_WEBHOOK_SECRETS": ",".join(secrets),
        "CARD_GATEWAY_NOTIFY_URL": "",  # each test points it at its own notification entry
    }
    return sandbox_env(**{**settings, **overrides})


@contextlib.contextmanager
def running_card_gateway(log_dir: Path, api_key: str, secrets: Sequence[str]) -> Iterator[str]:
    """Runs `python -m sandboxes.card_gateway` on a free port; yields its base URL."""
    env = gateway_env(api_key, secrets)
    with running_sandbox("card_gateway", log_dir, env, http_port="CARD_GATEWAY_PORT") as gateway:
        yield gateway.url
