"""The `search` planner's fast path chooses exactly what `select` (the reference) chooses.

`SearchPlanner` under the v2 model runs `loomc.conductor.fastsearch.fast_plan`; `select` is the
unchanged reference and the corpus oracle. Same plan JSON, byte for byte, on a fixed seeded set
of profiles (rosters of 1-5 workers, shared provider groups, tight and loose limits), on
Hypothesis-drawn profiles, and the same `NoFeasiblePlan` when nothing fits.
"""

from __future__ import annotations

import hashlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.conductor.fastsearch import fast_plan
from loomc.conductor.plan import Constraints, Plan, TaskProfile, WorkerProfile
from loomc.conductor.search import NoFeasiblePlan, SearchPlanner, select

STRENGTHS = ("coding", "drafting", "reasoning", "review", "speed", "synthesis", "writing")
# sha256 of the 600 fixed profiles' plans as chosen by `select` (the code before the fast path)
FIXED_DIGEST = "d9351a2ac52866d14714c0a206eb8f6c6e2c6ea589348456aab85df335c86229"


def _worker(rng: random.Random, i: int, groups: int) -> WorkerProfile:
    return WorkerProfile(
        id=f"w{i}",
        provider_group=f"g{rng.randrange(groups)}",
        quality=round(rng.uniform(0.4, 0.99), 4),
        pass_rate=round(rng.uniform(0.2, 0.995), 4),
        credits_per_call=round(rng.uniform(0.3, 14.0), 3),
        p95_latency_ms=rng.randrange(5_000, 95_000),
        strengths=tuple(sorted(rng.sample(STRENGTHS, rng.randrange(0, 4)))),
    )


def _case(rng: random.Random) -> tuple[TaskProfile, list[WorkerProfile], Constraints]:
    n = rng.choice((1, 2, 3, 3, 3, 4, 5))
    workers = [_worker(rng, i, rng.randrange(1, 4)) for i in range(n)]
    fields = {k: round(rng.random(), 4) for k in ("risk", "complexity", "consequence")}
    task = TaskProfile(
        family="f",
        category=rng.choice(("coding", "general", "security", "research")),
        summary="s",
        ambiguity=round(rng.random(), 4),
        evidence_need=round(rng.random(), 4),
        reversibility=round(rng.random(), 4),
        input_tokens=400,
        **fields,
    )
    credits = sorted(w.credits_per_call for w in workers)
    latencies = sorted(w.p95_latency_ms for w in workers)
    k = rng.randrange(1, n + 1) if rng.random() < 0.5 else n
    constraints = Constraints(
        max_calls=rng.choice((1, 2, 3, 3, 3)),
        max_credits=round(sum(credits[:k]) * rng.uniform(0.9, 3.0), 3),
        max_latency_ms=int(sum(latencies[:k]) * rng.uniform(0.9, 3.0)),
        minimum_quality=round(rng.uniform(0.5, 0.95), 4),
    )
    return task, workers, constraints


def _reference(task: TaskProfile, workers: list[WorkerProfile], c: Constraints) -> str:
    try:
        return Plan.from_json(select(task, c, workers).label).to_json()
    except NoFeasiblePlan:
        return "infeasible"


def _fast(task: TaskProfile, workers: list[WorkerProfile], c: Constraints) -> str:
    try:
        return fast_plan(task, workers, c).to_json()
    except NoFeasiblePlan:
        return "infeasible"


FIXED = [_case(random.Random(seed)) for seed in range(600)]


def test_fast_path_matches_the_reference_on_fixed_profiles() -> None:
    mismatched = [i for i, case in enumerate(FIXED) if _fast(*case) != _reference(*case)]
    assert mismatched == []
    kinds = {_reference(*case).split('"policy":"')[-1][:4] for case in FIXED}
    assert kinds >= {"lean", "bala", "stri", "infe"}  # the set exercises every outcome


def test_fixed_profiles_choose_the_plans_pinned_before_the_fast_path() -> None:
    digest = hashlib.sha256("\n".join(_fast(*case) for case in FIXED).encode()).hexdigest()
    assert digest == FIXED_DIGEST


def test_search_planner_uses_the_fast_path_only_under_the_v2_model() -> None:
    class Shifted:  # any other outcome model runs `select` itself
        def outcome(self, task, candidate, workers):  # type: ignore[no-untyped-def]
            from loomc.conductor.outcome import outcome

            return outcome(task, candidate, workers)

        def utility(self, task, constraints, candidate, result, workers):  # type: ignore[no-untyped-def]
            return -candidate.estimated_credits

    task, workers, constraints = next(
        c for c in FIXED if len(c[1]) == 3 and c[2].max_calls == 3 and _fast(*c) != "infeasible"
    )
    assert SearchPlanner().plan(task, workers, constraints).to_json() == _fast(
        task, workers, constraints
    )
    cheap = SearchPlanner(Shifted()).plan(task, workers, constraints)
    assert (
        cheap.to_json()
        == Plan.from_json(select(task, constraints, workers, Shifted()).label).to_json()
    )


def test_no_feasible_plan_is_raised_like_the_reference() -> None:
    task, workers, _ = FIXED[0]
    tight = Constraints(max_calls=3, max_credits=0.0, max_latency_ms=1, minimum_quality=0.8)
    with pytest.raises(NoFeasiblePlan):
        fast_plan(task, workers, tight)
    with pytest.raises(NoFeasiblePlan):
        select(task, tight, workers)


unit = st.floats(0, 1, allow_nan=False).map(lambda x: round(x, 4))


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    risk=unit,
    complexity=unit,
    ambiguity=unit,
    evidence=unit,
    minimum=unit,
    calls=st.integers(1, 3),
)
def test_fast_path_matches_the_reference_on_drawn_profiles(
    seed: int,
    risk: float,
    complexity: float,
    ambiguity: float,
    evidence: float,
    minimum: float,
    calls: int,
) -> None:
    task, workers, c = _case(random.Random(seed))
    task = TaskProfile(
        **{
            **task.to_dict(),
            "risk": risk,
            "complexity": complexity,
            "ambiguity": ambiguity,
            "evidence_need": evidence,
        }
    )
    c = Constraints(calls, c.max_credits, c.max_latency_ms, minimum)
    assert _fast(task, workers, c) == _reference(task, workers, c)
