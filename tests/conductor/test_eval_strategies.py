"""`conductor:PLANNER` eval strategies: each case is planned from its own prompt, the plan runs
and is checked like any strategy, and the receipt shows every decision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import loomc
from loomc.eval.strategies import StrategyError, parse_strategies

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "evals" / "mixed-routing.jsonl"


def test_strategy_names() -> None:
    parsed = parse_strategies(
        "conductor:search,conductor:risk@semantic,balanced", planners=("risk", "search")
    )
    assert [(s.name, s.planner, s.semantic) for s in parsed] == [
        ("conductor:search", "search", False),
        ("conductor:risk@semantic", "risk", True),
        ("balanced", None, False),
    ]
    with pytest.raises(StrategyError, match="conductor:risk, conductor:search"):
        parse_strategies("conductor:oracle", planners=("risk", "search"))
    with pytest.raises(StrategyError, match="unknown planner"):
        parse_strategies("conductor:search", planners=())
    with pytest.raises(StrategyError) as caught:  # `baseline` is a pipeline and a strategy
        parse_strategies("nope", pipelines={"baseline", "general"}, tiers=("lean",))
    assert "(valid: baseline, fixed, lean, general, PIPELINE@TIER" in str(caught.value)


@pytest.fixture(scope="module")
def receipt() -> loomc.EvalReceipt:
    ev = loomc.prepare_eval(DATASET, "conductor:risk,conductor:search,lean", project=ROOT, limit=12)
    return ev.run()


def test_planners_run_beside_the_tiers(receipt: loomc.EvalReceipt) -> None:
    names = {m.strategy for m in receipt.metrics}
    assert names == {"conductor:risk", "conductor:search", "lean"}
    runs = [r for r in receipt.runs if r.strategy.startswith("conductor:")]
    assert len(runs) == 24 and all(r.status == "ok" and r.result is not None for r in runs)
    for r in runs:
        assert r.result is not None and r.conductor is not None
        decision = r.conductor
        plan = decision["plan"]
        # the plan chosen is the plan executed: one call per planned step, on its workers
        assert r.result.calls == plan["max_calls"] == len(decision["steps"])
        assert [s.id for s in r.result.steps] == decision["steps"]
        roles = [plan[k] for k in ("writer", "reviewer", "finalizer") if plan[k]]
        assert [s.worker for s in r.result.steps] == roles
        assert r.result.tier is not None and r.result.tier.startswith(f"conductor-{plan['policy']}")
        # the task profile came from the prompt, with the cues behind it
        assert set(decision["task"]) >= {"risk", "complexity", "ambiguity", "reversibility"}
        assert decision["drivers"]["risk"]
    for m in receipt.metrics:
        if m.strategy.startswith("conductor:"):
            assert m.route_accuracy is not None and m.pass_rate is not None


def test_planners_decide_from_each_prompt(receipt: loomc.EvalReceipt) -> None:
    risk = {r.case_id: r.conductor for r in receipt.runs if r.strategy == "conductor:risk"}
    policies = {d["plan"]["policy"] for d in risk.values() if d}
    assert len(policies) >= 2  # low- and high-risk cases get different depths
    tasks = {json.dumps(d["task"], sort_keys=True) for d in risk.values() if d}
    assert len(tasks) >= 4  # profiles differ per prompt, not one default


def test_receipt_summarises_each_planner(receipt: loomc.EvalReceipt, tmp_path: Path) -> None:
    summary = receipt.planners
    assert set(summary) == {"conductor:risk", "conductor:search"}
    assert summary["conductor:search"]["planner"] == "search"
    assert summary["conductor:search"]["decisions"] == 12
    assert sum(summary["conductor:risk"]["policies"].values()) == 12
    out = tmp_path / "receipt.json"
    loomc.render(receipt, out)
    again = loomc.load_receipt(out)
    assert again.planners == summary
    assert [r.conductor for r in again.runs] == [r.conductor for r in receipt.runs]


def test_preflight_covers_the_plans_that_run() -> None:
    ev = loomc.prepare_eval(DATASET, "conductor:search", project=ROOT, limit=6)
    worst = ev.estimate.total_calls
    planned = sum(d["plan"]["max_calls"] for d in ev.decisions.values())
    assert worst >= planned > 0


def test_eval_cli_runs_planners_and_refuses_a_misconfigured_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from loomc.cli.main import main

    def run(*argv: str) -> tuple[int, str]:
        out = tmp_path / "r.json"
        base = ["eval", "--project", str(ROOT), "--dataset", str(DATASET), "--limit", "3"]
        code = main([*base, "--output", str(out), *argv])
        return code, capsys.readouterr().err

    code, err = run("--strategies", "conductor:search,lean")
    assert code == 0 and "conductor:search       planner search: 3/3 proposals accepted" in err
    code, err = run("--strategies", "conductor:learned")
    assert code == 2 and "needs --base-model DIR or --endpoint URL" in err
    code, err = run("--strategies", "conductor:learned", "--base-model", str(tmp_path / "none"))
    assert code == 1 and "nothing was run" in err and "--allow-planner-fallback" in err
    assert "\n" not in err.strip()  # one line, no traceback
    code, err = run(
        "--strategies",
        "conductor:learned",
        "--base-model",
        str(tmp_path / "none"),
        "--allow-planner-fallback",
    )
    assert code == 0 and "3 fell back to risk (planner_unavailable 3)" in err
