"""The built wheel works on its own: installed into a fresh venv (runtime dependencies borrowed
from the running environment, not from the checkout), `loomc check` finds the grammar inside the
package and proves the reference pipelines from outside the repository. It ships the default
routing release only; the archived releases ship in wheels of their own, one per era
(loomc-releases-v4, -v22, built from packaging/), and a policy that names one is refused in one
line, naming its era's archive, without it and served with it.

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
def archive_wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every era's archive (loomc-releases-v4, ...), built as a user builds them: from a
    checkout's copy (one hook reads each era's list of files from the checkout's loomc and
    takes them from loomc/risk/data)."""
    from loomc.risk.files import ARCHIVES, archive_package

    src = tmp_path_factory.mktemp("archive-src")
    shutil.copytree(ROOT / "packaging", src / "packaging")
    shutil.copytree(ROOT / "loomc", src / "loomc", ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path_factory.mktemp("archive-dist")
    projects = [str(src / "packaging" / d) for d in ARCHIVES]
    done = _run(
        [sys.executable, "-m", "pip", "wheel", *projects, "--no-deps", "-q", "-w", str(dist)], src
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = {d: list(dist.glob(f"{archive_package(d)}-*.whl")) for d in ARCHIVES}
    assert all(len(paths) == 1 for paths in found.values()), found
    return {d: paths[0] for d, paths in found.items()}


def _venv(wheels: list[Path], env_dir: Path) -> Path:
    """A fresh venv with ``wheels`` installed, the runtime dependencies borrowed (below)."""
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
            *map(str, wheels),
        ],
        env_dir,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return env_dir


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _venv([wheel], tmp_path_factory.mktemp("venv"))


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


def test_wheel_ships_the_default_release_and_leaves_the_archived_out(wheel: Path) -> None:
    import tomllib
    import zipfile

    from loomc.risk.releases import WHEEL_RELEASES, archived_names, release_files

    names = set(zipfile.ZipFile(wheel).namelist())
    data = {n.removeprefix("loomc/risk/data/") for n in names if n.startswith("loomc/risk/data/")}
    needed = {p.name for r in WHEEL_RELEASES for p in release_files(r)}
    assert needed <= data and not data & set(archived_names())
    assert {"static-minilm.npz", "minilm-vocab.txt"} <= data  # every release's static stage
    # 48 MB since v35 (v34's and v27's files, v34's float32 index copy; v27 alone was 29 MB);
    # every release's files made it 130
    assert wheel.stat().st_size < 55_000_000
    # pyproject's excludes are the code's list, so neither can drift from the other
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    excluded = project["tool"]["hatch"]["build"]["targets"]["wheel"]["exclude"]
    # (when the default moves, write the list again from loomc.risk.releases.archived_names())
    assert excluded == [f"/loomc/risk/data/{n}" for n in archived_names()]


def test_the_archives_hold_every_archived_file_once_as_the_checkout_has_it(
    archive_wheels: dict[str, Path],
) -> None:
    import hashlib
    import tomllib
    import zipfile

    from loomc.risk.files import DATA, archive_package
    from loomc.risk.releases import archived_names

    held: dict[str, list[str]] = {}
    for distribution, path in archive_wheels.items():
        archive = zipfile.ZipFile(path)
        prefix = f"{archive_package(distribution)}/data/"
        held[distribution] = sorted(
            n.removeprefix(prefix) for n in archive.namelist() if n.startswith(prefix)
        )
        assert held[distribution] == archived_names(distribution)
        for name in held[distribution][:2]:  # the checkout's bytes (the manifest pins those)
            digest = hashlib.sha256(archive.read(prefix + name)).hexdigest()
            assert digest == hashlib.sha256((DATA / name).read_bytes()).hexdigest(), name
        # under PyPI's 100 MB file limit, with room: when the newest era nears it, open the
        # next (loomc.risk.files.ARCHIVES, packaging/README.md)
        assert path.stat().st_size < 95_000_000, (distribution, path.stat().st_size)
    everything = [n for names in held.values() for n in names]
    assert sorted(everything) == archived_names()  # each archived file in exactly one era
    # the closed era holds v4 ... v21's files; v22's own are in the next
    assert "router-static-v13.npz" in held["loomc-releases-v4"]
    assert "router-static-v22.npz" in held["loomc-releases-v22"]
    versions = {
        tomllib.loads(path.read_text())["project"]["version"]
        for path in [ROOT / "pyproject.toml", *ROOT.glob("packaging/*/pyproject.toml")]
    }
    assert len(versions) == 1  # released together


def _pinning_project(loomc: str, where: Path, release: str) -> Path:
    done = _run([loomc, "init", "proj"], where)
    assert done.returncode == 0, done.stderr
    policy = where / "proj" / "policies" / "default.yaml"
    text = policy.read_text()
    assert "  profiler: auto\n" in text
    policy.write_text(
        text.replace("  profiler: auto\n", f"  profiler: auto\n  options: {{release: {release}}}\n")
    )
    return where / "proj"


def test_installed_wheel_refuses_an_archived_release_in_one_line(
    venv: Path, tmp_path: Path
) -> None:
    loomc = str(venv / "bin" / "loomc")
    project = _pinning_project(loomc, tmp_path, "v22")
    done = _run([loomc, "check"], project)
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stdout + done.stderr
    errors = [ln for ln in said.splitlines() if "error[LOOM608]" in ln]
    assert len(errors) == 1 and "risk.options.release v22 is not in this install" in errors[0]
    assert errors[0].startswith("policies/default.yaml:57:13:")  # file:line:col
    assert "router-static-v22.npz" in errors[0] and "pip install loomc-releases-v22 " in said
    assert "Traceback" not in done.stdout + done.stderr
    # the default release needs nothing more
    (tmp_path / "d").mkdir()
    done = _run([loomc, "check"], _pinning_project(loomc, tmp_path / "d", "v27"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_with_its_eras_archive_installed_an_archived_release_is_served_from_it(
    wheel: Path,
    archive_wheels: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
) -> None:
    """Only loomc-releases-v22 installed: v22 is checked and served from it, v13 (the other
    era's) is still refused, naming the archive that holds it."""
    newest = archive_wheels["loomc-releases-v22"]
    env = _venv([wheel, newest], tmp_path_factory.mktemp("venv-archive"))
    loomc = str(env / "bin" / "loomc")
    project = _pinning_project(loomc, tmp_path, "v22")
    done = _run([loomc, "check"], project)
    assert done.returncode == 0 and "0 error(s)" in done.stdout, done.stdout + done.stderr
    (tmp_path / "old").mkdir()
    done = _run([loomc, "check"], _pinning_project(loomc, tmp_path / "old", "v13"))
    said = done.stdout + done.stderr
    assert done.returncode == 1 and "risk.options.release v13 is not in this install" in said
    assert "pip install loomc-releases-v4 " in said and "loomc-releases-v22" not in said
    probe = _run(
        [
            str(env / "bin" / "python"),
            "-c",
            "import json; from loomc.risk.releases import release_files\n"
            "print(json.dumps({r: [str(p) for p in release_files(r)] for r in ('v22', 'v27')}))",
        ],
        tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    found = {r: [Path(p) for p in ps] for r, ps in json.loads(probe.stdout).items()}
    routers, delta = found["v22"][:2], found["v22"][2]  # v22 reads no lexical model
    assert len(found["v22"]) == 3 and all(p.is_file() and p.is_relative_to(env) for p in routers)
    assert all(p.parent.parent.name == "loomc_releases_v22" for p in routers)
    # its delta is the default's too (v27 reads v22's), so loomc's own wheel holds it
    for path in (delta, *found["v27"]):
        assert path.parent.parent.name == "risk" and path.is_file() and path.is_relative_to(env)


def test_an_archive_built_outside_a_checkout_says_so_in_one_line(tmp_path: Path) -> None:
    """The archive's files come from the checkout the packaging folder sits in; a copy of the
    folder alone is refused by the hook with a reason, not a ModuleNotFoundError."""
    shutil.copytree(ROOT / "packaging", tmp_path / "packaging")
    project = tmp_path / "packaging" / "loomc-releases-v4"
    done = _run(
        [sys.executable, "-m", "pip", "wheel", str(project), "--no-deps", "-q", "-w", "dist"],
        tmp_path,
    )
    said = done.stdout + done.stderr
    assert done.returncode != 0 and not list((tmp_path / "dist").glob("*.whl"))
    assert "build loomc-releases-v4 from a loomc checkout's packaging/ folder" in said
    assert "ModuleNotFoundError" not in said
