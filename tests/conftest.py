"""Shared fixtures. Reference data lives in ../shared beside the checkout: required in CI
(CI=true), skipped elsewhere when absent."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LOOMC_SHARED", ROOT.parent / "shared"))


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every test (and every process it starts) caches parsed files in a folder of its own
    session, never the user's: a stale entry there cannot hide a parser change from a test."""
    if "LOOMC_CACHE_DIR" not in os.environ:
        os.environ["LOOMC_CACHE_DIR"] = str(tmp_path_factory.mktemp("loomc-cache"))


@pytest.fixture(scope="session")
def project_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not (SHARED / "reference").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"reference data missing at {SHARED} (required in CI)")
        pytest.skip(f"reference data not found at {SHARED}")
    return SHARED


@pytest.fixture(scope="module", autouse=True)
def _keys_forgotten_after_each_module() -> Iterator[None]:
    """A test module that resolves a key registers it for redaction for the life of the
    process, as loomc does; without this, the next modules' output is redacted by it (a test
    key holding "reasoning" turned a prompt's "the reasoning" into "[REDACTED]" in the IR
    golden, in one test order only). Each module starts with the keys registered before it."""
    from loomc import secrets

    saved = set(secrets._registered_secrets)
    yield
    for value in set(secrets._registered_secrets) - saved:
        secrets._forget(value)
