"""The gRPC and event contracts cannot break silently: Buf lints protos/ and compares it with
the released contract (protos/released.binpb) at the WIRE_JSON level."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.infrastructure import REPO_ROOT

PROTOS = REPO_ROOT / "protos"
BUF = REPO_ROOT / ".venv" / "bin" / "buf"
RELEASED = PROTOS / "released.binpb"


def _buf(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BUF), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_protos_pass_lint_and_keep_the_released_contract() -> None:
    lint = _buf("lint", cwd=PROTOS)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    breaking = _buf("breaking", "--against", str(RELEASED), cwd=PROTOS)
    assert breaking.returncode == 0, breaking.stdout + breaking.stderr


BREAKS = {
    "a field removed from an event": (
        "liftfit/booking/v1/events.proto",
        "  string slot_id = 4;\n  AccessWindow window = 5;",
        "  AccessWindow window = 5;",
        "slot_id",
    ),
    "an RPC renamed": (
        "liftfit/booking/v1/booking.proto",
        "rpc Checkout(CheckoutRequest)",
        "rpc PlaceCheckout(CheckoutRequest)",
        "Checkout",
    ),
    "a field's type changed": (
        "liftfit/booking/v1/booking.proto",
        "  string payment_mode = 7;  // card, pass",
        "  int32 payment_mode = 7;",
        "payment_mode",
    ),
}


@pytest.mark.parametrize("change", sorted(BREAKS))
def test_buf_refuses_a_breaking_change(change: str, tmp_path: Path) -> None:
    path, before, after, named = BREAKS[change]
    copy = tmp_path / "protos"
    shutil.copytree(PROTOS, copy)
    proto = copy / path
    text = proto.read_text()
    assert before in text, f"the contract no longer has {before!r}: update this test"
    proto.write_text(text.replace(before, after, 1))
    breaking = _buf("breaking", "--against", str(RELEASED), cwd=copy)
    assert breaking.returncode != 0, f"{change} passed buf breaking"
    assert named in breaking.stdout + breaking.stderr
