"""The product/research boundary: `loomc` reaches `loomc_research` only lazily, from the
`loomc conductor` handlers, and says how to get it when it is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loomc.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "peft", "loomc_research")

# `loomc --help`, `loomc conductor --help` and `loomc check` in a fresh interpreter, where the
# research package *is* importable, then the heavy modules that got imported.
PROBE = """
import importlib.util, json, sys
from loomc.cli.main import main
for argv in (["--help"], ["conductor", "--help"]):
    try:
        main(argv)
    except SystemExit:
        pass
rc = main(["check", sys.argv[1], "--format", "json"])
heavy = sys.argv[2].split(",")
print(json.dumps({"rc": rc, "loaded": [m for m in heavy if m in sys.modules],
                  "research": importlib.util.find_spec("loomc_research") is not None}))
"""


def test_help_and_check_import_neither_torch_nor_research() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), str(ROOT / "research"), env.get("PYTHONPATH", "")]
    )
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "pipelines"), ",".join(HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=ROOT,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"rc": 0, "loaded": [], "research": True}


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", "--out", "x"],
        ["predict", "--planner", "search", "--data", "d.jsonl", "--output", "o.jsonl"],
        ["guard", "--data", "d", "--predictions", "p", "--output", "o"],
        ["score", "--data", "d", "--predictions", "p", "--output", "o"],
        ["stats", "--deterministic", "a", "--base", "b", "--trained", "c", "--output", "o"],
    ],
)
def test_conductor_without_the_research_package_exits_2_with_one_line(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "loomc_research", None)
    monkeypatch.setitem(sys.modules, "loomc_research.conductor", None)
    assert main(["conductor", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err
    assert lines[0].startswith(f"loomc conductor {argv[0]}: needs the research package")
    assert "pip install -e ." in lines[0] and "PYTHONPATH" in lines[0]
