"""One vocabulary: a tier declared only in a project's own policy is checked, run and evaluated
like the built-in ones (nothing in loomc lists `lean/balanced/strict` for it to pass)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import loomc

ROOT = Path(__file__).resolve().parents[2]

PIPELINE = """
pipeline triage {
  instruction "Answer carefully."
  tiers quick, careful
  budget { calls <= 2 }
  step direct : drafter(drafter) { task "Answer the task." max_tokens 200 }
  step second : editor(critic) sees direct when tier == careful {
    task "Check the answer and return it corrected." max_tokens 200 }
  answer second | direct
}
"""


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "triage.loom").write_text(PIPELINE, encoding="utf-8")
    (tmp_path / "policies").mkdir()
    policy = (ROOT / "policies" / "default.yaml").read_text(encoding="utf-8")
    head, _, rest = policy.partition("tiers:\n")
    tail = rest.split("pricing:", 1)[1]
    custom = (
        "tiers:\n  quick: {calls: 1, latency: 30s}\n  careful: {calls: 2, latency: 60s}\npricing:"
    )
    (tmp_path / "policies" / "default.yaml").write_text(head + custom + tail, encoding="utf-8")
    return tmp_path


def test_custom_tier_checks_runs_and_evaluates(project: Path, tmp_path: Path) -> None:
    checked = loomc.check(project)
    assert checked.errors == 0, [d.message for d in checked.diagnostics]
    assert sorted(p.tier or "" for _, p in checked.pipelines) == ["careful", "quick"]

    proj = loomc.Project.load(project)
    assert proj.tiers() == ["quick", "careful"]
    quick = loomc.run("What is 2 + 2?", project=proj, pipeline="triage", tier="quick", stream=False)
    careful = loomc.run(
        "What is 2 + 2?", project=proj, pipeline="triage", tier="careful", stream=False
    )
    assert (quick.tier, quick.calls) == ("quick", 1)
    assert (careful.tier, careful.calls) == ("careful", 2)

    data = tmp_path / "cases.jsonl"
    data.write_text(
        json.dumps({"id": "a", "prompt": "What is 2 + 2?", "pipeline": "triage"}) + "\n",
        encoding="utf-8",
    )
    receipt = loomc.evaluate(data, "quick,careful,triage@careful", project=proj)
    calls = {r.strategy: r.result.calls for r in receipt.runs if r.result is not None}
    assert calls == {"quick": 1, "careful": 2, "triage@careful": 2}


def test_unknown_tier_names_the_policys_tiers(project: Path) -> None:
    with pytest.raises(loomc.StrategyError, match="quick, careful"):
        loomc.prepare_eval(ROOT / "evals" / "mixed-routing.jsonl", "balanced", project=project)
    with pytest.raises(loomc.DiagnosticError) as caught:
        loomc.run("hi there", project=project, pipeline="triage", tier="balanced")
    assert caught.value.diagnostics[0].code == "LOOM215"


def test_compile_cache_is_bounded() -> None:
    """A server compiles per distinct request ceiling: the cache must not grow without bound."""
    from loomc.project.workspace import COMPILE_CACHE_SIZE

    proj = loomc.Project.load(ROOT)
    first, _ = proj.pipelines(loomc.Budget(calls=1))
    assert proj.pipelines(loomc.Budget(calls=1))[0] is first  # reused
    for n in range(2, COMPILE_CACHE_SIZE + 10):
        proj.pipelines(loomc.Budget(latency_ms=1000 * n))
    assert len(proj._compiled) == COMPILE_CACHE_SIZE
    assert proj.pipelines(loomc.Budget(calls=1))[0] is not first  # evicted, compiled again
