"""Planning an eval before anything is spent: the matrix of jobs (every pipeline x tier compiled
once) and its pre-flight worst case, judge calls and a served planner's own calls included.

A ``conductor:`` cell whose planner is only asked once the eval starts (the learned planner: a
dry run sends nothing) runs a job whose ``bound`` is the most any plan the guard can accept may
spend (``loomc.conductor.cost.plan_bound``); the pre-flight counts that bound, and the planner's
calls (``PlannerCost``: one call per case, each at its prompt plus the decode cap)."""

from __future__ import annotations

import json
from collections.abc import Container, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import overload

from loomc.checker.worstcase import WorstCase, worst_case
from loomc.eval.dataset import Case
from loomc.eval.journal import Cell, case_hash
from loomc.eval.judge import JudgeSpec
from loomc.eval.judge import worst_case as judge_worst_case
from loomc.eval.strategies import Strategy
from loomc.ir.model import Pipeline
from loomc.project import Project


@dataclass(frozen=True, slots=True)  # built per run as the matrix is read (``Jobs``)
class Job:
    case: Case
    strategy: Strategy
    iteration: int
    pipeline: Pipeline
    bound: WorstCase | None = None  # a conductor cell not planned yet: what the pre-flight counts

    @property
    def key(self) -> Cell:
        return (self.case.id, self.strategy.name, self.iteration)

    @property
    def case_hash(self) -> str:
        return case_hash(self.case, self.pipeline.key)


# one (case, strategy) cell of the matrix: everything its iterations' jobs share
_Row = tuple[Case, Strategy, Pipeline, WorstCase | None]


class Jobs(Sequence[Job]):
    """The jobs of the matrix, case by case, strategy by strategy, iteration by iteration,
    built when read. Why not a list: 100,000 planned ``Job`` objects held ~8 MiB for the
    whole eval (its peak RSS, issue 16), while a job is five references the (case, strategy)
    row already holds, plus its iteration. Equal jobs compare equal, so a caller sees the
    same sequence as a list of them."""

    __slots__ = ("iterations", "rows")

    def __init__(self, rows: Sequence[_Row], iterations: int) -> None:
        self.rows = list(rows)
        self.iterations = iterations

    def __len__(self) -> int:
        return len(self.rows) * self.iterations

    @overload
    def __getitem__(self, position: int) -> Job: ...

    @overload
    def __getitem__(self, position: slice) -> list[Job]: ...

    def __getitem__(self, position: int | slice) -> Job | list[Job]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError("job index out of range")
        row, iteration = divmod(position, self.iterations)
        case, strategy, pipeline, bound = self.rows[row]
        return Job(case, strategy, iteration, pipeline, bound)

    def __iter__(self) -> Iterator[Job]:
        for case, strategy, pipeline, bound in self.rows:
            for iteration in range(self.iterations):
                yield Job(case, strategy, iteration, pipeline, bound)

    def without(self, cells: Container[tuple[str, str]]) -> Jobs:
        """These jobs less every (case id, strategy) cell in ``cells``, in the same order."""
        return Jobs([r for r in self.rows if (r[0].id, r[1].name) not in cells], self.iterations)

    def __repr__(self) -> str:
        return f"<Jobs: {len(self.rows)} cell(s) x {self.iterations} iteration(s)>"


def plan_jobs(
    project: Project,
    cases: Sequence[Case],
    strategies: Sequence[Strategy],
    iterations: int,
    planned: Mapping[tuple[str, str], Pipeline] | None = None,
    bounds: Mapping[tuple[str, str], tuple[Pipeline, WorstCase]] | None = None,
) -> Jobs:
    """Compile every (pipeline, tier) once; raises DiagnosticError before any call.
    ``planned`` holds the checked plan of each (case id, conductor strategy), ``bounds`` the
    stand-in pipeline and worst case of each conductor cell not planned yet."""
    compiled: dict[tuple[str, str | None], Pipeline] = {}
    rows: list[_Row] = []
    for case in cases:
        for strategy in strategies:
            bound: WorstCase | None = None
            if strategy.planner is not None:
                cell = (case.id, strategy.name)
                if planned is not None and cell in planned:
                    pipeline = planned[cell]
                else:
                    pipeline, bound = (bounds or {})[cell]
            else:
                key = (strategy.pipeline_for(case.pipeline), strategy.tier)
                if key not in compiled:
                    compiled[key] = project.compile(*key)
                pipeline = compiled[key]
            rows.append((case, strategy, pipeline, bound))
    return Jobs(rows, iterations)


@dataclass(frozen=True)
class PlannerCost:
    """The worst case of one conductor strategy's planner calls (a served planner: one call per
    case not planned yet); ``cost`` None when the policy does not price its model."""

    strategy: str
    model: str
    calls: int
    tokens: int
    credits: Decimal
    cost: Decimal | None


@dataclass
class Estimate:
    per_strategy: dict[str, dict[str, object]]
    total_calls: int  # workflow and judge calls together
    total_tokens: int | None
    total_credits: Decimal
    total_cost: Decimal | None
    judge_calls: int = 0
    judge_tokens: int | None = 0
    judge_credits: Decimal = Decimal(0)
    judge_cost: Decimal | None = Decimal(0)
    planner_calls: int = 0
    planner_tokens: int = 0
    planner_credits: Decimal = Decimal(0)
    planner_cost: Decimal | None = Decimal(0)
    planner_unpriced: tuple[str, ...] = ()  # planner models the policy does not price


def _add_int(a: object, b: int | None) -> int | None:
    return None if a is None or b is None else int(str(a)) + b


def _add_dec(a: object, b: Decimal | None) -> Decimal | None:
    return None if a is None or b is None else Decimal(str(a)) + b


def preflight(
    jobs: Sequence[Job], judge: JudgeSpec | None = None, planners: Sequence[PlannerCost] = ()
) -> Estimate:
    """Worst case of the whole matrix, judge calls (one judging per run) and planner calls
    included."""
    cache: dict[str, WorstCase] = {}
    per: dict[str, dict[str, object]] = {}
    est = Estimate(per, 0, 0, Decimal(0), Decimal(0))
    for job in jobs:
        if job.bound is not None:
            wc = job.bound
        elif job.pipeline.key in cache:
            wc = cache[job.pipeline.key]
        else:
            wc = cache[job.pipeline.key] = worst_case(job.pipeline)
        row = per.setdefault(
            job.strategy.name,
            {"runs": 0, "calls": 0, "tokens": 0, "credits": Decimal(0), "cost": Decimal(0)},
        )
        row["runs"] = int(str(row["runs"])) + 1
        if job.bound is not None:  # not planned yet: the most costly admissible plan
            row["bound"] = True
        row["calls"] = int(str(row["calls"])) + wc.calls
        row["tokens"] = _add_int(row["tokens"], wc.tokens)
        row["credits"] = Decimal(str(row["credits"])) + wc.credits
        row["cost"] = _add_dec(row["cost"], wc.cost)
        est.total_calls += wc.calls
        est.total_credits += wc.credits
        est.total_tokens = _add_int(est.total_tokens, wc.tokens)
        est.total_cost = _add_dec(est.total_cost, wc.cost)
        if judge is None:
            continue
        jc = judge_worst_case(judge, job.pipeline, job.case.rubric)
        row["judge_calls"] = int(str(row.get("judge_calls", 0))) + jc.calls
        est.judge_calls += jc.calls
        est.judge_tokens = _add_int(est.judge_tokens, jc.tokens)
        est.judge_credits += jc.credits
        est.judge_cost = _add_dec(est.judge_cost, jc.cost)
        est.total_calls += jc.calls
        est.total_credits += jc.credits
        est.total_tokens = _add_int(est.total_tokens, jc.tokens)
        est.total_cost = _add_dec(est.total_cost, jc.cost)
    for p in planners:
        row = per.setdefault(
            p.strategy,
            {"runs": 0, "calls": 0, "tokens": 0, "credits": Decimal(0), "cost": Decimal(0)},
        )
        row["planner_calls"] = int(str(row.get("planner_calls", 0))) + p.calls
        est.planner_calls += p.calls
        est.planner_tokens += p.tokens
        est.planner_credits += p.credits
        est.planner_cost = _add_dec(est.planner_cost, p.cost)
        if p.cost is None:
            est.planner_unpriced = tuple(sorted({*est.planner_unpriced, p.model}))
        est.total_calls += p.calls
        est.total_credits += p.credits
        est.total_tokens = _add_int(est.total_tokens, p.tokens)
        est.total_cost = _add_dec(est.total_cost, p.cost)
    return est


def estimate_json(est: Estimate) -> str:
    data: dict[str, object] = {
        "per_strategy": est.per_strategy,
        "total_calls": est.total_calls,
        "total_tokens": est.total_tokens,
        "total_credits": str(est.total_credits),
        "total_cost": None if est.total_cost is None else str(est.total_cost),
        "judge": {
            "calls": est.judge_calls,
            "tokens": est.judge_tokens,
            "credits": str(est.judge_credits),
            "cost": None if est.judge_cost is None else str(est.judge_cost),
        },
    }
    if est.planner_calls:  # a served planner's own calls (included in the totals)
        data["planner"] = {
            "calls": est.planner_calls,
            "tokens": est.planner_tokens,
            "credits": str(est.planner_credits),
            "cost": None if est.planner_cost is None else str(est.planner_cost),
            "unpriced": list(est.planner_unpriced),
        }
    return json.dumps(data, default=str, indent=2)
