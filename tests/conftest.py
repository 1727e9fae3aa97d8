"""Shared fixtures. Reference data lives in ../shared beside the checkout: required in CI
(CI=true), skipped elsewhere when absent."""

from __future__ import annotations

import os
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
