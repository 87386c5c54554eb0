"""Bearer tokens at a sandbox: the account's API key on the provider API, the sandbox's
control token on its `/_sandbox` controls (faults, clocks, shortcuts, inspection).

Two secrets, so the same binaries beside a shared platform cannot be steered by a neighbour:
whoever holds the account's key may call the provider as a merchant does, but only the
holder of the control token makes the provider misbehave or reads what it holds.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from sandboxes import environment


def presents(authorization: str | None, expected: str) -> bool:
    """`Authorization: Bearer <expected>`; compared in constant time, so a caller who can
    reach the sandbox learns nothing of the token from how long a refusal takes."""
    scheme, _, token = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.encode(), expected.encode())


def control_token(env: Mapping[str, str], name: str) -> str:
    return environment.required(env, name, "the bearer token of the /_sandbox controls")
