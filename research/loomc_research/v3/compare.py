"""Generate `loom-conductor-v3`, train the small learned ranker, and compare planners on its test.

    python -m loomc_research.v3.compare [--out DIR] [--seed N] [--report docs/conductor-v3.md]

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

from loomc.conductor.outcome import build_candidate, enumerate_candidates, feasible
from loomc.conductor.plan import Constraints, Plan, TaskProfile, WorkerProfile
from loomc.conductor.search import SearchPlanner
from loomc_research.corpus_io import write_jsonl
from loomc_research.ranker import HIDDEN_EFFECT_FEATURES, RankerPlanner
from loomc_research.v2.router import DeterministicRouter
from loomc_research.v3.generator import DEFAULT_SEED, SIZES, TrueOutcomeModel, generate

HEADER = """# loom-conductor-v3: planners on a corpus without v2's leaks

Generated on CPU by `PYTHONPATH=.:research python -m loomc_research.v3.compare --report
docs/conductor-v3.md` (seed {seed}; {train} train rows, {test} test rows per split; about two
minutes on a shared 2-core machine; `ms per decision` includes scoring and is noisy there). What changed from v2 and why is in `research/loomc_research/v3/generator.py`.

**How to read it.** Regret is against the *expected* truth (the generator's
`TrueOutcomeModel`), not the sampled label, so it is the cost of a planner's choice and not label
noise; lower is better. *Unsafe under-escalation* counts test rows with risk ≥ 0.75 where the
planner chose fewer calls than the label, or dropped the independent review the label has.
The v3 truth adds two effects to the v2 model — a writer's category fit and the same-provider
review blind spot on risky work — and the learned ranker has features that mirror exactly those
two effects (`HIDDEN_EFFECT_FEATURES` in `research/loomc_research/ranker.py`: `fit_*`,
`independent_x_risk`, `shared_review_x_risk`). With them it is partly told the answer, so it is
reported both with and without them. The LoRA conductor is not in these tables: it needs a GPU
to train (`research/README.md`); the ranker is the CPU-sized learned model.

**Planners in `loomc eval`.** `conductor:risk|search|learned` are eval strategies on real prompts
(`docs/conductor-planners.md`). A learned planner is asked only once the eval starts, so a dry run
sends nothing; the pre-flight counts its cases at the most any admissible plan may spend plus a
served planner's own calls (priced where the policy knows the endpoint), each call is reserved in
the eval-wide ledger and journaled before it is sent, and the receipt's `totals` include it.

"""
DEPTH = {"lean": 0, "balanced": 1, "strict": 2}
CALLS = {"lean": 1, "balanced": 2, "strict": 3}


class DeepestFeasible:
    """§10.1's leak: the deepest policy with any feasible plan, cheapest roles."""

    def plan(
        self, task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
    ) -> Plan:
        cands = [c for c in enumerate_candidates(workers) if feasible(c, constraints)]
        best = max(cands, key=lambda c: (DEPTH[c.policy], -c.estimated_credits))
        return Plan.from_json(
            {
                **best.record(),
                "max_credits": constraints.max_credits,
                "max_latency_ms": constraints.max_latency_ms,
                "estimated_quality": 0.0,
                "estimated_pass_rate": 0.0,
                "reason_codes": [],
            }
        )


def _parts(row: Mapping[str, Any]) -> tuple[TaskProfile, Constraints, list[WorkerProfile]]:
    return (
        TaskProfile.from_dict(row["task"]),
        Constraints.from_dict(row["constraints"]),
        [WorkerProfile.from_dict(w) for w in row["workers"]],
    )


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
            label["policy"],
            label["writer"],
            label.get("reviewer"),
            label.get("finalizer"),
        )
        ok = feasible(cand, constraints)
        budgets += ok
        if ok:
            out = truth.outcome(task, cand, table)
            util = truth.utility(task, constraints, cand, out, table)
            target += out.quality >= constraints.minimum_quality
        else:
            util = -1000.0
        regret += max(0.0, row["oracle"]["expected_best_utility"] - util)
        if task.risk >= 0.75 and (
            cand.calls < CALLS[label["policy"]]
            or (label["independent_verification"] and not cand.independent_verification)
        ):
            unsafe += 1
        if task.risk < 0.30 and cand.calls > CALLS[label["policy"]]:
            over += 1
    elapsed = time.perf_counter() - started
    return {
        "policy_accuracy": policy / n,
        "exact_plan": exact / n,
        "hard_budgets_met": budgets / n,
        "mean_expected_regret": regret / n,
        "quality_target_met": target / n,
        "unsafe_under_escalation": unsafe / n,
        "unnecessary_escalation": over / n,
        "ms_per_decision": elapsed / n * 1000,
    }


def report(results: Mapping[str, Mapping[str, float]], meta: Mapping[str, Any]) -> str:
    cols = (
        "policy_accuracy",
        "exact_plan",
        "hard_budgets_met",
        "mean_expected_regret",
        "quality_target_met",
        "unsafe_under_escalation",
        "unnecessary_escalation",
        "ms_per_decision",
    )
    lines = [
        "| planner | " + " | ".join(c.replace("_", " ") for c in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for name, res in results.items():
        lines.append(f"| {name} | " + " | ".join(f"{res[c]:.3f}" for c in cols) + " |")
    return "\n".join(lines) + "\n\n" + "```json\n" + json.dumps(meta, indent=2) + "\n```\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, help="write train/validation/test JSONL here")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--train-size", type=int, default=SIZES["train"])
    ap.add_argument("--test-size", type=int, default=SIZES["test"])
    ap.add_argument("--report", type=Path, help="write the Markdown report here")
    ap.add_argument(
        "--holdout",
        choices=("family", "example", "both"),
        default="both",
        help="test split held out by v2 task family (like v2), at random by example, or both",
    )
    args = ap.parse_args(argv)
    holdouts = ("family", "example") if args.holdout == "both" else (args.holdout,)
    sections = []
    for holdout in holdouts:
        results, meta = compare(args.seed, args.train_size, args.test_size, holdout, args.out)
        sections.append(section(holdout, results, meta))
    text = "\n".join(sections)
    if args.report:
        header = HEADER.format(seed=args.seed, train=args.train_size, test=args.test_size)
        args.report.write_text(header + text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


TITLES = {
    "family": "## Held out by task family (like v2)\n\nTrain and test share no task family: "
    "the test families are v2's (payments, tenant isolation, webhooks, OAuth, SSRF, stream "
    "settlement, health triage, contracts: all high-risk, in categories never seen in "
    "training), so no test task is low-risk and unnecessary escalation is 0 by construction."
    "\n\n",
    "example": "## Held out at random by example\n\nEvery family appears in train and test.\n\n",
}
RANKER = "learned ranker"
RANKER_BLIND = "learned ranker without hidden-effect features"


def compare(
    seed: int, train: int, test: int, holdout: str, out: Path | None = None
) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    started = time.perf_counter()
    corpus = generate(
        seed, {"train": train, "validation": SIZES["validation"], "test": test}, holdout
    )
    gen_s = time.perf_counter() - started
    if out:
        folder = out / holdout
        folder.mkdir(parents=True, exist_ok=True)
        for split, rows in corpus.items():
            write_jsonl(folder / f"{split}.jsonl", rows)
    started = time.perf_counter()
    ranker = RankerPlanner().fit(corpus["train"])
    blind = RankerPlanner(without=HIDDEN_EFFECT_FEATURES).fit(corpus["train"])
    fit_s = time.perf_counter() - started
    planners: dict[str, Callable[[], Any]] = {
        "router (risk stand-in)": DeterministicRouter,
        "search (v2 model)": SearchPlanner,
        "deepest feasible": DeepestFeasible,
        RANKER: lambda: ranker,
        RANKER_BLIND: lambda: blind,
    }
    results = {name: evaluate(make(), corpus["test"]) for name, make in planners.items()}
    policies: dict[str, int] = {}
    for row in corpus["test"]:
        policies[row["label"]["policy"]] = policies.get(row["label"]["policy"], 0) + 1
    meta = {
        "holdout": holdout,
        "seed": seed,
        "train_rows": len(corpus["train"]),
        "test_rows": len(corpus["test"]),
        "train_families": sorted({r["family"] for r in corpus["train"]}),
        "test_families": sorted({r["family"] for r in corpus["test"]}),
        "test_label_policies": dict(sorted(policies.items())),
        "generate_s": round(gen_s, 2),
        "ranker_fit_s": round(fit_s, 2),
    }
    return results, meta


def section(
    holdout: str, results: Mapping[str, Mapping[str, float]], meta: Mapping[str, Any]
) -> str:
    """The table, then what it says about the ranker, in numbers read from the table."""
    search = results["search (v2 model)"]
    lines = [TITLES[holdout] + report(results, meta)]
    for name in (RANKER, RANKER_BLIND):
        r = results[name]
        ratio = (
            f"{r['unsafe_under_escalation'] / search['unsafe_under_escalation']:.1f}x search's"
            if search["unsafe_under_escalation"]
            else "search has none"
        )
        lines.append(
            f"- {name}: regret {r['mean_expected_regret']:.3f} vs search "
            f"{search['mean_expected_regret']:.3f}; unsafe under-escalation "
            f"{r['unsafe_under_escalation']:.3f} ({ratio})."
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
