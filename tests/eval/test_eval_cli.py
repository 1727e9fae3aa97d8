"""`loomc eval` end to end on the mock policy: the reference structural result, resume, budgets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loomc.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def _metrics(path: Path) -> dict[str, dict[str, object]]:
    doc = json.loads(path.read_text())
    return {m["strategy"]: m for m in doc["metrics"]}


def test_reference_structural_result(
    shared_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "r.json"
    data = shared_dir / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"
    assert (
        main(
            [
                "eval",
                "--dataset",
                str(data),
                "--strategies",
                "baseline,fixed,lean,balanced,strict",
                "--concurrency",
                "8",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    m = _metrics(out)
    assert m["lean"]["avg_calls"] == pytest.approx(1.0)
    assert m["baseline"]["avg_calls"] == pytest.approx(1.0)
    assert m["strict"]["avg_calls"] == pytest.approx(3.0)
    assert m["fixed"]["avg_calls"] == pytest.approx(4.0)
    assert m["balanced"]["avg_calls"] == pytest.approx(40 / 24)
    assert m["balanced"]["one_call_rate"] == pytest.approx(8 / 24)
    assert m["balanced"]["route_accuracy"] == pytest.approx(1.0)
    # the mock provider's own answers (the default policy), said in words a user can read
    assert "note: answers are produced by the mock provider, not written by a model" in (
        capsys.readouterr().err
    )


CASES = (
    "\n".join(
        json.dumps(
            {
                "id": f"c{i}",
                "prompt": p,
                "expectedEscalation": e,
                "checks": [{"type": "contains", "value": "answer"}],
            }
        )
        for i, (p, e) in enumerate(
            [
                ("Define a mutex.", False),
                ("Audit the refund flow for double-spend.", True),
                ("Name three colours.", False),
                ("Review OAuth token storage.", True),
            ]
        )
    )
    + "\n"
)


def _cells(journal: Path) -> list[dict[str, Any]]:
    """The journal's cell records (not its reservation and settlement lines)."""
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    return [r for r in rows if "ledger" not in r]


def test_budget_stop_then_resume_pays_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    data = tmp_path / "d.jsonl"
    data.write_text(CASES)
    full = tmp_path / "full.json"
    assert (
        main(["eval", "--dataset", str(data), "--strategies", "balanced", "--output", str(full)])
        == 0
    )
    part = tmp_path / "part.json"
    # a total too small for the matrix: refused unless told to run until the budget stops it
    assert (
        main(
            [
                "eval",
                "--dataset",
                str(data),
                "--strategies",
                "balanced",
                "--output",
                str(part),
                "--max-total-calls",
                "3",
                "--concurrency",
                "1",
            ]
        )
        == 1
    )
    assert (
        main(
            [
                "eval",
                "--dataset",
                str(data),
                "--strategies",
                "balanced",
                "--output",
                str(part),
                "--max-total-calls",
                "3",
                "--concurrency",
                "1",
                "--run-until-budget",
            ]
        )
        == 0
    )
    first = json.loads(part.read_text())
    assert sum(r["result"]["calls"] for r in first["runs"] if r["result"]) <= 3
    assert any(r["status"] == "budget-stopped" for r in first["runs"])
    journal = part.with_name(part.name + ".journal.jsonl")
    paid_before = sum(r["result"]["calls"] for r in _cells(journal))
    assert (
        main(
            [
                "eval",
                "--dataset",
                str(data),
                "--strategies",
                "balanced",
                "--output",
                str(part),
                "--resume",
            ]
        )
        == 0
    )
    lines = _cells(journal)
    paid_after = sum(r["result"]["calls"] for r in lines)
    resumed = json.loads(part.read_text())
    total_full = sum(r["result"]["calls"] for r in json.loads(full.read_text())["runs"])
    # the resumed receipt has the same cells and calls as an uninterrupted run
    assert sorted((r["case_id"], r["result"]["calls"]) for r in resumed["runs"]) == sorted(
        (r["case_id"], r["result"]["calls"]) for r in json.loads(full.read_text())["runs"]
    )
    # the resume paid only for what was missing
    ok_before = sum(r["result"]["calls"] for r in first["runs"] if r["status"] == "ok")
    assert paid_after - paid_before == total_full - ok_before


def test_malformed_dataset_lines_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    data = tmp_path / "bad.jsonl"
    data.write_text(
        '{"id": "a", "prompt": "x"}\n{not json\n\n# comment\n{"id": "a", "prompt": "y"}\n'
    )
    assert main(["eval", "--dataset", str(data), "--output", str(tmp_path / "o.json")]) == 1
    err = capsys.readouterr().err
    assert f"{data}:2:" in err and f"{data}:5:" in err and "Traceback" not in err


def test_dry_run_prints_the_matrix_worst_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    data = tmp_path / "d.jsonl"
    data.write_text(CASES)
    assert (
        main(
            [
                "eval",
                "--dataset",
                str(data),
                "--strategies",
                "fixed,strict",
                "--iterations",
                "2",
                "--output",
                str(tmp_path / "o.json"),
                "--dry-run",
            ]
        )
        == 0
    )
    est = json.loads(capsys.readouterr().out)
    assert est["total_calls"] == 4 * 2 * (4 + 3)
    assert not (tmp_path / "o.json").exists()


def test_artifacts_alone_is_enough_and_its_receipt_rerenders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    data = tmp_path / "d.jsonl"
    data.write_text(CASES)
    prefix = tmp_path / "out" / "eval"
    assert (
        main(
            [
                "eval",
                "--dataset",
                str(data),
                "--strategies",
                "lean,strict",
                "--artifacts",
                str(prefix),
            ]
        )
        == 0
    )
    for ext in (".html", ".svg", ".md", ".json"):
        assert prefix.with_suffix(ext).exists(), ext
    assert (tmp_path / "out" / "eval.json.journal.jsonl").exists()
    capsys.readouterr()
    assert main(["report", str(prefix.with_suffix(".json")), "-o", str(tmp_path / "again.md")]) == 0
    assert "| lean |" in (tmp_path / "again.md").read_text()


def test_html_only_output_still_writes_the_json_receipt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    data = tmp_path / "d.jsonl"
    data.write_text(CASES)
    assert (
        main(
            [
                "eval",
                "--dataset",
                str(data),
                "--strategies",
                "lean",
                "--output",
                str(tmp_path / "r.html"),
            ]
        )
        == 0
    )
    assert (tmp_path / "r.html").exists()
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [m["strategy"] for m in doc["metrics"]] == ["lean"]
    assert main(["report", str(tmp_path / "r.json"), "-o", str(tmp_path / "r2.svg")]) == 0


def test_a_dry_run_needs_no_output_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --output a real eval reports into PROJECT/.loomc/evals (tests/adopt); a dry run
    answers the worst case on stdout and leaves the project as it was."""
    project = tmp_path / "proj"
    assert main(["init", str(project)]) == 0
    monkeypatch.chdir(project)
    data = tmp_path / "d.jsonl"
    data.write_text(CASES)
    before = sorted(project.rglob("*"))
    capsys.readouterr()
    assert main(["eval", str(data), "--strategies", "lean", "--dry-run"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert estimate["per_strategy"]["lean"]["runs"] == len(CASES.splitlines())
    assert sorted(project.rglob("*")) == before


def test_summary_shows_cost_latency_and_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert (
        main(
            [
                "eval",
                "--dataset",
                "evals/mixed-routing.jsonl",
                "--policy",
                "policies/demo.yaml",
                "--strategies",
                "lean,strict",
                "--concurrency",
                "8",
                "--output",
                str(tmp_path / "r.json"),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    rows = {
        line.split()[0]: line
        for line in err.splitlines()
        if line.split() and line.split()[0] in ("lean", "strict")
    }
    for row in rows.values():
        assert "/run" in row and "$0.0" in row and " ms" in row and "p95" in row
        assert "quality" in row and "[" in row and "pass" in row
    assert "[31.0, 69.0]" in rows["lean"]  # an interval, not a bare point
    assert "answers are scripted" in err
