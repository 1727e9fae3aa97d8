from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from servekit import KEY_VAR, PG_BIN, SECRET, PostgresCluster, ServeProcess, write_policy


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


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresCluster]:
    """A real PostgreSQL for the session; skipped where its binaries are absent, except in CI."""
    if not (PG_BIN / "initdb").exists():
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL binaries missing at {PG_BIN} (scripts/setup --all)")
        pytest.skip(f"PostgreSQL binaries not found at {PG_BIN}")
    pytest.importorskip("psycopg")
    # not under pytest's root-only temp folder: the postgres user must reach it
    folder = Path(tempfile.mkdtemp(prefix="loomc-pg-"))
    cluster = PostgresCluster(folder)
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store of each backend."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    cluster: PostgresCluster = request.getfixturevalue("postgres")
    return cluster.fresh("t" + uuid.uuid4().hex[:12])
