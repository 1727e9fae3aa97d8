"""Profilers of the same release share one copy of its routers (``encoders.shared_router``).

An eval builds two profilers of the policy's release (the policy's own and the semantic one its
planners read); each used to read its own copy of both routers, ~4.9 MiB of v12's eval peak
(benchmarks/README.md, "shared routers")."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from loomc.policy.models import RiskSettings
from loomc.risk.encoders import shared_router
from loomc.risk.factory import make_profiler
from loomc.risk.releases import RELEASES


def _semantic(release: str) -> Any:
    return make_profiler(
        RiskSettings(profiler="semantic", options={"release": release, "backend": "numpy"})
    )


def test_two_profilers_of_a_release_read_its_routers_once() -> None:
    a, b = _semantic("v12"), _semantic("v12")
    assert a is not b
    assert a.router is b.router  # the first stage
    assert a.router.train_emb.shape[0] > 2000  # a real index, not an empty stand-in
    if a.second is not None:  # the cascade's stage (read from its file when MiniLM is there)
        assert a.second is b.second
    other = _semantic("v11")
    assert other.router is not a.router
    assert other.router.train_ids != a.router.train_ids


def test_a_router_file_rewritten_in_place_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "router.npz"
    shutil.copyfile(RELEASES["v11"], path)
    first = shared_router(path)
    assert shared_router(path) is first
    shutil.copyfile(RELEASES["v12"], path)
    os.utime(path, ns=(1, 1))  # a different mtime whatever the clock's resolution
    second = shared_router(path)
    assert second is not first
    assert len(second.train_ids) != len(first.train_ids)
    assert np.array_equal(second.train_emb, shared_router(RELEASES["v12"]).train_emb)
