from __future__ import annotations

from collections.abc import Iterator

import pytest
from servekit import KEY_VAR, SECRET, ServeProcess, write_policy


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One `loomc serve` process with a bearer key read from the environment."""
    tmp = tmp_path_factory.mktemp("serve")
    policy = write_policy(
        tmp / "policy.yaml",
        {
            "keys": [{"name": "ci", "key": f"env:{KEY_VAR}"}],
            "max_body_bytes": 20_000,
        },
    )
    server = ServeProcess(policy, tmp / "store.db", env={KEY_VAR: SECRET})
    yield server
    server.stop()
