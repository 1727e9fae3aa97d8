"""The README's Python API example runs as written (only its output path is moved to tmp)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Python API", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README has no Python API example"
    return match.group(1)


def test_readme_python_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _example()
    assert '"reports/example.html"' in code
    report = tmp_path / "example.html"
    code = code.replace('"reports/example.html"', repr(str(report)))
    monkeypatch.chdir(ROOT)
    scope: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), scope)
    calls, stop, escalated, receipt_hash = capsys.readouterr().out.split()
    result = scope["result"]
    assert int(calls) == result.calls >= 1  # type: ignore[attr-defined]
    assert stop == result.stop_reason  # type: ignore[attr-defined]
    assert escalated == str(result.escalated)  # type: ignore[attr-defined]
    assert len(receipt_hash) == 16
    kinds = [e.kind for e in scope["sink"].events]  # type: ignore[attr-defined]
    assert kinds[0] == "run-started" and kinds[-1] == "run-finished"
    assert kinds.count("step-started") == int(calls)
    receipt = scope["receipt"]
    assert {r.strategy for r in receipt.runs} == {"baseline", "balanced"}  # type: ignore[attr-defined]
    assert len(receipt.runs) == 8  # type: ignore[attr-defined]
    html = report.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") or html.lstrip().lower().startswith("<!doctype html>")
    assert "balanced" in html
