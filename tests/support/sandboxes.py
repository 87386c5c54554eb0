"""Starting the real sandbox processes for a test suite.

Each sandbox runs as ``python -m sandboxes.<name>`` on free ports, exactly as it runs
beside the platform, so its startup configuration is exercised too.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# Every sandbox a test starts (and the test platforms' sandboxes) is steered with this token.
CONTROL_TOKEN = "sandbox-control-token-of-the-tests"
CONTROL_TOKENS = {
    f"{sandbox}_CONTROL_TOKEN": CONTROL_TOKEN
    for sandbox in ("CARD_GATEWAY", "LOCK_PROVIDER", "MAIL_SANDBOX")
}
READY_WITHIN_S = 20
STOP_WITHIN_S = 10
# A free port may be taken by another process before the sandbox binds it.
START_ATTEMPTS = 3


@dataclass(frozen=True)
class Sandbox:
    url: str  # the base URL of its HTTP API
    ports: Mapping[str, int]  # every port setting, by variable name


@dataclass(frozen=True)
class MailSandbox:
    url: str
    smtp_host: str
    smtp_port: int


def free_port() -> int:
    """A port nothing listens on, below the kernel's range of ephemeral ports.

    A port the kernel picks (a bind to port 0) comes from that range, which is also where
    every outgoing connection gets its local port: between this probe and the service's
    own bind, a connection to PostgreSQL or Kafka could take it, and the service would
    fail to start. Below the range only another listener can, and the probe sees that.
    """
    first = _first_ephemeral_port()
    for _ in range(1000):
        port = random.randrange(max(1024, first - 12000), first)
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError("no free port below the ephemeral range")


_handed_out: set[int] = set()  # not handed out twice by this process


def _first_ephemeral_port() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


@contextlib.contextmanager
def silent_listener() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers a request:
    a broker or provider that hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


def sandbox_env(**settings: str) -> dict[str, str]:
    """This process's environment with the repository importable, the tests' control
    tokens and ``settings`` set."""
    pythonpath = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": pythonpath, **CONTROL_TOKENS, **settings}


class SandboxAuth(httpx.Auth):
    """What a test presents to a sandbox: the control token on its ``/_sandbox`` controls,
    the account's API key (when given) on the provider API."""

    def __init__(self, api_key: str | None = None, control_token: str = CONTROL_TOKEN) -> None:
        self.api_key = api_key
        self.control_token = control_token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        control = request.url.path.startswith("/_sandbox/")
        token = self.control_token if control else self.api_key
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        yield request


@contextlib.contextmanager
def running_sandbox(
    name: str,
    log_dir: Path,
    env: Mapping[str, str],
    *,
    http_port: str,
    other_ports: Sequence[str] = (),
    ready_path: str = "/healthz",
) -> Iterator[Sandbox]:
    """Runs ``python -m sandboxes.<name>`` with ``env`` and a free port for each named port
    setting; yields once ``ready_path`` answers on ``http_port``, and always stops it."""
    log = log_dir / f"{name}.log"
    print(f"sandbox {name} logs to {log}")  # shown with the output of a failed test
    for attempt in range(1, START_ATTEMPTS + 1):
        ports = {setting: free_port() for setting in (http_port, *other_ports)}
        url = f"http://127.0.0.1:{ports[http_port]}"
        process = _start(name, log, {**env, **{k: str(v) for k, v in ports.items()}})
        try:
            if _ready(name, f"{url}{ready_path}", process, log, attempt == START_ATTEMPTS):
                yield Sandbox(url, ports)
                _still_running(name, process, log)
                return
        finally:
            _stop(process)


def _start(name: str, log: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", f"sandboxes.{name}"],
            cwd=REPO_ROOT,
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _ready(
    name: str, url: str, process: subprocess.Popen[bytes], log: Path, last_try: bool
) -> bool:
    """True once ``url`` answers; False if the process lost its port to another one."""
    deadline = time.monotonic() + READY_WITHIN_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = log.read_text(errors="replace")
            if "address already in use" in output.lower() and not last_try:
                return False
            pytest.fail(f"sandbox {name} exited with {process.returncode}:\n{output}")
        try:
            httpx.get(url, timeout=0.5)
            return True
        except httpx.TransportError:
            time.sleep(0.1)
    pytest.fail(f"sandbox {name} did not start:\n{log.read_text(errors='replace')}")


def _still_running(name: str, process: subprocess.Popen[bytes], log: Path) -> None:
    if process.poll() is not None:
        pytest.fail(f"sandbox {name} died during the tests:\n{log.read_text(errors='replace')}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_WITHIN_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def running_lock_provider(log_dir: Path, api_key: str, devices: Sequence[str]) -> Iterator[str]:
    """The sandbox lock provider with ``devices``; yields its base URL."""
    env = sandbox_env(LOCK_PROVIDER_API_KEY=api_key, LOCK_PROVIDER_DEVICES=",".join(devices))
    with running_sandbox("lock_provider", log_dir, env, http_port="LOCK_PROVIDER_PORT") as box:
        yield box.url


@contextlib.contextmanager
def running_mail_sandbox(log_dir: Path) -> Iterator[MailSandbox]:
    """The mail sandbox; yields its HTTP base URL and its SMTP address."""
    with running_sandbox(
        "mail",
        log_dir,
        sandbox_env(),
        http_port="MAIL_SANDBOX_HTTP_PORT",
        other_ports=["MAIL_SANDBOX_SMTP_PORT"],
    ) as box:
        yield MailSandbox(box.url, "127.0.0.1", box.ports["MAIL_SANDBOX_SMTP_PORT"])


class KillableSandbox:
    """A sandbox process on fixed ports that a test SIGKILLs and starts again on the same
    settings (and so the same records folder), as the chaos soak does to the real ones."""

    def __init__(
        self, name: str, log_dir: Path, env: Mapping[str, str], ports: Mapping[str, int]
    ) -> None:
        self.name = name
        self.env = {**env, **{setting: str(port) for setting, port in ports.items()}}
        self.ports = dict(ports)
        self._log_dir = log_dir
        self._starts = 0
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, ready_url: str) -> None:
        """Spawns the process and returns once ``ready_url`` answers."""
        self._starts += 1
        log = self._log_dir / f"{self.name}-{self._starts}.log"
        print(f"sandbox {self.name} logs to {log}")
        self._process = _start(self.name, log, self.env)
        if not _ready(self.name, ready_url, self._process, log, last_try=True):
            pytest.fail(f"sandbox {self.name} did not start:\n{log.read_text(errors='replace')}")

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, whatever the process was doing."""
        assert self._process is not None
        self._process.kill()
        self._process.wait()

    def stop(self) -> None:
        if self._process is not None:
            _stop(self._process)


@contextlib.contextmanager
def killable_sandbox(
    name: str, log_dir: Path, env: Mapping[str, str], port_settings: Sequence[str]
) -> Iterator[KillableSandbox]:
    """A KillableSandbox on free ports for ``port_settings``, not started yet; always stopped."""
    sandbox = KillableSandbox(name, log_dir, env, {s: free_port() for s in port_settings})
    try:
        yield sandbox
    finally:
        sandbox.stop()
