"""One mistake, one diagnostic: the root cause is reported (with its "did you mean"), its
consequences are not (docs/diagnostics.md, "One mistake, one diagnostic")."""

from __future__ import annotations

from pathlib import Path

import pytest

from loomc.project.checking import check_paths

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "policies" / "default.yaml"

A = "  step a : writer(drafter) { max_tokens 100 }\n"
CASES = {
    # an unknown name in `sees` was LOOM203 + LOOM301 (reads a step that never runs) + LOOM208
    "sees-unknown": (
        "  step a : writer(drafter) sees ghst { max_tokens 100 }\n  answer a",
        ["LOOM203"],
    ),
    "after-unknown": (
        "  step a : writer(drafter) after ghst { max_tokens 100 }\n  answer a",
        ["LOOM203"],
    ),
    # an unknown answer was LOOM208 twice + LOOM207 on every step
    "answer-unknown": (A + "  answer b", ["LOOM208"]),
    "answer-missing": (A, ["LOOM208"]),
    # an unknown worker was also LOOM412 (model 'unknown/...' unpriced) and LOOM501
    "worker-unknown": (
        "  budget { cost <= $1 }\n  step a : writer(nobody) { max_tokens 100 }\n"
        "  step b : writer(nobody) sees a { max_tokens 100 }\n  require independent(a, b)\n"
        "  answer b",
        ["LOOM204", "LOOM204"],
    ),
    # a bad predicate folded the guard to false: the step vanished (LOOM208 + LOOM207)
    "predicate-unknown": (
        A + "  step b : editor(critic) sees a when a.refuzed { max_tokens 100 }\n  answer b",
        ["LOOM212"],
    ),
    # a tier typo would also make the step dead at every tier (LOOM209) or, analysed as
    # unguarded, break the lean tier's calls ceiling (LOOM401)
    "tier-typo": (
        A + "  step b : editor(critic) sees a when tier == strcit { max_tokens 100 }\n"
        "  answer b | a",
        ["LOOM211"],
    ),
    # a read of a skippable step was also LOOM208 (every answer step may be skipped)
    "skippable-read": (
        A + "  step b : writer(critic) sees a when risk >= high { max_tokens 100 }\n"
        "  step c : writer(finalizer) sees b { max_tokens 100 }\n  answer c",
        ["LOOM301"],
    ),
    "dead-step": (
        A + "  step b : editor(critic) sees a when false { max_tokens 100 }\n  answer b | a",
        ["LOOM209"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_mistake_one_diagnostic(name: str, tmp_path: Path) -> None:
    body, expected = CASES[name]
    f = tmp_path / "p.loom"
    f.write_text("pipeline p {\n" + body + "\n}\n")
    result = check_paths([f], POLICY)
    assert [d.code for d in result.diagnostics] == expected, result.diagnostics
    if name in ("sees-unknown", "after-unknown"):
        assert result.diagnostics[0].hint is None or "did you mean" in result.diagnostics[0].hint


def test_did_you_mean_is_kept(tmp_path: Path) -> None:
    f = tmp_path / "p.loom"
    f.write_text(
        "pipeline p {\n"
        + A
        + "  step b : writer(critic) sees aa { max_tokens 100 }\n  answer b\n}\n"
    )
    (d,) = check_paths([f], POLICY).diagnostics
    assert d.code == "LOOM203" and d.hint == "did you mean 'a'?"


def test_same_finding_at_several_tiers_is_reported_once(tmp_path: Path) -> None:
    f = tmp_path / "p.loom"
    f.write_text(
        "pipeline p {\n  step a : writer(drafter) when tier == strict { max_tokens 100 }\n"
        "  step b : writer(critic) sees a { max_tokens 100 }\n  answer b\n}\n"
    )
    (d,) = check_paths([f], POLICY).diagnostics
    assert d.code == "LOOM301"
    assert (
        d.message == "step 'b' reads 'a', which never runs in pipeline 'p' at tiers lean, balanced"
    )


def test_reference_pipelines_stay_clean() -> None:
    result = check_paths([ROOT], POLICY)
    assert result.diagnostics == []
