"""The built wheel works on its own: installed into a fresh venv (runtime dependencies borrowed
from the running environment, not from the checkout), `loomc check` finds the grammar inside the
package and proves the reference pipelines from outside the repository.

Building needs the build backend (hatchling) from the package index or pip's find-links, as any
`pip wheel .` does; the source is copied first so the checkout is never written to.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "loomc", "grammar", "pipelines", "policies")
_SOURCES += ("evals",)  # the packaged project (loomc/defaults/ in the wheel)


def _run(argv: list[str], cwd: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False, **kw
    )  # type: ignore[call-overload, no-any-return]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in _SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif path.exists():
            shutil.copy2(path, src / name)
    dist = tmp_path_factory.mktemp("dist")
    done = _run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(dist)], src
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (found,) = dist.glob("loomc-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    env_dir = tmp_path_factory.mktemp("venv")
    base = getattr(sys, "_base_executable", sys.executable)
    done = _run([base, "-m", "venv", "--without-pip", str(env_dir)], env_dir)
    assert done.returncode == 0, done.stderr
    py = env_dir / "bin" / "python"
    # The runtime dependencies come from the running environment's site-packages, appended
    # after the venv's own: its .pth files are not run, so an editable checkout stays invisible.
    purelib = _run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env_dir
    ).stdout.strip()
    Path(purelib, "_host_site.pth").write_text(
        "\n".join(
            dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
        )
        + "\n"
    )
    done = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        env_dir,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return env_dir


def test_wheel_ships_the_grammar(wheel: Path) -> None:
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "loomc/syntax/loom.lark" in names
    assert "loomc/syntax/loom.tables" in names  # the parser tables, built
    outside = ("grammar/", "tests/", "research/", "loomc_research/")  # the research track too
    assert not any(n.startswith(outside) for n in names)


def test_installed_wheel_checks_the_pipelines(venv: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    py = venv / "bin" / "python"
    probe = _run(
        [
            str(py),
            "-c",
            "import os; os.environ['LOOMC_CACHE_DIR'] = ''  # no user cache: the shipped tables\n"
            "import loomc, loomc.syntax.parser as p; print(loomc.__file__); print(p.grammar_path());"
            " print(p._parser().source_path)",
        ],
        outside,
    )
    assert probe.returncode == 0, probe.stderr
    module_file, grammar, source = probe.stdout.split()
    assert source == "<deserialized>"  # the shipped tables fit the shipped grammar
    assert Path(module_file).is_relative_to(venv), module_file  # the wheel, not the checkout
    assert Path(grammar).is_relative_to(venv) and Path(grammar).parent.name == "syntax"
    done = _run(
        [str(venv / "bin" / "loomc"), "check", str(ROOT / "pipelines"), "--format", "json"],
        outside,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    assert doc["summary"]["errors"] == 0 and doc["summary"]["pipelines"] > 0


def test_installed_wheel_runs_anywhere_and_inits_a_project(
    wheel: Path, venv: Path, tmp_path: Path
) -> None:
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    for packaged in (
        "pipelines/general.loom",
        "policies/default.yaml",
        "evals/mixed-routing.jsonl",
    ):
        assert f"loomc/defaults/{packaged}" in names, packaged
    assert not any(n.startswith("loomc/defaults/policies/") and "dot" in n for n in names)
    loomc = str(venv / "bin" / "loomc")
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _run([loomc, "run", "What is the capital of Poland?", "--json"], empty)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["calls"] == 1
    assert "using the packaged defaults" in done.stderr
    assert list(empty.iterdir()) == []
    done = _run([loomc, "init", "proj"], empty)
    assert done.returncode == 0, done.stderr
    done = _run([loomc, "check"], empty / "proj")
    assert done.returncode == 0 and "0 error(s)" in done.stdout, done.stdout + done.stderr
    done = _run([loomc, "run", "hi"], empty / "proj")
    assert done.returncode == 0 and "packaged" not in done.stderr, done.stderr
