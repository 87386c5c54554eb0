"""Who is calling (placeholder until the JWT verifier lands): X-Dev-User only."""

from __future__ import annotations

from collections.abc import Mapping


class Authenticator:
    async def caller(self, headers: Mapping[str, str]) -> str | None:
        user = headers.get("x-dev-user", "").strip()
        return user if 0 < len(user) <= 200 and user.isprintable() else None

    @classmethod
    def from_env(cls) -> Authenticator:
        return cls()
