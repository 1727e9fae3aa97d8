"""The demo's eval (policies/demo.yaml on evals/mixed-routing.jsonl): scripted answers keyed by
role and prompt only, so strategies differ because of the steps their pipelines run, and the
receipt says the answers are scripted. The demo policy's profiler is ``auto``: semantic where
its extra is installed (CI), keywords where not, and balanced's verdicts follow it."""

from __future__ import annotations

from pathlib import Path

import pytest

import loomc
from loomc.eval.receipt import EvalReceipt

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "evals" / "mixed-routing.jsonl"
STRATEGIES = "baseline,fixed,lean,balanced,strict"


@pytest.fixture(scope="module", params=["auto", "keywords"])
def receipt(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> EvalReceipt:
    """The demo's eval as shipped (``auto``), and with its profiler pinned to ``keywords``."""
    policy = ROOT / "policies/demo.yaml"
    if request.param == "keywords":
        text = policy.read_text(encoding="utf-8")
        assert text.count("profiler: auto") == 1
        policy = tmp_path_factory.mktemp("demo") / "demo.yaml"
        policy.write_text(text.replace("profiler: auto", "profiler: keywords"), encoding="utf-8")
    ev = loomc.prepare_eval(
        DATASET,
        STRATEGIES,
        project=ROOT,
        policy=policy,
        concurrency=8,
        include_answers=True,
    )
    return ev.run()


def test_receipt_says_answers_are_scripted(receipt: EvalReceipt) -> None:
    assert receipt.settings.policy == "demo"
    assert receipt.settings.answers == "scripted"


def test_default_policy_answers_are_mock_not_scripted() -> None:
    ev = loomc.prepare_eval(DATASET, "lean", project=ROOT, limit=2)
    assert ev.run().settings.answers == "mock"


def profiler_of(receipt: EvalReceipt) -> str:
    """The profiler the demo policy's ``auto`` resolved to on this install."""
    names = {str(r.result.risk.get("profiler")) for r in receipt.runs if r.result is not None}
    assert len(names) == 1, names
    return names.pop()


def test_strategies_differ_in_quality_calls_and_cost(receipt: EvalReceipt) -> None:
    m = {x.strategy: x for x in receipt.metrics}
    q = {k: v.quality_mean for k, v in m.items()}
    assert all(v is not None for v in q.values())
    if profiler_of(receipt) == "semantic":
        # auto = semantic: balanced verifies every high-risk case, so it reaches strict's
        # quality at a fraction of strict's calls and cost
        assert q["lean"] == q["baseline"] < q["balanced"] == q["strict"] == q["fixed"]
    else:  # keywords (no semantic extra): balanced misses some high-risk cases
        assert q["lean"] == q["baseline"] < q["balanced"] < q["strict"] == q["fixed"]
    calls = {k: v.avg_calls for k, v in m.items()}
    assert calls["lean"] == calls["baseline"] == 1 < calls["balanced"] < calls["strict"] == 3
    assert calls["fixed"] == 4
    cost = {k: float(v.avg_cost_usd or 0) for k, v in m.items()}
    assert 0 < cost["lean"] < cost["balanced"] < cost["strict"]
    assert cost["baseline"] < cost["fixed"]


def test_quality_follows_the_steps_that_ran(receipt: EvalReceipt) -> None:
    """On balanced, an escalation case passes its checks when the verifier ran; on strict and
    fixed every case passes because a finalizer saw a critique; no answer quotes a step task."""
    balanced = [r for r in receipt.runs if r.strategy == "balanced" and r.checks]
    verified = [
        r
        for r in balanced
        if r.result and any(s.id == "verify" and s.status == "ok" for s in r.result.steps)
    ]
    assert verified and all(r.checks_passed for r in verified)
    unverified_high = [r for r in balanced if r.expected_escalation and r not in verified]
    if profiler_of(receipt) == "semantic":
        # no high-risk case of the demo left unverified; of its medium ones, v35 (the default
        # since round 47) leaves one that v27 verified, a design question ("server-side
        # rendering or a single-page app for an internal dashboard?", P 0.08 < 0.15;
        # evals/routing/README.md, round 47)
        assert [r.case_id for r in unverified_high if r.difficulty == "high"] == []
        assert [r.case_id for r in unverified_high] in ([], ["spa-or-ssr"])
    else:  # the keyword rules miss some, and the drafter alone fails their checks
        assert any(not r.checks_passed for r in unverified_high)
    for r in receipt.runs:
        if r.strategy in ("strict", "fixed") and r.checks:
            assert r.checks_passed, r.case_id
        assert r.answer and "Answer the task" not in r.answer


@pytest.mark.parametrize(
    ("name", "expected"), [("demo", "scripted"), ("default", "mock"), ("openrouter", "model")]
)
def test_answer_source_of_each_kind_of_policy(name: str, expected: str) -> None:
    from loomc.api.evaluating import answer_source
    from loomc.policy.load import load_policy

    src, diags = load_policy(ROOT / "policies" / f"{name}.yaml")
    assert src is not None, diags
    assert answer_source(src.policy) == expected


def test_a_policy_mixing_mock_and_real_workers_says_so() -> None:
    from loomc.api.evaluating import answer_source
    from loomc.policy.load import load_policy

    src, _ = load_policy(ROOT / "policies" / "openrouter.yaml")
    demo, _ = load_policy(ROOT / "policies" / "demo.yaml")
    assert src is not None and demo is not None
    mixed = src.policy.model_copy(
        update={
            "providers": {**src.policy.providers, **demo.policy.providers},
            "workers": {**src.policy.workers, "scripted": demo.policy.workers["drafter"]},
        }
    )
    assert answer_source(mixed) == "scripted+model"
