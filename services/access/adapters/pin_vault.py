"""PINs encrypted at rest: AES-GCM under a named key, bound to the provision they belong to.

Several keys may be configured during a rotation: the first encrypts, any decrypts, and a
recurring job re-encrypts what an older key sealed (service_layer.pins). The provision id
is the associated data, so a ciphertext copied onto another provision's row does not
decrypt. A wrong or missing key raises `SealBroken`, whose message names the key id and
never anything of the PIN.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12  # the size AES-GCM is designed for; a fresh random one per seal


class SealBroken(Exception):
    """A sealed PIN could not be opened: unknown key id, wrong key, or altered bytes."""


@dataclass(frozen=True)
class Sealed:
    key_id: str
    nonce: bytes
    ciphertext: bytes

    def __repr__(self) -> str:
        return f"Sealed(key_id={self.key_id!r})"


class PinVault:
    def __init__(self, keys: Sequence[tuple[str, bytes]]) -> None:
        if not keys:
            raise ValueError("the PIN vault needs at least one key")
        self.current_key_id = keys[0][0]
        self._ciphers = {key_id: AESGCM(key) for key_id, key in keys}

    def seal(self, pin: str, provision_id: str) -> Sealed:
        nonce = os.urandom(NONCE_BYTES)
        cipher = self._ciphers[self.current_key_id]
        sealed = cipher.encrypt(nonce, pin.encode(), provision_id.encode())
        return Sealed(self.current_key_id, nonce, sealed)

    def open(self, sealed: Sealed, provision_id: str) -> str:
        cipher = self._ciphers.get(sealed.key_id)
        if cipher is None:
            raise SealBroken(f"no key {sealed.key_id!r} is configured")
        try:
            opened = cipher.decrypt(sealed.nonce, sealed.ciphertext, provision_id.encode())
        except InvalidTag:
            raise SealBroken(f"the PIN sealed under key {sealed.key_id!r} does not open") from None
        return opened.decode()

    def reseal(self, sealed: Sealed, provision_id: str) -> Sealed | None:
        """The PIN sealed under the current key; None when it already is."""
        if sealed.key_id == self.current_key_id:
            return None
        return self.seal(self.open(sealed, provision_id), provision_id)
