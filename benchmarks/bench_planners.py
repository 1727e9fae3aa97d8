"""CPU cost per decision of the `search` planner, before and after its fast path, in one run.

What `loomc conductor predict --planner search` does per row, in-process, on v2 validation rows:
profiles → plan → canonical JSON. Arms, alternated in shuffled order with the median of the
repeats taken (so they hold while others use the CPU), timed with `time.process_time`:

* `search` — `SearchPlanner().plan(...)` (the fast path, `loomc.conductor.fastsearch`);
* `search_reference` — the code before it: `select` + `Plan.from_json` (still the oracle);
* `router` — the research deterministic router, for scale;
* `json_loads` — `json.loads` of the same row lines: the floor any per-row work sits on.

Every figure is µs per decision on parsed profiles (row parsing is the `row_parse` arm, shared
by all planners). Rows: ../shared/reference/conductor-v2/validation.jsonl when present, else 300
freshly generated validation rows. Run:

    PYTHONPATH=.:research python benchmarks/bench_planners.py
    pytest benchmarks/bench_planners.py -p no:cacheprovider -s   # same, and asserts the goal
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loomc.conductor.plan import Constraints, Plan, TaskProfile, WorkerProfile
from loomc.conductor.search import SearchPlanner, select
from loomc_research.corpus_io import row_json
from loomc_research.v2.router import DeterministicRouter

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LOOMC_SHARED", ROOT.parent / "shared"))
DATA = SHARED / "reference" / "conductor-v2" / "validation.jsonl"
ROWS = 300
REPEATS = 15
GOAL_US = 100.0

Parsed = tuple[TaskProfile, list[WorkerProfile], Constraints]


def load_lines() -> list[str]:
    if DATA.is_file():
        return DATA.read_text(encoding="utf-8").splitlines()[:ROWS]
    from loomc_research.v2.generator import generate

    return [row_json(r) for r in generate(sizes=(("validation", ROWS),)).splits["validation"]]


def parse(line: str) -> Parsed:
    row = json.loads(line)
    return (
        TaskProfile.from_dict(row["task"]),
        [WorkerProfile.from_dict(w) for w in row["workers"]],
        Constraints.from_dict(row["constraints"]),
    )


def _reference(task: TaskProfile, workers: list[WorkerProfile], c: Constraints) -> Plan:
    return Plan.from_json(select(task, c, workers).label)


def arms(lines: list[str]) -> dict[str, Callable[[], Any]]:
    parsed = [parse(line) for line in lines]
    search, router = SearchPlanner(), DeterministicRouter()

    def planner(plan: Callable[[TaskProfile, list[WorkerProfile], Constraints], Plan]) -> Any:
        def run() -> None:
            for task, workers, constraints in parsed:
                plan(task, workers, constraints).to_json()

        return run

    def loads() -> None:
        for line in lines:
            json.loads(line)

    def row_parse() -> None:
        for line in lines:
            parse(line)

    return {
        "search": planner(search.plan),
        "search_reference": planner(_reference),
        "router": planner(router.plan),
        "json_loads": loads,
        "row_parse": row_parse,
    }


def measure(lines: list[str], repeats: int = REPEATS) -> dict[str, float]:
    """Median µs per decision of each arm, arms interleaved in a fresh shuffle each repeat."""
    todo = arms(lines)
    samples: dict[str, list[float]] = {name: [] for name in todo}
    order = list(todo)
    rng = random.Random(0)
    for _ in range(repeats):
        rng.shuffle(order)
        for name in order:
            start = time.process_time()
            todo[name]()
            samples[name].append((time.process_time() - start) * 1e6 / len(lines))
    return {name: statistics.median(v) for name, v in samples.items()}


def report(result: dict[str, float], rows: int) -> str:
    ratio = result["search_reference"] / result["search"]
    lines = [f"{name}: {us:.1f} µs/decision" for name, us in result.items()]
    lines.append(
        f"search fast path {ratio:.2f}x faster than the reference over {rows} rows "
        f"(goal ≤ {GOAL_US:.0f} µs per decision)"
    )
    return "\n".join(lines)


def test_search_planner_per_decision() -> None:
    lines = load_lines()
    result = measure(lines)
    print("\n" + report(result, len(lines)))
    # a loaded machine moves both arms; the ratio, measured in one run, holds
    assert result["search"] < result["search_reference"] / 2


if __name__ == "__main__":
    rows = load_lines()
    print(report(measure(rows), len(rows)))
