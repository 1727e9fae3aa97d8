"""loomc outside its checkout: a folder with no project runs the packaged defaults (and says so
on stderr), and `loomc init` writes a project that checks, runs and evaluates on the mock.
The same from an installed wheel is in tests/compiler/test_wheel.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from loomc.cli.main import main


def test_run_in_an_empty_folder_uses_the_packaged_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "What is the capital of Poland?", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["stop_reason"] == "direct-answer-accepted"
    notes = [line for line in cap.err.splitlines() if "packaged defaults" in line]
    assert notes == ["loomc: no project in .; using the packaged defaults"]
    assert list(tmp_path.iterdir()) == []  # nothing written into the user's folder


def test_a_folder_with_a_project_never_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "policies").mkdir()  # a project, missing its default policy: say so, do not guess
    monkeypatch.chdir(tmp_path)
    assert main(["run", "hi"]) == 1
    err = capsys.readouterr().err
    assert "policies/default.yaml" in err and "packaged" not in err


def test_init_writes_a_project_that_checks_runs_and_evaluates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "proj"
    assert main(["init", str(project)]) == 0
    capsys.readouterr()
    for name in ("pipelines/general.loom", "policies/default.yaml", "evals/smoke.jsonl"):
        assert (project / name).is_file(), name
    workflow = yaml.safe_load((project / ".github/workflows/loomc.yml").read_text())
    steps = " ".join(str(s.get("run", s.get("uses"))) for s in workflow["jobs"]["loomc"]["steps"])
    assert "loomc check --format sarif" in steps and "upload-sarif" in steps
    hooks = yaml.safe_load((project / ".pre-commit-config.yaml").read_text())
    assert hooks["repos"][0]["hooks"][0]["entry"] == "loomc check"
    cases = [json.loads(x) for x in (project / "evals/smoke.jsonl").read_text().splitlines()]
    assert {c["expectedEscalation"] for c in cases} == {True, False}

    monkeypatch.chdir(project)
    assert main(["check"]) == 0
    assert "0 error(s), 0 warning(s)" in capsys.readouterr().out
    assert main(["run", "Review the refund handler for double-spend races.", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == 2
    argv = ["eval", "--dataset", "evals/smoke.jsonl", "--output", "reports/eval.json"]
    assert main(argv) == 0
    assert "packaged" not in capsys.readouterr().err
    assert json.loads((project / "reports/eval.json").read_text())["runs"]

    before = (project / "policies/default.yaml").read_text()
    assert main(["init", str(project)]) == 1  # never overwrites
    assert "nothing was written" in capsys.readouterr().err
    assert (project / "policies/default.yaml").read_text() == before


def test_demo_in_an_empty_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--output", "out"]) == 0
    err = capsys.readouterr().err
    assert "loomc demo: no project in .; using the packaged defaults" in err
    assert (tmp_path / "out" / "eval.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_eval_takes_the_dataset_as_an_argument_and_reports_into_the_ignored_loomc_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "proj"
    assert main(["init", str(project)]) == 0
    monkeypatch.chdir(project)
    capsys.readouterr()
    assert main(["eval", "evals/smoke.jsonl", "--strategies", "baseline", "--no-store"]) == 0
    reports = project / ".loomc" / "evals"
    assert sorted(p.name for p in reports.iterdir() if not p.name.endswith(".jsonl")) == [
        "smoke.html", "smoke.json", "smoke.md", "smoke.svg",
    ]  # fmt: skip
    assert len(json.loads((reports / "smoke.json").read_text())["runs"]) == 6
    if shutil.which("git"):  # the folder git ignores: a fresh repository commits none of it
        subprocess.run(["git", "init", "-q"], check=True)
        ignored = subprocess.run(
            ["git", "check-ignore", ".loomc/evals/smoke.json", ".loomc/store.db"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert ignored.stdout.split() == [".loomc/evals/smoke.json", ".loomc/store.db"]
        tracked = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert ".loomc" not in tracked and "pipelines/general.loom" in tracked
    capsys.readouterr()
    assert main(["eval", "evals/smoke.jsonl", "--dataset", "other.jsonl"]) == 2
    assert "give the dataset once" in capsys.readouterr().err
    assert main(["eval"]) == 2
