"""The files other tools read: the pre-commit hook, the example CI workflow, the licence and the
project URLs. Each is parsed and its loomc command run, so a renamed flag breaks a test here."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import tomllib
from pathlib import Path

import yaml

from loomc.checker.render import PROJECT_URL
from loomc.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def _loomc(argv: list[str], cwd: Path) -> tuple[int, str]:
    import os

    out = io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            rc = main(argv)
    finally:
        os.chdir(old)
    return rc, out.getvalue()


def _example_project(tmp_path: Path) -> Path:
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "policies").mkdir()
    (tmp_path / "pipelines" / "p.loom").write_text((ROOT / "pipelines/general.loom").read_text())
    (tmp_path / "policies" / "default.yaml").write_text(
        (ROOT / "policies/default.yaml").read_text()
    )
    return tmp_path


def test_pre_commit_hook_runs_loomc_check(tmp_path: Path) -> None:
    import re

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    hook = next(h for h in hooks if h["id"] == "loomc-check")
    assert {"id", "name", "entry", "language"} <= set(hook) and hook["language"] == "python"
    files = re.compile(hook["files"])
    assert files.search("pipelines/review.loom") and files.search("policies/default.yaml")
    assert files.search("sub/policies/dot.yml") and not files.search("docs/notes.yaml")
    argv = shlex.split(hook["entry"])
    assert argv[0] == "loomc"
    rc, _ = _loomc(argv[1:], _example_project(tmp_path))
    assert rc == 0


def test_example_workflow_commands_run(tmp_path: Path) -> None:
    flow = yaml.safe_load((ROOT / "docs/ci/github-workflow.yml").read_text(encoding="utf-8"))
    steps = flow["jobs"]["check"]["steps"]
    assert any(s.get("uses", "").startswith("github/codeql-action/upload-sarif@") for s in steps)
    assert flow["permissions"]["security-events"] == "write"
    project = _example_project(tmp_path)
    ran = 0
    for step in steps:
        command = step.get("run", "")
        if command.startswith("loomc "):
            argv = shlex.split(command.split(">")[0].split("||")[0])[1:]
            rc, out = _loomc(argv, project)
            assert rc == 0, command
            if "sarif" in argv:
                assert json.loads(out)["version"] == "2.1.0"
            ran += 1
    assert ran == 2


def test_licence_is_the_apache_text_the_metadata_names() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert meta["license"] == "Apache-2.0"
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and len(text.splitlines()) > 170


def test_project_urls_are_real_and_consistent() -> None:
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert urls and all(u.startswith(PROJECT_URL) for u in urls.values())
    assert PROJECT_URL == "https://github.com/loomc/loomc"
