"""Shared fixtures. Reference data lives in ../shared beside the checkout: required in CI
(CI=true), skipped elsewhere when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LOOMC_SHARED", ROOT.parent / "shared"))


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
