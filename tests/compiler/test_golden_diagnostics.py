"""Golden diagnostics: one fixture per code in `loomc.codes.CODES`, checked in text and JSON.

A fixture is either

- `fixtures/LOOMnnn.loom`: checked from `fixtures/` against `policies/default.yaml`; or
- `fixtures/LOOMnnn/`: a small project (`pipelines/`, `policies/`) for codes that need their
  own policy or a project layout. It is copied to a temporary folder and checked from there
  with the arguments in `LOOMnnn/args` (default `check LOOMnnn`). When it holds `ref/`, that
  tree is committed to a fresh Git repository first and the fixture's files are laid over it,
  so `--against HEAD` compares them (Git never looks above the temporary folder).

Regenerate with LOOMC_UPDATE_GOLDEN=1 (then review the diff)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from loomc.cli.main import main
from loomc.codes import CODES

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
GOLDEN = HERE / "golden"
POLICY = "../../../policies/default.yaml"
FILE_FIXTURES = sorted(p.stem for p in FIXTURES.glob("LOOM*.loom"))
DIR_FIXTURES = sorted(p.name for p in FIXTURES.glob("LOOM*") if p.is_dir())


def _run(argv: list[str], cwd: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)  # relative paths keep the goldens stable
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    finally:
        os.chdir(old)
    return rc, out.getvalue() + err.getvalue()


def _compare(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("LOOMC_UPDATE_GOLDEN"):
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden {path}; run with LOOMC_UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8")


def _check_golden(code: str, argv: list[str], cwd: Path) -> None:
    rc, text = _run(argv, cwd)
    assert f"[{code}]" in text
    assert "Traceback" not in text
    rc_json, doc_text = _run([*argv, "--format", "json"], cwd)
    doc = json.loads(doc_text)
    codes = {d["code"] for d in doc["diagnostics"]}
    assert code in codes
    assert rc == rc_json == (1 if doc["summary"]["errors"] else 0)
    _compare(f"{code}.txt", text)
    _compare(f"{code}.json", doc_text)


@pytest.mark.parametrize("code", FILE_FIXTURES)
def test_fixture_golden(code: str) -> None:
    _check_golden(code, ["check", f"{code}.loom", "--policy", POLICY], FIXTURES)


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def _lay_over(src: Path, dst: Path) -> None:
    for item in src.iterdir():
        if item.name in ("ref", "args"):
            continue
        if item.is_dir():
            shutil.copytree(item, dst / item.name, dirs_exist_ok=True)
        else:
            shutil.copy2(item, dst / item.name)


@pytest.mark.parametrize("code", DIR_FIXTURES)
def test_project_fixture_golden(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = FIXTURES / code
    work = tmp_path / code
    work.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    if (src / "ref").is_dir():
        if shutil.which("git") is None:
            pytest.fail("git is needed for the --against fixtures")
        _lay_over(src / "ref", work)
        _git(work, "init", "-q")
        _git(work, "add", ".")
        _git(work, "-c", "commit.gpgsign=false", "commit", "-qm", "ref")
    _lay_over(src, work)
    args_file = src / "args"
    argv = shlex.split(args_file.read_text()) if args_file.exists() else ["check", code]
    _check_golden(code, argv, tmp_path)


def test_every_code_has_one_fixture() -> None:
    assert not set(FILE_FIXTURES) & set(DIR_FIXTURES), "a code has two fixtures"
    assert sorted([*FILE_FIXTURES, *DIR_FIXTURES]) == sorted(CODES)


def test_every_golden_has_a_fixture() -> None:
    stems = {p.stem for p in GOLDEN.glob("LOOM*")}
    assert stems == set(CODES)
