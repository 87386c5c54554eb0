"""One API server, with the operators' CRDs installed, for every test of the manifests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.k8s.apiserver import ApiServer, api_server
from tests.k8s.checks import crd_folder, install_crds


@pytest.fixture(scope="session")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    with api_server(tmp_path_factory.mktemp("apiserver")) as server:
        install_crds(server, crd_folder())
        yield server
