"""A build with one promise broken on purpose, for tests/chaos/test_the_audit_can_fail.py
only: the access service's lock client says a code is gone without deleting it, so a
revocation is confirmed while the code still opens the door (invariants 15 and 17). Python
runs this file at the start of every process whose PYTHONPATH begins with this folder; the
break is put in as the lock client's module is imported, in the access service alone, and
nowhere else in the repository does this folder appear.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

BROKEN_MODULE = "services.access.adapters.lock_provider"


async def _delete_nothing(self: Any, provider_code_id: str) -> None:
    return None  # "already gone": the job confirms the revocation and the code stays


def _break(module: ModuleType) -> None:
    module.HttpLockProvider.delete_code = _delete_nothing


class _Breaker(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != BROKEN_MODULE:
            return None
        sys.meta_path.remove(self)  # the module's own spec, found as it would have been
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader: Any = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _break(module)

        loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Breaker())
