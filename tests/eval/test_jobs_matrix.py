"""The eval's matrix of jobs is built as it is read (``loomc.eval.plan.Jobs``), not held as a
list of 100,000 ``Job`` objects: it must read exactly as the list it replaced, in the same
order, by index, by slice and less the cells a budget left unplanned; and an eval planned
that way still honours ``limit``, the strategies' order and the iterations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loomc
from loomc.eval.dataset import Case
from loomc.eval.plan import Job, Jobs
from loomc.eval.strategies import parse_strategies
from loomc.ir.model import Pipeline

ROOT = Path(__file__).resolve().parents[2]
STRATEGIES = parse_strategies("baseline,fixed,lean,balanced")


def _eager(rows: list[tuple[Case, Any, Any, Any]], iterations: int) -> list[Job]:
    """The list ``plan_jobs`` returned before: case, then strategy, then iteration."""
    return [Job(c, s, it, p, b) for c, s, p, b in rows for it in range(iterations)]


@st.composite
def matrices(draw: st.DrawFn) -> tuple[list[tuple[Case, Any, Any, Any]], int]:
    cases = [Case(id=f"c{i}", prompt=f"p{i}") for i in range(draw(st.integers(0, 5)))]
    strategies = draw(st.lists(st.sampled_from(STRATEGIES), min_size=1, max_size=4, unique=True))
    pipelines = {s.name: cast(Pipeline, f"pipeline-{s.name}") for s in strategies}  # opaque here
    rows = [
        (c, s, pipelines[s.name], draw(st.none() | st.just("bound")))
        for c in cases
        for s in strategies
    ]
    return rows, draw(st.integers(1, 4))


@settings(max_examples=200, deadline=None)
@given(matrices(), st.data())
def test_jobs_read_as_the_eager_list(matrix: tuple[list[Any], int], data: st.DataObject) -> None:
    rows, iterations = matrix
    jobs, eager = Jobs(rows, iterations), _eager(rows, iterations)
    assert len(jobs) == len(eager)
    assert list(jobs) == eager
    assert [jobs[i] for i in range(-len(eager), len(eager))] == eager + eager
    start = data.draw(st.integers(-8, 8) | st.none())
    stop = data.draw(st.integers(-8, 8) | st.none())
    step = data.draw(st.sampled_from([None, 1, 2, -1, -3]))
    assert jobs[start:stop:step] == eager[start:stop:step]
    for bad in (len(eager), -len(eager) - 1):
        with pytest.raises(IndexError):
            jobs[bad]
    cells = {(c.id, s.name) for c, s, _, _ in rows}
    gone = set(data.draw(st.lists(st.sampled_from(sorted(cells)), unique=True))) if cells else set()
    kept = jobs.without(gone)
    assert list(kept) == [j for j in eager if (j.case.id, j.strategy.name) not in gone]
    assert len(kept) == len(eager) - len(gone) * iterations


def _dataset(tmp: Path, cases: int) -> Path:
    path = tmp / "cases.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"c{i}", "prompt": f"Colours {i}."}) + "\n" for i in range(cases))
    )
    return path


def test_a_planned_eval_keeps_limit_order_and_iterations(tmp_path: Path) -> None:
    ev = loomc.prepare_eval(
        _dataset(tmp_path, 7), "lean,baseline", project=ROOT, iterations=3, limit=4, concurrency=2
    )
    assert isinstance(ev.jobs, Jobs)
    want = [(f"c{c}", s, it) for c in range(4) for s in ("lean", "baseline") for it in range(3)]
    assert [job.key for job in ev.jobs] == want
    # every run of a (pipeline, tier) shares its one compiled pipeline, as the list's jobs did
    assert len({id(job.pipeline) for job in ev.jobs}) == 2
    receipt = ev.run(journal=tmp_path / "journal.jsonl")
    assert [(r.case_id, r.strategy, r.iteration) for r in receipt.runs] == want
    # a resume from the journal finds every cell done and runs nothing again
    journal = (tmp_path / "journal.jsonl").read_text()
    again = ev.run(journal=tmp_path / "journal.jsonl", resume=True)
    assert (tmp_path / "journal.jsonl").read_text() == journal  # no call reserved, no line
    assert [(r.case_id, r.strategy, r.iteration) for r in again.runs] == want
    assert again.totals["calls"] == receipt.totals["calls"]
