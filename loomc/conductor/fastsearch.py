"""The `search` planner's hot path: `select` under the v2 model without per-plan objects.

`loomc.conductor.search.select` is the reference (and the corpus oracle): it builds a
`Candidate`, an `Outcome` and a `Scored` per plan and recomputes the writer's and reviewer's
stages for every plan that contains them. Here the 15 plans are scored as a tree — writer
stage per worker, reviewer stage per (writer, reviewer), finalizer stage per triple — over
plain floats, and only the chosen plan becomes a `Plan`. Every expression keeps the reference's
operands and evaluation order (`outcome`, `utility`, `role_fitness_penalty` in
`loomc.conductor.outcome`), so the chosen plan and its receipts are bit-identical;
`tests/conductor/test_fastsearch.py` checks that on corpus rows and random profiles.

The roster part (ids, costs, groups, strengths, every plan's credits, latency and
independence) depends only on the workers, so it is computed once per roster (`_roster`, an
LRU cache keyed on the frozen profiles): a pipeline that plans many prompts over one policy
pays it once.
"""

from __future__ import annotations

from collections.abc import Sequence

from loomc.conductor.outcome import _FINAL_STRENGTHS, _REVIEW_STRENGTHS
from loomc.conductor.plan import (
    POLICY_CALLS,
    Constraints,
    Plan,
    Policy,
    TaskProfile,
    WorkerProfile,
)
from loomc.conductor.search import MAX_REASON_CODES, NoFeasiblePlan

POLICY_OF: tuple[Policy, Policy, Policy] = ("lean", "balanced", "strict")
_EMPTY: tuple[str, ...] = ()
_ACCESS = {
    "lean": {"writer": _EMPTY, "reviewer": _EMPTY, "finalizer": _EMPTY},
    "balanced": {"writer": _EMPTY, "reviewer": ("writer",), "finalizer": _EMPTY},
    "strict": {"writer": _EMPTY, "reviewer": ("writer",), "finalizer": ("writer", "reviewer")},
}


class _Best:
    """The running choice: `select`'s target filter and rank, first maximal plan kept."""

    __slots__ = ("credits", "independent", "latency", "on", "p", "q", "roles", "u")

    def __init__(self) -> None:
        self.roles: tuple[int, int, int] | None = None
        self.u = self.q = self.p = self.credits = 0.0
        self.latency = 0
        self.on = self.independent = False


def _pos(x: float) -> float:
    return x if x > 0 else 0  # max(0, x), the int 0 included, as the reference writes it


def fast_plan(
    task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
) -> Plan:
    """`SearchPlanner().plan(...)` under the v2 model; raises `NoFeasiblePlan` likewise."""
    n = len(workers)
    ids = [w.id for w in workers]
    wq = [w.quality for w in workers]
    wp = [w.pass_rate for w in workers]
    credit = [w.credits_per_call for w in workers]
    lat = [w.p95_latency_ms for w in workers]
    group = [w.provider_group for w in workers]
    risk, cx, amb, ev = task.risk, task.complexity, task.ambiguity, task.evidence_need
    max_calls = constraints.max_calls
    max_credits = constraints.max_credits
    max_lat = constraints.max_latency_ms
    minq = constraints.minimum_quality
    cap = max_credits + 1e-9
    credit_div = max(max_credits, 0.1)
    lat_div = max(max_lat, 1)
    d = 0.42 * cx + 0.28 * amb + 0.30 * risk
    vp = risk * task.consequence * (0.55 + 0.45 * ev)
    sp = 0.4 * cx + 0.25 * amb + 0.2 * risk
    sp += 0.15 * ev
    easy = risk < 0.28 and cx < 0.42
    strict_bonus = 30 * _pos(sp - 0.35)
    irreversible = task.reversibility < 0.3
    best = _Best()

    def consider(
        depth: int,
        roles: tuple[int, int, int],
        credits: float,
        latency: int,
        independent: bool,
        q: float,
        p: float,
        penalty: float,
    ) -> None:
        """`utility` (§2.10) of one feasible plan, then `select`'s filter and rank."""
        q = round(q, 4)
        p = round(p, 4)
        on = q >= minq
        if best.on and not on:
            return
        s = 62 * q + 23 * p
        s -= 7 * credits / credit_div
        s -= 4.5 * latency / lat_div
        s -= 1.5 * depth
        s -= penalty
        gap = minq - q
        s -= 42 * (gap if gap > 0 else 0)
        if independent:
            s += 12 * vp
        elif vp > 0.42:
            s -= 28 * vp
        if depth == 2:
            s += strict_bonus
        if easy:
            s -= 4.8 * depth
        if depth == 0 and irreversible:
            s -= 7.5
        u = round(s, 6)
        if best.roles is not None and on == best.on:
            if u != best.u:
                if u < best.u:
                    return
            elif (q, p, -credits, -latency) <= (best.q, best.p, -best.credits, -best.latency):
                return
        best.roles, best.u, best.q, best.p, best.on = roles, u, q, p, on
        best.credits, best.latency, best.independent = credits, latency, independent

    # stage 1, per writer (`outcome`'s first two lines)
    q1: list[float] = []
    p1: list[float] = []
    for a in range(n):
        x = wq[a] - 0.24 * d + 0.08 * (1 - cx)
        x = x if x < 0.995 else 0.995
        y = wp[a] - 0.27 * d
        y = y if y < 0.995 else 0.995
        q1.append(x if x > 0.05 else 0.05)
        p1.append(y if y > 0.03 else 0.03)
    # lean, in roster order (`enumerate_candidates`' order throughout)
    for a in range(n):
        c = round(0.0 + credit[a], 3)
        if c <= cap and lat[a] <= max_lat:
            consider(0, (a, -1, -1), c, lat[a], False, q1[a], p1[a], 0.0)
    if max_calls < 2:
        return _result(best, task, constraints, ids)
    # stage 2, per (writer, reviewer): the review block of `outcome` and its penalties
    k_power = 0.28 + 0.34 * ev + 0.18 * risk
    k_regress = 0.08 + 0.08 * amb
    k_pass = 0.36 + 0.34 * risk
    floor = max(0.55, min(0.82, minq - 0.1))
    # what depends on the reviewer alone, once per reviewer (the same operations in the same
    # order as per pair, so the same floats): its reliability terms and its first penalties
    rels: list[float] = []
    powers: list[tuple[float, float]] = []  # (same provider group, independent)
    regresses: list[float] = []
    pens: list[float] = []
    weak: list[bool] = []
    for b in range(n):
        rel = wq[b] * wp[b]
        power = rel * k_power
        rels.append(rel)
        powers.append((power, power * 1.12))
        regresses.append((1 - wq[b]) * (1 - wp[b]) * k_regress)
        pen = 0.0
        g = floor - wq[b]
        pen += 22 * (g if g > 0 else 0)
        g = 0.58 - wp[b]
        pen += 12 * (g if g > 0 else 0)
        pens.append(pen)
        weak.append(not _REVIEW_STRENGTHS.intersection(workers[b].strengths))
    stage2: dict[tuple[int, int], tuple[float, float, float, float, int, bool]] = {}
    for a in range(n):
        qa, pa, ca, la, ga, wqa = q1[a], p1[a], credit[a], lat[a], group[a], wq[a]
        for b in range(n):
            if b == a:
                continue
            c2 = 0.0 + ca
            c2 += credit[b]
            l2 = 0 + la + lat[b]
            independent = group[b] != ga
            q, p = qa, pa
            rel = rels[b]
            power = powers[b][independent]
            regress = regresses[b]
            x = q + (1 - q) * power - q * regress
            x = x if x < 1.0 else 1.0
            y = p + (1 - p) * rel * k_pass - 0.5 * p * regress
            y = y if y < 1.0 else 1.0
            q, p = (x if x > 0.0 else 0.0), (y if y > 0.0 else 0.0)
            pen = pens[b]
            g = wqa - wq[b] - 0.18
            pen += 9 * (g if g > 0 else 0)
            if weak[b]:
                pen += 2.5
            stage2[(a, b)] = (q, p, pen, c2, l2, independent)
            c = round(c2, 3)
            if c <= cap and l2 <= max_lat:
                consider(1, (a, b, -1), c, l2, independent, q, p, pen)
    if max_calls < 3:
        return _result(best, task, constraints, ids)
    # stage 3, per triple: the synthesis block of `outcome` and the finalizer's penalties
    k_synth = 0.20 + 0.24 * cx + 0.16 * amb
    fqs: list[float] = []
    fits: list[bool] = []
    spows: list[float] = []  # per finalizer: its synthesis power, 0.42 x fq and 0.38 x pass
    fq42: list[float] = []
    wp38: list[float] = []
    for f in range(n):
        fit = bool(_FINAL_STRENGTHS.intersection(workers[f].strengths))
        x = wq[f] - 0.10 * d + (0.035 if fit else -0.025)
        x = x if x < 0.995 else 0.995
        fq = x if x > 0.05 else 0.05
        fqs.append(fq)
        fits.append(fit)
        spows.append(fq * wp[f] * k_synth)
        fq42.append(0.42 * fq)
        wp38.append(0.38 * wp[f])
    for (a, b), (q2, p2, pen2, c2, l2, independent) in stage2.items():
        wqa, wqb, wpa, wpb = wq[a], wq[b], wp[a], wp[b]
        rest = 1 - q2
        p62 = 0.62 * p2
        for f in range(n):
            if f in (a, b):
                continue
            c3 = c2 + credit[f]
            c = round(c3, 3)
            l3 = l2 + lat[f]
            if c > cap or l3 > max_lat:
                continue
            x = q2 + rest * spows[f]
            x = x if x < 1.0 else 1.0
            x = 0.58 * (x if x > 0.0 else 0.0) + fq42[f]
            x = x if x < 1.0 else 1.0
            y = p62 + wp38[f]
            y = y if y < 1.0 else 1.0
            pen = pen2
            g = max(wqa, wqb, wq[f]) - wq[f]
            pen += 34 * (g if g > 0 else 0)
            g = max(wpa, wpb, wp[f]) - wp[f] - 0.08
            pen += 14 * (g if g > 0 else 0)
            if not fits[f]:
                pen += 3.0
            q, p = (x if x > 0.0 else 0.0), (y if y > 0.0 else 0.0)
            consider(2, (a, b, f), c, l3, independent, q, p, pen)
    return _result(best, task, constraints, ids)


def _result(best: _Best, task: TaskProfile, constraints: Constraints, ids: list[str]) -> Plan:
    if best.roles is None:
        raise NoFeasiblePlan("no plan satisfies max_calls, max_credits and max_latency_ms")
    a, b, f = best.roles
    depth = 0 if b < 0 else 1 if f < 0 else 2
    return _plan(
        task,
        constraints,
        POLICY_OF[depth],
        (ids[a], ids[b] if b >= 0 else None, ids[f] if f >= 0 else None),
        best,
    )


def _plan(
    task: TaskProfile,
    constraints: Constraints,
    policy: Policy,
    roles: tuple[str, str | None, str | None],
    best: _Best,
) -> Plan:
    q, credits, latency, independent = best.q, best.credits, best.latency, best.independent
    codes: set[str] = set()  # `search.reason_codes`, on the chosen plan only
    if task.risk >= 0.72 or task.consequence >= 0.78:
        codes.add("high_consequence")
    if task.evidence_need >= 0.65:
        codes.add("independent_evidence")
    if task.complexity >= 0.72 or task.ambiguity >= 0.72:
        codes.add("complex_task")
    if credits >= 0.82 * constraints.max_credits:
        codes.add("credit_constrained")
    if latency >= 0.82 * constraints.max_latency_ms:
        codes.add("latency_constrained")
    if q < constraints.minimum_quality:
        codes.add("best_feasible_below_target")
    if policy == "lean" and not codes:
        codes.add("single_call_sufficient")
    if independent:
        codes.add("independent_verification")
    writer, reviewer, finalizer = roles
    return Plan(
        policy=policy,
        writer=writer,
        reviewer=reviewer,
        finalizer=finalizer,
        max_calls=POLICY_CALLS[policy],
        max_credits=constraints.max_credits,
        max_latency_ms=constraints.max_latency_ms,
        estimated_credits=credits,
        estimated_latency_ms=latency,
        estimated_quality=q,
        estimated_pass_rate=best.p,
        independent_verification=independent,
        access=_ACCESS[policy],
        reason_codes=tuple(sorted(codes)[:MAX_REASON_CODES]),
    )
