"""Generate `loom-conductor-v3`, train the small learned ranker, and compare planners on its test.

    python research/conductor_v3.py [--out DIR] [--seed N] [--report docs/conductor-v3.md]

Planners: the deterministic router (the v2 stand-in for the `risk` policy), `search` under the
v2 closed-form model (exact on v2), the learned ranker (trained here on v3 train, CPU, seconds)
and the "deepest feasible policy" heuristic that solves v2's policy label (CONDUCTOR-V2 §10.1).
Regret is measured against the *expected* truth (not the sampled label), so it is the cost of
a planner's choice, not label noise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from loomc.conductor.plan import Constraints, Plan, TaskProfile, WorkerProfile
from loomc.conductor.ranker import RankerPlanner
from loomc.conductor.v2.format import write_jsonl
from loomc.conductor.v2.outcome import build_candidate, enumerate_candidates, feasible
from loomc.conductor.v2.router import DeterministicRouter
from loomc.conductor.v2.search import SearchPlanner
from loomc.conductor.v3.generator import DEFAULT_SEED, SIZES, TrueOutcomeModel, generate

DEPTH = {"lean": 0, "balanced": 1, "strict": 2}
CALLS = {"lean": 1, "balanced": 2, "strict": 3}


class DeepestFeasible:
    """§10.1's leak: the deepest policy with any feasible plan, cheapest roles."""

    def plan(self, task: TaskProfile, workers: Sequence[WorkerProfile],
             constraints: Constraints) -> Plan:
        cands = [c for c in enumerate_candidates(workers) if feasible(c, constraints)]
        best = max(cands, key=lambda c: (DEPTH[c.policy], -c.estimated_credits))
        return Plan.from_json({**best.record(), "max_credits": constraints.max_credits,
                               "max_latency_ms": constraints.max_latency_ms,
                               "estimated_quality": 0.0, "estimated_pass_rate": 0.0,
                               "reason_codes": []})


def _parts(row: Mapping[str, Any]) -> tuple[TaskProfile, Constraints, list[WorkerProfile]]:
    return (TaskProfile.from_dict(row["task"]), Constraints.from_dict(row["constraints"]),
            [WorkerProfile.from_dict(w) for w in row["workers"]])


def evaluate(planner: Any, rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    truth = TrueOutcomeModel()
    n = len(rows)
    policy = exact = budgets = target = unsafe = over = 0
    regret = 0.0
    started = time.perf_counter()
    for row in rows:
        task, constraints, workers = _parts(row)
        table = {w.id: w for w in workers}
        plan = planner.plan(task, workers, constraints)
        cand = build_candidate(plan.policy, plan.writer, plan.reviewer, plan.finalizer, table)
        label = row["label"]
        policy += plan.policy == label["policy"]
        exact += (plan.policy, plan.writer, plan.reviewer, plan.finalizer) == (
            label["policy"], label["writer"], label.get("reviewer"), label.get("finalizer"))
        ok = feasible(cand, constraints)
        budgets += ok
        if ok:
            out = truth.outcome(task, cand, table)
            util = truth.utility(task, constraints, cand, out, table)
            target += out.quality >= constraints.minimum_quality
        else:
            util = -1000.0
        regret += max(0.0, row["oracle"]["expected_best_utility"] - util)
        if task.risk >= 0.75 and (cand.calls < CALLS[label["policy"]] or (
                label["independent_verification"] and not cand.independent_verification)):
            unsafe += 1
        if task.risk < 0.30 and cand.calls > CALLS[label["policy"]]:
            over += 1
    elapsed = time.perf_counter() - started
    return {"policy_accuracy": policy / n, "exact_plan": exact / n, "hard_budgets_met": budgets / n,
            "mean_expected_regret": regret / n, "quality_target_met": target / n,
            "unsafe_under_escalation": unsafe / n, "unnecessary_escalation": over / n,
            "ms_per_decision": elapsed / n * 1000}


def report(results: Mapping[str, Mapping[str, float]], meta: Mapping[str, Any]) -> str:
    cols = ("policy_accuracy", "exact_plan", "hard_budgets_met", "mean_expected_regret",
            "quality_target_met", "unsafe_under_escalation", "unnecessary_escalation",
            "ms_per_decision")
    lines = ["| planner | " + " | ".join(c.replace("_", " ") for c in cols) + " |",
             "|---|" + "---:|" * len(cols)]
    for name, res in results.items():
        lines.append(f"| {name} | " + " | ".join(f"{res[c]:.3f}" for c in cols) + " |")
    return "\n".join(lines) + "\n\n" + "```json\n" + json.dumps(meta, indent=2) + "\n```\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, help="write train/validation/test JSONL here")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--train-size", type=int, default=SIZES["train"])
    ap.add_argument("--test-size", type=int, default=SIZES["test"])
    ap.add_argument("--report", type=Path, help="write the Markdown table here")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    corpus = generate(args.seed, {"train": args.train_size, "validation": SIZES["validation"],
                                  "test": args.test_size})
    gen_s = time.perf_counter() - started
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for split, rows in corpus.items():
            write_jsonl(args.out / f"{split}.jsonl", rows)
    started = time.perf_counter()
    ranker = RankerPlanner().fit(corpus["train"])
    fit_s = time.perf_counter() - started
    planners: dict[str, Callable[[], Any]] = {
        "router (risk stand-in)": DeterministicRouter,
        "search (v2 model)": SearchPlanner,
        "deepest feasible": DeepestFeasible,
        "learned ranker": lambda: ranker,
    }
    results = {name: evaluate(make(), corpus["test"]) for name, make in planners.items()}
    policies: dict[str, int] = {}
    for row in corpus["test"]:
        policies[row["label"]["policy"]] = policies.get(row["label"]["policy"], 0) + 1
    meta = {"seed": args.seed, "train_rows": len(corpus["train"]),
            "test_rows": len(corpus["test"]), "test_label_policies": policies,
            "generate_s": round(gen_s, 2), "ranker_fit_s": round(fit_s, 2)}
    text = report(results, meta)
    if args.report:
        args.report.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
