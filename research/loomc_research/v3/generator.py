"""The `loom-conductor-v3` corpus: the v2 row format with the v2 benchmark's leaks removed.

CONDUCTOR-V2 §10 shows v2 is solvable without learning: constraints are sampled *given* the
label (so "deepest feasible policy" is the label), providers are always distinct (independence
is just "not lean"), worker credit bands never overlap (anchors are recoverable from credits),
and the label is a closed-form function of the prompt (the search planner is exact). v3 changes
each of these, and nothing else, so the two corpora stay comparable:

* **constraints are drawn independently of any desired label**; a row is redrawn only when no
  plan at all is feasible, never to reach a label quota;
* **provider groups are shared**: each worker draws its group from a small pool, so a reviewer
  is independent only sometimes;
* **worker bands overlap**: credits are log-uniform over one wide range and quality is a noisy
  function of price, with strengths drawn at random;
* **labels come from sampled outcomes**: the truth adds effects the prompt shows but the v2 model
  ignores (writer strength fit, same-group review blind spots), and the label is the best plan
  by utility on *sampled* quality/pass-rate (finite trials), so no planner can be exact and a
  learned model has something real to learn.

By default families are shared by all splits and the split is random by example
(`holdout="example"`). `holdout="family"` holds out by task family exactly like v2: each split
draws only from its own v2 families (`families_for(split)`), so test tasks come from families
— and categories — never seen in training (v2's test families are all high-risk).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loomc.conductor.outcome import (
    Candidate,
    Outcome,
    V2OutcomeModel,
    clip,
    clip01,
    enumerate_candidates,
    feasible,
    utility,
)
from loomc.conductor.plan import Constraints, TaskProfile, WorkerProfile
from loomc.conductor.search import label_record, reason_codes
from loomc_research.v2.families import FAMILIES, category_strength, families_for
from loomc_research.v2.generator import make_row, sample_task

SCHEMA_VERSION = "loom-conductor-v3"
SOURCE = "loomc/conductor/v3/generator.py"  # recorded in every row: kept so v3 bytes stay put
DEFAULT_SEED = 20261203
SIZES = {"train": 6000, "validation": 600, "test": 1200}
STRENGTHS = (
    "coding",
    "drafting",
    "implementation",
    "reasoning",
    "review",
    "speed",
    "synthesis",
    "writing",
)
GROUPS = ("provider_x", "provider_y", "provider_z")
TRIALS = 12  # sampled runs per plan behind each label


def sample_workers(rng: random.Random) -> list[WorkerProfile]:
    """Overlapping bands: price explains quality only partly; groups repeat."""
    n_groups = rng.choice((1, 2, 2, 3, 3))
    pool = list(GROUPS[:n_groups])
    workers = []
    for wid in ("worker_a", "worker_b", "worker_c"):
        credits = math.exp(rng.uniform(math.log(0.6), math.log(14.0)))
        quality = clip(0.64 + 0.09 * math.log(credits) + rng.uniform(-0.14, 0.14), 0.4, 0.99)
        pass_rate = clip(quality - 0.08 + rng.uniform(-0.15, 0.12), 0.2, 0.99)
        latency = int(rng.uniform(12_000, 95_000))
        strengths = tuple(sorted(rng.sample(STRENGTHS, rng.choice((2, 3, 3, 4)))))
        workers.append(
            WorkerProfile(
                id=wid,
                provider_group=rng.choice(pool),
                quality=round(quality, 4),
                pass_rate=round(pass_rate, 4),
                credits_per_call=round(credits, 3),
                p95_latency_ms=latency,
                strengths=strengths,
            )
        )
    return workers


def sample_constraints(rng: random.Random, workers: Sequence[WorkerProfile]) -> Constraints:
    """Not conditioned on a label: each limit scales an independent k-cheapest sum."""
    credits = sorted(w.credits_per_call for w in workers)
    latencies = sorted(w.p95_latency_ms for w in workers)
    max_calls = rng.choices((1, 2, 3), weights=(0.15, 0.3, 0.55))[0]
    k_credit = rng.choices((1, 2, 3), weights=(0.15, 0.3, 0.55))[0]
    k_latency = rng.choices((1, 2, 3), weights=(0.15, 0.3, 0.55))[0]
    max_credits = sum(credits[:k_credit]) * rng.uniform(1.0, 2.2)
    max_latency = sum(latencies[:k_latency]) * rng.uniform(1.0, 2.2)
    return Constraints(
        max_calls=max_calls,
        max_credits=round(max_credits, 3),
        max_latency_ms=int(max_latency),
        minimum_quality=round(rng.uniform(0.5, 0.92), 4),
    )


class TrueOutcomeModel:
    """The v2 model plus two effects that the prompt shows and the v2 model ignores."""

    def __init__(self) -> None:
        self._v2 = V2OutcomeModel()

    def outcome(
        self, task: TaskProfile, candidate: Candidate, workers: Mapping[str, WorkerProfile]
    ) -> Outcome:
        base = self._v2.outcome(task, candidate, workers)
        q, p = base.quality, base.pass_rate
        writer = workers[candidate.writer]
        # A writer whose strengths match the task category writes a better first draft; the
        # effect survives review and synthesis only partly.
        fit = 0.07 if category_strength(task.category) in writer.strengths else -0.05
        carry = 1.0 if candidate.reviewer is None else 0.55 if candidate.finalizer is None else 0.35
        q, p = q + fit * carry, p + 0.8 * fit * carry
        if candidate.reviewer is not None and not candidate.independent_verification:
            # Same-provider review shares the writer's blind spots on risky work.
            q -= 0.10 * task.risk
            p -= 0.12 * task.risk
        return Outcome(round(clip01(q), 4), round(clip01(p), 4))

    def utility(
        self,
        task: TaskProfile,
        constraints: Constraints,
        candidate: Candidate,
        result: Outcome,
        workers: Mapping[str, WorkerProfile],
    ) -> float:
        return utility(task, constraints, candidate, result, workers)


def _sampled(rng: random.Random, expected: Outcome) -> Outcome:
    """Mean quality and pass rate of TRIALS runs: what a measured label would see."""
    quality = sum(clip01(rng.gauss(expected.quality, 0.12)) for _ in range(TRIALS)) / TRIALS
    passes = sum(rng.random() < expected.pass_rate for _ in range(TRIALS)) / TRIALS
    return Outcome(round(quality, 4), round(passes, 4))


@dataclass(frozen=True)
class Labelled:
    label: dict[str, Any]
    oracle: dict[str, Any]


def label_row(
    rng: random.Random,
    task: TaskProfile,
    constraints: Constraints,
    workers: Sequence[WorkerProfile],
) -> Labelled | None:
    """Best feasible plan on sampled outcomes (v2's target filter and tie order)."""
    table = {w.id: w for w in workers}
    truth = TrueOutcomeModel()
    scored = []
    for candidate in enumerate_candidates(workers):
        if not feasible(candidate, constraints):
            continue
        expected = truth.outcome(task, candidate, table)
        seen = _sampled(rng, expected)
        scored.append(
            (
                candidate,
                seen,
                utility(task, constraints, candidate, seen, table),
                truth.utility(task, constraints, candidate, expected, table),
            )
        )
    if not scored:
        return None
    on_target = [s for s in scored if s[1].quality >= constraints.minimum_quality]
    best = max(
        on_target or scored,
        key=lambda s: (
            s[2],
            s[1].quality,
            s[1].pass_rate,
            -s[0].estimated_credits,
            -s[0].estimated_latency_ms,
        ),
    )
    candidate, seen, sampled_utility, _ = best
    codes = reason_codes(task, constraints, candidate, seen)
    label = label_record(constraints, candidate, seen, codes)
    oracle = {
        "candidate_count": len(scored),
        "expected_best_utility": max(s[3] for s in scored),
        "expected_utility": best[3],
        "pass_rate": seen.pass_rate,
        "quality": seen.quality,
        "quality_target_met": seen.quality >= constraints.minimum_quality,
        "utility": sampled_utility,
    }
    return Labelled(label, oracle)


def generate_split(
    rng: random.Random, split: str, size: int, holdout: str = "example"
) -> list[dict[str, Any]]:
    if holdout not in ("example", "family"):
        raise ValueError(f"holdout must be 'example' or 'family', not {holdout!r}")
    pool = families_for(split) if holdout == "family" else FAMILIES
    if not pool:
        raise ValueError(f"no v2 family belongs to split {split!r}")
    rows: list[dict[str, Any]] = []
    attempt = 0
    while len(rows) < size:
        attempt += 1
        family = pool[rng.randrange(len(pool))]
        task = sample_task(rng, family, attempt)
        task = TaskProfile(**{**task.to_dict(), "request_id": f"v3-{split}-{attempt:06d}"})
        workers = sample_workers(rng)
        constraints = sample_constraints(rng, workers)
        labelled = label_row(rng, task, constraints, workers)
        if labelled is None:
            continue  # nothing feasible: redraw (the only rejection, independent of labels)
        rows.append(
            make_row(
                split,
                task,
                constraints,
                workers,
                labelled.label,
                labelled.oracle,
                schema_version=SCHEMA_VERSION,
                source=SOURCE,
            )
        )
    return rows


def generate(
    seed: int = DEFAULT_SEED, sizes: Mapping[str, int] | None = None, holdout: str = "example"
) -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(seed)
    return {split: generate_split(rng, split, n, holdout) for split, n in (sizes or SIZES).items()}
