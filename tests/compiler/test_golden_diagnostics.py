"""Golden diagnostics: each fixture `LOOMnnn.loom` must produce its own code, in text and JSON.

Regenerate with LOOMC_UPDATE_GOLDEN=1 (then review the diff)."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

from loomc.cli.main import main

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
GOLDEN = HERE / "golden"
POLICY = "../../../policies/default.yaml"


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(FIXTURES)  # relative paths keep the goldens stable
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    finally:
        os.chdir(cwd)
    return rc, out.getvalue() + err.getvalue()


def _compare(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("LOOMC_UPDATE_GOLDEN"):
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden {path}; run with LOOMC_UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("LOOM*.loom")))
def test_fixture_golden(fixture: str) -> None:
    code = fixture.split(".")[0]
    rc, text = _run(["check", fixture, "--policy", POLICY])
    assert f"[{code}]" in text
    assert "Traceback" not in text
    rc_json, doc_text = _run(["check", fixture, "--policy", POLICY, "--format", "json"])
    doc = json.loads(doc_text)
    codes = {d["code"] for d in doc["diagnostics"]}
    assert code in codes
    assert rc == rc_json == (1 if doc["summary"]["errors"] else 0)
    _compare(f"{code}.txt", text)
    _compare(f"{code}.json", doc_text)
