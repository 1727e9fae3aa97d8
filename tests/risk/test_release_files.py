"""Which files each release reads, and where an install finds them (``loomc.risk.files.data_file``,
``loomc.risk.releases.release_files``).

Why: the loomc wheel ships the default release's files only and the rest ship in loomc-releases-v4,
-v4, -v22 (one per era, packaging/), all lists computed from ``release_files``; a file it forgot would be
missing from both wheels, and one it named wrongly would be refused as "not in this install" on
an install that has it. The wheels themselves are built and installed in
tests/compiler/test_wheel.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from loomc.risk.files import DATA
from loomc.risk.lexical import MODELS
from loomc.risk.releases import (
    DEFAULT_RELEASE,
    LORA,
    RELEASES,
    RULES,
    SECOND_OPINION,
    WHEEL_RELEASES,
    archived_names,
    missing_files,
    release_files,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("release", list(RELEASES))
def test_a_release_reads_exactly_the_files_it_names(release: str) -> None:
    first, second, *rest = release_files(release)
    assert first == RELEASES[release] and missing_files(release) == []  # a checkout has all
    with np.load(first, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"])) if "meta" in z.files else {}
        cascades = "cascade_low" in z.files
    # the MiniLM stage the static file defers to is the one release_files names
    assert not cascades or meta.get("cascade") == second.name
    lexical = [MODELS[rule] for rule in RULES[release] if rule in MODELS]
    own = ([LORA[release]] if release in LORA else []) + lexical
    assert rest[: len(own)] == own
    # a release that asks another about short prompts reads that one's files too, once each
    asked = release_files(SECOND_OPINION[release].release) if release in SECOND_OPINION else ()
    assert rest[len(own) :] == [p for p in asked if p not in (first, second, *own)]


def test_every_shipped_file_is_a_releases_or_the_static_stages() -> None:
    """No file in the data folder that neither wheel would carry, or carry for nothing."""
    read = {p.name for r in RELEASES for p in release_files(r)}
    shared = {"static-minilm.npz", "minilm-vocab.txt"}  # every release's static stage
    # the float32 copy of the default's first router (v35 serves v34's: router-static-v34.…)
    first = RELEASES[DEFAULT_RELEASE].stem
    cold = {p.name for p in DATA.glob(f"{first}.train_emb-*.f32.npy")}
    assert len(cold) == 1
    assert {p.name for p in DATA.iterdir() if p.is_file()} == read | shared | cold
    assert WHEEL_RELEASES == (DEFAULT_RELEASE,)
    assert not {p.name for p in release_files(DEFAULT_RELEASE)} & set(archived_names())
    assert "router-static-v22.npz" in archived_names()  # an old release the default does not read


def _in_fresh_python(code: str, path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": f"{path}:{ROOT}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_file_loomc_lacks_is_found_in_the_installed_archive(tmp_path: Path) -> None:
    """Archive packages (here stand-ins on the path, as installed loomc-releases-v4 and -v22
    are): a name loomc's folder lacks resolves in the archive that holds it, a name both hold
    resolves to loomc's own, and a name none holds stays loomc's path (what ``missing_files``
    then reports)."""
    folders = {}
    for package in ("loomc_releases_v4", "loomc_releases_v22"):
        folders[package] = tmp_path / package / "data"
        folders[package].mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
        (folders[package] / "static-minilm.npz").write_bytes(b"x")
    (folders["loomc_releases_v4"] / "router-static-v97.npz").write_bytes(b"x")
    (folders["loomc_releases_v22"] / "router-static-v99.npz").write_bytes(b"x")
    code = (
        "from loomc.risk.files import data_file\n"
        "for n in ('router-static-v97.npz', 'router-static-v99.npz', 'static-minilm.npz',"
        " 'router-static-v98.npz'):\n"
        "    print(data_file(n))"
    )
    older, newer, own, neither = _in_fresh_python(code, tmp_path).splitlines()
    assert Path(older) == folders["loomc_releases_v4"] / "router-static-v97.npz"
    assert Path(newer) == folders["loomc_releases_v22"] / "router-static-v99.npz"
    assert Path(own) == DATA / "static-minilm.npz"
    assert Path(neither) == DATA / "router-static-v98.npz"
    # without an archive installed, the same lookup answers loomc's path
    assert _in_fresh_python(code, tmp_path / "none").splitlines()[:2] == [
        str(DATA / "router-static-v97.npz"),
        str(DATA / "router-static-v99.npz"),
    ]
