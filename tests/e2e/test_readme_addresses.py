"""Every address the README tells a newcomer to open answers on a platform started as
`make up` starts it (the suites' shared platform, tests/conftest.py).

The README names the local run's ports, those of deploy/local/platform.env; the shared
platform runs on free ports of its own, so each address is moved to the port the platform
gave the same setting. Commands in code blocks are left out: they are run, not opened.
An address on a port that platform.env does not name fails: the
README would send the reader somewhere `make up` never starts.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from tests.support.platform import Platform
from tests.support.waiting import eventually

REPO = Path(__file__).resolve().parents[2]
ADDRESS = re.compile(r"http://127\.0\.0\.1:\d+[^\s)`|<>\"']*")
# How long a part that `make up` reported started may take to answer on a loaded machine.
WITHIN_S = 60.0


def readme_addresses() -> list[str]:
    """The addresses to open; a command in a code block (a POST among them) is not one."""
    prose = re.sub(r"^\s*```.*?^\s*```", "", (REPO / "README.md").read_text(), flags=re.S | re.M)
    return sorted(set(ADDRESS.findall(prose)))


def local_settings() -> dict[str, str]:
    lines = (REPO / "deploy/local/platform.env").read_text().splitlines()
    pairs = (line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    return {name.strip(): value.strip() for name, value in pairs}


def _port_of(value: str) -> str | None:
    """The port a setting names: a bare port, or the end of `host:port` or `http://host:port`."""
    found = re.fullmatch(r"(?:(?:http://)?[\w.-]+:)?(\d+)", value)
    return found.group(1) if found else None


def setting_for(port: str, settings: dict[str, str]) -> str:
    """The local run's setting that names `port`."""
    names = [name for name, value in settings.items() if _port_of(value) == port]
    assert names, f"the README names port {port}, which deploy/local/platform.env does not"
    return names[0]


def on_platform(address: str, settings: dict[str, str], platform: Platform) -> str:
    """The README's address moved to the port the platform gave the same setting."""
    parts = urlsplit(address)
    port = _port_of(platform.env[setting_for(str(parts.port), settings)])
    assert port, f"{address}: the platform's setting names no port"
    return urlunsplit(parts._replace(netloc=f"127.0.0.1:{port}"))


def test_the_readme_stays_a_map() -> None:
    assert len((REPO / "README.md").read_text().splitlines()) <= 250


def test_every_readme_address_is_on_a_port_the_local_run_configures() -> None:
    settings = local_settings()
    addresses = readme_addresses()
    assert addresses, "the README names no address"
    for address in addresses:
        setting_for(str(urlsplit(address).port), settings)


def test_an_address_on_a_port_nobody_starts_is_refused() -> None:
    with pytest.raises(AssertionError, match="port 1,"):
        setting_for("1", local_settings())


async def test_every_address_the_readme_names_answers_on_make_up(
    shared_platform: Platform,
) -> None:
    settings = local_settings()
    unanswered = []
    async with httpx.AsyncClient(follow_redirects=True, timeout=10.0) as client:
        for address in readme_addresses():
            url = on_platform(address, settings, shared_platform)

            async def answers(url: str = url) -> int | None:
                try:
                    status = (await client.get(url)).status_code
                except httpx.TransportError:
                    return None
                return status if status < 400 else None

            try:
                await eventually(answers, within=WITHIN_S, every=0.5)
            except AssertionError:
                unanswered.append(f"{address} (on the platform {url})")
    assert unanswered == []
