"""CPU planning latency per decision of the `search` planner and the deterministic router on v2
validation rows, the way `loomc conductor predict` calls them (row JSON → profiles → plan →
canonical JSON), against a baseline measured in the same run: `json.loads` of the same row lines.
Rows: ../shared/reference/conductor-v2/validation.jsonl when present, else 120 freshly generated
validation-family rows. Run: pytest benchmarks/bench_planners.py --benchmark-only -s"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loomc.conductor.plan import Constraints, TaskProfile, WorkerProfile
from loomc.conductor.search import SearchPlanner
from loomc_research.corpus_io import row_json
from loomc_research.v2.router import DeterministicRouter

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LOOMC_SHARED", ROOT.parent / "shared"))
DATA = SHARED / "reference" / "conductor-v2" / "validation.jsonl"
ROWS = 300


@pytest.fixture(scope="module")
def lines() -> list[str]:
    if DATA.is_file():
        return DATA.read_text(encoding="utf-8").splitlines()[:ROWS]
    from loomc_research.v2.generator import generate

    return [row_json(r) for r in generate(sizes=(("validation", 120),)).splits["validation"]]


def _decide(planner: Any) -> Callable[[str], str]:
    def decide(line: str) -> str:
        row = json.loads(line)
        plan = planner.plan(
            TaskProfile.from_dict(row["task"]),
            [WorkerProfile.from_dict(w) for w in row["workers"]],
            Constraints.from_dict(row["constraints"]),
        )
        return str(plan.to_json())

    return decide


def _per_decision_ms(fn: Callable[[str], Any], lines: list[str], repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for line in lines:
            fn(line)
        best = min(best, time.perf_counter() - start)
    return best * 1000 / len(lines)


PLANNERS: dict[str, Callable[[], Callable[[str], Any]]] = {
    "baseline_json_loads": lambda: json.loads,
    "router": lambda: _decide(DeterministicRouter()),
    "search": lambda: _decide(SearchPlanner()),
}


@pytest.mark.parametrize("name", list(PLANNERS))
def test_planning_latency_per_decision(benchmark, lines: list[str], name: str) -> None:  # type: ignore[no-untyped-def]
    decide = PLANNERS[name]()
    baseline_ms = _per_decision_ms(json.loads, lines)

    def run_all() -> None:
        for line in lines:
            decide(line)

    benchmark.pedantic(run_all, rounds=5, iterations=1, warmup_rounds=1)
    per_decision_ms = benchmark.stats.stats.min * 1000 / len(lines)
    benchmark.extra_info.update(
        rows=len(lines),
        per_decision_ms=per_decision_ms,
        baseline_json_loads_ms=baseline_ms,
        ratio_to_baseline=per_decision_ms / baseline_ms,
    )
    print(
        f"\n{name}: {per_decision_ms * 1000:.1f} µs/decision over {len(lines)} rows; "
        f"json.loads baseline {baseline_ms * 1000:.1f} µs ({per_decision_ms / baseline_ms:.1f}x)"
    )
