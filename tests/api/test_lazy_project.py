"""A Project parses a `.loom` file only when needed: compiling one pipeline (what `loomc run`
does) reads only the files that bear on it, and finds exactly what reading them all finds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import loomc
from loomc.diagnostics import DiagnosticError
from loomc.ir.artifact import canonical, pipeline_to_json

ROOT = Path(__file__).resolve().parents[2]

GENERAL = (ROOT / "pipelines" / "general.loom").read_text(encoding="utf-8")
TWICE = """
pipeline {name} {{
  step a : writer(drafter) {{ task "t" max_tokens 10 }}
  answer a
}}
"""


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "b-general.loom").write_text(GENERAL, encoding="utf-8")
    (tmp_path / "pipelines" / "c-broken.loom").write_text("pipeline broken {\n", "utf-8")
    (tmp_path / "pipelines" / "d-other.loom").write_text(TWICE.format(name="other"), "utf-8")
    return tmp_path


def _outcome(project: loomc.Project, name: str, tier: str | None) -> object:
    try:
        return ("compiled", canonical(pipeline_to_json(project.compile(name, tier))))
    except DiagnosticError as exc:
        return ("error", [d.to_json() for d in exc.diagnostics])


def _both(root: Path, name: str, tier: str | None = "balanced") -> tuple[object, object]:
    lazy = loomc.Project.load(root)
    eager = loomc.Project.load(root)
    assert eager.modules  # reads every file first, as before
    return _outcome(lazy, name, tier), _outcome(eager, name, tier)


def test_running_one_pipeline_parses_only_its_file(project: Path) -> None:
    proj = loomc.Project.load(project)
    pipeline = proj.compile("general", "balanced")
    assert pipeline.name == "general"
    assert sorted(p.name for p in proj._parsed) == ["b-general.loom"]
    assert len(proj.modules) == 2  # and the rest on demand (broken.loom does not parse)
    assert [d.code for d in proj.diagnostics if d.is_error] == ["LOOM101"]


def test_lazy_and_eager_agree_on_a_clean_pipeline(project: Path) -> None:
    lazy, eager = _both(project, "general")
    assert lazy == eager and lazy[0] == "compiled"


def test_a_duplicate_in_another_file_is_still_found(project: Path) -> None:
    # a-first.loom defines `other` first, so d-other.loom's `other` is the duplicate (LOOM201);
    # neither file mentions `general`, yet the error in d-other.loom must be found as before.
    (project / "pipelines" / "a-first.loom").write_text(TWICE.format(name="other"), "utf-8")
    lazy, eager = _both(project, "other", None)
    assert lazy == eager
    (project / "pipelines" / "d-other.loom").write_text(
        TWICE.format(name="other") + TWICE.format(name="general2"), "utf-8"
    )
    lazy, eager = _both(project, "general2", None)
    assert lazy == eager and lazy[0] == "error"
    assert "LOOM201" in str(lazy)


def test_an_unknown_pipeline_reads_everything_for_its_error(project: Path) -> None:
    lazy, eager = _both(project, "generl")
    assert lazy == eager and lazy[0] == "error"
    assert "LOOM203" in str(lazy) and "LOOM101" in str(lazy)  # the file that did not parse


def test_a_pipeline_in_a_file_that_does_not_parse(project: Path) -> None:
    lazy, eager = _both(project, "broken", None)
    assert lazy == eager and lazy[0] == "error"
