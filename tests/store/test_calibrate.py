"""`loomc calibrate`: per-worker figures measured from stored runs, proposed as a policy diff with
the evidence; refused on too few samples; `--write` leaves a policy that `loomc check` passes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import loomc
from loomc.api.calibrating import CalibrationRefused, calibrate, set_worker_field
from loomc.store import open_store

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "evals" / "mixed-routing.jsonl"
DEFAULT = (ROOT / "policies" / "default.yaml").read_text()


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'research'}"}
    env.pop("LOOMC_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "loomc", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env=env,
    )


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose mock provider answers 40 completion tokens for 0.4 credits a call (its
    receipts), 30 ms late; 60 runs of `fixed` recorded by an eval in its default store."""
    root = tmp_path_factory.mktemp("cal") / "proj"
    root.mkdir()
    shutil.copytree(ROOT / "pipelines", root / "pipelines")
    (root / "policies").mkdir()
    policy = yaml.safe_load(DEFAULT)
    policy["providers"]["mock"]["mock"]["rules"] = [
        {"pattern": ".", "completion_tokens": 40, "spent_credits": 0.4, "latency_ms": 30}
    ]
    (root / "policies" / "default.yaml").write_text(
        "# the team's policy: comments and layout survive calibration\n"
        + yaml.safe_dump(policy, sort_keys=False)
    )
    ev = loomc.prepare_eval(DATASET, "fixed", project=root, limit=20, iterations=3, concurrency=8)
    ev.run(store=root / ".loomc" / "store.db")
    return root


def test_proposal_comes_from_the_measurements(measured: Path) -> None:
    found = calibrate(measured)
    assert found.runs == 60 and not found.too_few
    store = open_store(measured / ".loomc" / "store.db")
    steps = [s for r in store.runs() for s in r.result["steps"] if s["attempts"] == 1]
    store.close()
    for ev in found.workers:
        mine = [s for s in steps if s["worker"] == ev.worker]
        assert ev.calls == len(mine) >= 20
        latencies = sorted(s["elapsed_ms"] for s in mine)
        assert ev.latency_ms is not None and ev.latency_ms.max == latencies[-1]
        assert ev.latency_ms.p95 == latencies[-(-95 * len(latencies) // 100) - 1]
        assert ev.latency_ms.p50 >= 30  # the mock's latency is real
        assert ev.credits_per_call is not None and ev.credits_per_call.max == Decimal("0.4")
        assert ev.proposed["credits"] == Decimal("0.4")
        assert ev.proposed["max_tokens"] == 48  # 40 rounded up to 16
        p95 = int(ev.latency_ms.p95)
        assert ev.proposed["p95_latency"] == (
            f"{-(-p95 // 100) * 100}ms" if -(-p95 // 100) % 10 else f"{-(-p95 // 1000)}s"
        )
    diff = found.diff()
    assert (
        diff.startswith("--- a/") and "-    credits: 1\n" in diff and "+    credits: 0.4\n" in diff
    )
    assert "-    max_tokens: 900\n" in diff and "+    max_tokens: 48\n" in diff
    assert "# the team's policy" in found.after
    assert yaml.safe_load(found.after)["workers"]["drafter"]["credits"] == 0.4


def test_cli_shows_the_evidence_writes_and_the_policy_still_checks(measured: Path) -> None:
    shown = cli("calibrate", "--json", cwd=measured)
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["runs"] == 60 and "+    credits: 0.4" in doc["diff"]
    assert {w["worker"] for w in doc["workers"]} >= {"drafter", "critic", "finalizer"}
    assert all(w["latency_ms"]["n"] >= 20 for w in doc["workers"])
    before = (measured / "policies" / "default.yaml").read_text()
    dry = cli("calibrate", cwd=measured)
    assert dry.returncode == 0 and "--write" in dry.stderr and "p95" in dry.stderr
    assert (measured / "policies" / "default.yaml").read_text() == before
    wrote = cli("calibrate", "--write", cwd=measured)
    assert wrote.returncode == 0, wrote.stderr
    after = (measured / "policies" / "default.yaml").read_text()
    assert after != before and after.startswith("# the team's policy")
    checked = cli("check", ".", cwd=measured)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    again = cli("calibrate", cwd=measured)
    assert again.returncode == 0 and "already matches" in again.stderr


def test_too_few_samples_is_refused_with_the_counts(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    shutil.copytree(ROOT / "pipelines", root / "pipelines")
    shutil.copytree(ROOT / "policies", root / "policies")
    loomc.run("Explain DNS briefly.", project=root, pipeline="fixed", store=root / "s.db")
    with pytest.raises(CalibrationRefused, match=r"too few samples.*needs 20 measured calls"):
        calibrate(root, store=root / "s.db")
    refused = cli("calibrate", "--store", "s.db", cwd=root)
    assert refused.returncode == 1 and "too few samples" in refused.stderr
    assert "Traceback" not in refused.stderr
    absent = cli("calibrate", cwd=root)
    assert absent.returncode == 1 and "no store at" in absent.stderr
    assert calibrate(root, store=root / "s.db", min_samples=1).changed


def test_figures_that_break_a_ceiling_are_refused(tmp_path: Path, measured: Path) -> None:
    root = tmp_path / "tight"
    shutil.copytree(measured, root)
    policy = yaml.safe_load((root / "policies" / "default.yaml").read_text())
    for worker in policy["workers"].values():
        worker["credits"] = 0.3  # the guess: 3 calls fit code-review's 1 credit
    (root / "policies" / "default.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    review = root / "pipelines" / "code-review.loom"
    review.write_text(review.read_text().replace("credits <= 18", "credits <= 1"))
    assert cli("check", ".", cwd=root).returncode == 0
    # measured: 0.4 a call, so 3 calls need 1.2 credits
    with pytest.raises(CalibrationRefused, match=r"loomc check.*LOOM403.*credits 1.2"):
        calibrate(root)
    refused = cli("calibrate", "--write", cwd=root)
    assert refused.returncode == 1 and "LOOM403" in refused.stderr
    assert yaml.safe_load((root / "policies" / "default.yaml").read_text()) == policy


names = st.sampled_from(["router", "drafter", "critic", "finalizer"])
fields = st.sampled_from(["credits", "max_tokens", "p95_latency", "retries", "timeout"])
values = st.one_of(st.integers(1, 10**6).map(str), st.sampled_from(["100ms", "2s", "0.25"]))


@settings(max_examples=80, deadline=None)
@given(edits=st.lists(st.tuples(names, fields, values), max_size=8))
def test_field_edits_change_exactly_those_fields(edits: list[tuple[str, str, str]]) -> None:
    text = DEFAULT
    expected = yaml.safe_load(DEFAULT)
    for worker, key, value in edits:
        text = set_worker_field(text, worker, key, value)
        expected["workers"][worker][key] = yaml.safe_load(value)
    assert yaml.safe_load(text) == expected
    kept = [line for line in DEFAULT.splitlines() if line.startswith("#")]
    assert all(line in text.splitlines() for line in kept)


def test_flow_style_workers_are_refused_not_mangled() -> None:
    text = "workers:\n  a: {model: mock/x, credits: 1}\n"
    with pytest.raises(CalibrationRefused, match="flow"):
        set_worker_field(text, "a", "credits", "2")
