"""Optional extras in tests: required in CI (an ImportError fails the run), skipped elsewhere.

`tests/` is on sys.path (the rootdir conftest lives here), so any test imports this as `needs`.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def need(module: str) -> ModuleType:
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module)
