"""A small learned planner: a conditional-logit ranker over the feasible candidate plans.

It scores each feasible plan from features the prompt shows (policy, costs against the limits,
the v2 model's own estimate, writer/category fit, provider independence, task pressures) and is
trained on corpus labels. It is the CPU-sized learned baseline for v3, where the closed-form v2
model is no longer the truth; the LoRA conductor is the large one. numpy is imported lazily.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loomc.conductor.outcome import (
    Candidate,
    V2OutcomeModel,
    enumerate_candidates,
    feasible,
)
from loomc.conductor.plan import Constraints, Plan, TaskProfile, WorkerProfile
from loomc.conductor.search import NoFeasiblePlan, label_record, reason_codes
from loomc_research.v2.families import category_strength

if TYPE_CHECKING:
    import numpy as np

POLICIES = ("lean", "balanced", "strict")
FEATURES = (
    "lean",
    "balanced",
    "strict",
    "v2_quality",
    "v2_pass",
    "v2_utility",
    "v2_target_met",
    "credit_share",
    "latency_share",
    "fit_lean",
    "fit_balanced",
    "fit_strict",
    "independent",
    "independent_x_risk",
    "shared_review_x_risk",
    "risk_balanced",
    "risk_strict",
    "complexity_balanced",
    "complexity_strict",
    "evidence_balanced",
    "evidence_strict",
    "writer_quality",
    "reviewer_quality",
    "finalizer_quality",
)


# Features that mirror the v3 generator's hidden effects (`v3.generator.TrueOutcomeModel`): the
# writer's category fit and the same-provider review blind spot scaled by risk. A ranker with
# them is partly told the answer; `without=HIDDEN_EFFECT_FEATURES` measures it without.
HIDDEN_EFFECT_FEATURES = (
    "fit_lean",
    "fit_balanced",
    "fit_strict",
    "independent_x_risk",
    "shared_review_x_risk",
)


def features(
    task: TaskProfile,
    constraints: Constraints,
    candidate: Candidate,
    workers: Mapping[str, WorkerProfile],
) -> list[float]:
    model = V2OutcomeModel()
    est = model.outcome(task, candidate, workers)
    util = model.utility(task, constraints, candidate, est, workers)
    pol = [1.0 if candidate.policy == p else 0.0 for p in POLICIES]
    fit = 1.0 if category_strength(task.category) in workers[candidate.writer].strengths else -1.0
    reviewed = candidate.reviewer is not None
    indep = 1.0 if candidate.independent_verification else 0.0

    def q(wid: str | None) -> float:
        return workers[wid].quality if wid is not None else 0.0

    return [
        *pol,
        est.quality,
        est.pass_rate,
        util / 100.0,
        1.0 if est.quality >= constraints.minimum_quality else 0.0,
        candidate.estimated_credits / max(constraints.max_credits, 0.1),
        candidate.estimated_latency_ms / max(constraints.max_latency_ms, 1),
        fit * pol[0],
        fit * pol[1],
        fit * pol[2],
        indep,
        indep * task.risk,
        (1.0 - indep) * task.risk if reviewed else 0.0,
        task.risk * pol[1],
        task.risk * pol[2],
        task.complexity * pol[1],
        task.complexity * pol[2],
        task.evidence_need * pol[1],
        task.evidence_need * pol[2],
        q(candidate.writer),
        q(candidate.reviewer),
        q(candidate.finalizer),
    ]


def _row_parts(row: Mapping[str, Any]) -> tuple[TaskProfile, Constraints, list[WorkerProfile]]:
    return (
        TaskProfile.from_dict(row["task"]),
        Constraints.from_dict(row["constraints"]),
        [WorkerProfile.from_dict(w) for w in row["workers"]],
    )


def _feasible(
    task: TaskProfile, constraints: Constraints, workers: Sequence[WorkerProfile]
) -> list[Candidate]:
    return [c for c in enumerate_candidates(workers) if feasible(c, constraints)]


class RankerPlanner:
    """``plan()`` picks the highest-scoring feasible candidate; ``fit()`` learns the weights.
    ``without`` names features the ranker may not use (they are dropped, not zero-weighted)."""

    def __init__(self, weights: Sequence[float] | None = None, without: Sequence[str] = ()) -> None:
        unknown = sorted(set(without) - set(FEATURES))
        if unknown:
            raise ValueError(f"unknown ranker feature(s): {', '.join(unknown)}")
        self.names = tuple(f for f in FEATURES if f not in set(without))
        self._keep = [i for i, f in enumerate(FEATURES) if f in self.names]
        self.weights = list(weights) if weights is not None else [0.0] * len(self.names)

    def _features(
        self,
        task: TaskProfile,
        constraints: Constraints,
        candidate: Candidate,
        table: Mapping[str, WorkerProfile],
    ) -> list[float]:
        full = features(task, constraints, candidate, table)
        return [full[i] for i in self._keep]

    def fit(
        self,
        rows: Sequence[Mapping[str, Any]],
        *,
        epochs: int = 300,
        lr: float = 0.05,
        l2: float = 1e-3,
        seed: int = 0,
    ) -> RankerPlanner:
        import numpy as np

        blocks: list[np.ndarray] = []
        targets: list[int] = []
        for row in rows:
            task, constraints, workers = _row_parts(row)
            table = {w.id: w for w in workers}
            cands = _feasible(task, constraints, workers)
            label = row["label"]
            want = (label["policy"], label["writer"], label.get("reviewer"), label.get("finalizer"))
            index = next(
                (i for i, c in enumerate(cands) if c.policy == want[0] and c.roles == want[1:]),
                None,
            )
            if index is None or len(cands) < 2:
                continue
            blocks.append(np.array([self._features(task, constraints, c, table) for c in cands]))
            targets.append(index)
        self._train(blocks, targets, epochs=epochs, lr=lr, l2=l2, seed=seed)
        return self

    def _train(
        self,
        blocks: list[np.ndarray],
        targets: list[int],
        *,
        epochs: int,
        lr: float,
        l2: float,
        seed: int,
    ) -> None:
        import numpy as np

        if not blocks:
            return
        sizes = np.array([len(b) for b in blocks])
        x = np.concatenate(blocks)
        mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
        xs = (x - mean) / std
        owner = np.repeat(np.arange(len(blocks)), sizes)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        gold = starts + np.array(targets)
        w = np.random.default_rng(seed).normal(0, 0.01, x.shape[1])
        m = np.zeros_like(w)
        v = np.zeros_like(w)
        for step in range(1, epochs + 1):  # full-batch Adam on the conditional log-likelihood
            scores = xs @ w
            peak = np.maximum.reduceat(scores, starts)
            ex = np.exp(scores - peak[owner])
            prob = ex / np.add.reduceat(ex, starts)[owner]
            grad = (prob[:, None] * xs).sum(axis=0) - xs[gold].sum(axis=0)
            grad = grad / len(blocks) + l2 * w
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad * grad
            w -= lr * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
        # fold the standardisation into the weights so scoring needs no statistics
        self.weights = [float(a) for a in w / std]

    def score(self, feats: Sequence[float]) -> float:
        return sum(a * b for a, b in zip(self.weights, feats, strict=True))

    def plan(
        self, task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
    ) -> Plan:
        table = {w.id: w for w in workers}
        cands = _feasible(task, constraints, workers)
        if not cands:
            raise NoFeasiblePlan("no plan satisfies max_calls, max_credits and max_latency_ms")
        best = max(cands, key=lambda c: self.score(self._features(task, constraints, c, table)))
        est = V2OutcomeModel().outcome(task, best, table)
        codes = reason_codes(task, constraints, best, est)
        return Plan.from_json(label_record(constraints, best, est, codes))

    def save(self, path: Path) -> None:
        path.write_text(
            json.dumps({"features": list(self.names), "weights": self.weights}, indent=2) + "\n",
            encoding="utf-8",
        )

    @classmethod
    def load(cls, path: Path) -> RankerPlanner:
        data = json.loads(path.read_text(encoding="utf-8"))
        names = data.get("features")
        if not isinstance(names, list) or not set(names) <= set(FEATURES):
            raise ValueError(f"{path}: ranker features do not match this loomc version")
        ranker = cls(data["weights"], without=[f for f in FEATURES if f not in names])
        if list(ranker.names) != names:
            raise ValueError(f"{path}: ranker features do not match this loomc version")
        return ranker
