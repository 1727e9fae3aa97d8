"""SIGKILL a real `loomc eval` process mid-matrix, then --resume: the receipt equals an
uninterrupted run's and no finished run is paid twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from loomc.cli.main import main
from loomc.providers.base import CompletionRequest
from loomc.providers.mock import MockProvider

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = [
    ("Define a mutex.", False),
    ("Audit the refund flow for double-spend.", True),
    ("Name three colours.", False),
    ("Review OAuth token storage for leaks.", True),
    ("Convert 3 miles to kilometres.", False),
    ("Investigate why payments are charged twice.", True),
    ("Write a haiku about rain.", False),
    ("Review the admin endpoint's authorization check.", True),
    ("Spell 'necessary'.", False),
    ("Audit the password reset flow.", True),
]
TIMING = {"elapsed_ms", "latency_ms"}


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _journal_rows(path: Path, kind: str | None = None) -> list[dict[str, Any]]:
    """Finished cells (``kind`` None), or the ledger lines of one kind ("step", ...)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:  # not written yet, or between the eval's write probe (it
        return []  # creates the file and removes it again, loomc/cli/eval.py) and its first cell
    rows = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a torn last line
        if row.get("ledger") == kind:  # cells have no "ledger"
            rows.append(row)
    return rows


def test_sigkill_then_resume_matches_an_uninterrupted_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    policy = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    policy["providers"]["mock"]["mock"]["latency_ms"] = 60
    policy_path = tmp_path / "slow.yaml"
    policy_path.write_text(yaml.safe_dump(policy))
    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"c{i}",
                    "prompt": p,
                    "expectedEscalation": e,
                    "checks": [{"type": "contains", "value": "answer"}],
                }
            )
            + "\n"
            for i, (p, e) in enumerate(PROMPTS)
        )
    )
    args = [
        "eval",
        "--dataset",
        str(data),
        "--policy",
        str(policy_path),
        "--strategies",
        "lean,balanced,strict",
        "--concurrency",
        "2",
    ]

    full = tmp_path / "full.json"
    assert main([*args, "--output", str(full)]) == 0
    full_doc = json.loads(full.read_text())
    total_calls = sum(r["result"]["calls"] for r in full_doc["runs"])
    cells = len(full_doc["runs"])
    assert cells == 30

    out = tmp_path / "killed.json"
    journal = out.with_name(out.name + ".journal.jsonl")
    with open(tmp_path / "child.log", "wb") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "loomc", *args, "--output", str(out)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and child.poll() is None:
                if len(_journal_rows(journal)) >= 4:
                    break
                time.sleep(0.01)
            assert child.poll() is None, "the eval finished before it could be killed"
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert not out.exists()  # killed before any receipt was written
    before = _journal_rows(journal)
    assert 4 <= len(before) < cells, len(before)
    paid_before = sum(r["result"]["calls"] for r in before)
    finished = {(r["case_id"], r["strategy"], r["iteration"]) for r in before}
    # steps that completed in cells still running at the kill are paid, and journaled
    paid_before += sum(
        r["record"]["attempts"]
        for r in _journal_rows(journal, "step")
        if tuple(r["cell"]) not in finished
    )

    roles: Counter[str] = Counter()
    original = MockProvider.complete

    async def counting(
        provider: MockProvider, request: CompletionRequest, on_event: Any = None
    ) -> Any:
        roles[request.step_role or "?"] += 1
        return await original(provider, request, on_event)

    monkeypatch.setattr(MockProvider, "complete", counting)
    assert main([*args, "--output", str(out), "--resume"]) == 0
    # the resumed process paid exactly for what the journal did not hold
    assert sum(roles.values()) == total_calls - paid_before
    after = _journal_rows(journal)
    keys = [(r["case_id"], r["strategy"], r["iteration"]) for r in after]
    assert len(keys) == len(set(keys)) == cells  # no finished cell was run twice
    resumed = json.loads(out.read_text())
    assert _untimed(resumed["runs"]) == _untimed(full_doc["runs"])
    strip = ("p50_ms", "p95_ms")
    assert [{k: v for k, v in m.items() if k not in strip} for m in resumed["metrics"]] == [
        {k: v for k, v in m.items() if k not in strip} for m in full_doc["metrics"]
    ]
