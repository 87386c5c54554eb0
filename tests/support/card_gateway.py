"""Starting the real sandbox card gateway process for a test suite."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def gateway_env(api_key: str, secrets: Sequence[str], **overrides: str) -> dict[str, str]:
    pythonpath = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    env = {
        **os.environ,
        "PYTHONPATH": pythonpath,
        "CARD_GATEWAY_API_KEY": api_key,
        "CARD_GATEWAY_WEBHOOK_SECRETS": ",".join(secrets),
        "CARD_GATEWAY_NOTIFY_URL": "",  # each test points it at its own receiver
    }
    env.update(overrides)
    return env


def _wait_until_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"card gateway exited with {process.returncode}:\n{log.read_text()}")
        try:
            httpx.get(f"{url}/_sandbox/faults", timeout=0.5)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    pytest.fail(f"card gateway did not start:\n{log.read_text()}")


@contextlib.contextmanager
def running_card_gateway(log_dir: Path, api_key: str, secrets: Sequence[str]) -> Iterator[str]:
    """Runs `python -m sandboxes.card_gateway` on a free port; yields its base URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = log_dir / "gateway.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "sandboxes.card_gateway"],
            cwd=REPO_ROOT,
            env=gateway_env(api_key, secrets, CARD_GATEWAY_PORT=str(port)),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_until_ready(url, process, log)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
