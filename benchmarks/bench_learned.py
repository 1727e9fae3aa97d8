"""CPU planning latency per decision of the learned planner (tiny random 2-layer Llama + LoRA,
greedy, up to 160 new tokens = the longest v2 target incl. EOS) at batch 1 and 8, against the
search planner (`loomc conductor predict --planner search`) on the same v2 validation rows,
measured in the same run. The tiny model rarely emits EOS, so it decodes the full 160 tokens:
this measures the decoding loop's overhead per decision, not a 14 B model's compute.
Run: pytest benchmarks/bench_learned.py --benchmark-only -s
(needs the conductor extra and ../shared reference data; skipped without them)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from tinymodel import attach_random_lora, build_tiny_model  # noqa: E402

from loomc.conductor.learned import LearnedPlanner  # noqa: E402
from loomc.conductor.plan import Constraints, TaskProfile, WorkerProfile  # noqa: E402
from loomc.conductor.search import SearchPlanner  # noqa: E402
from loomc.sources import read_jsonl  # noqa: E402

SHARED = Path(os.environ.get("LOOMC_SHARED", ROOT.parent / "shared"))
DATA = SHARED / "reference" / "conductor-v2" / "validation.jsonl"
MAX_NEW_TOKENS = 160
ROWS = 8


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    if not DATA.is_file():
        pytest.skip(f"reference data not found at {DATA}")
    return read_jsonl(DATA)[:ROWS]


@pytest.fixture(scope="module")
def planner(tmp_path_factory: pytest.TempPathFactory) -> LearnedPlanner:
    root = tmp_path_factory.mktemp("bench-learned")
    base = build_tiny_model(root / "base")
    adapter = attach_random_lora(base, root / "adapter")
    lp = LearnedPlanner(base, adapter, device="cpu", dtype="float32", max_new_tokens=MAX_NEW_TOKENS)
    lp.generate(["warm up"], 1)
    return lp


def _search_per_decision_ms(rows: list[dict[str, Any]], repeats: int = 20) -> float:
    """The baseline, the way `loomc conductor predict --planner search` calls it."""
    search = SearchPlanner()
    args = [
        (
            TaskProfile.from_dict(r["task"]),
            [WorkerProfile.from_dict(w) for w in r["workers"]],
            Constraints.from_dict(r["constraints"]),
        )
        for r in rows
    ]
    started = time.perf_counter()
    for _ in range(repeats):
        for a in args:
            search.plan(*a).to_json()
    return (time.perf_counter() - started) * 1000 / (repeats * len(args))


@pytest.mark.parametrize("batch", [1, 8])
def test_learned_planner_per_decision(
    benchmark,
    planner: LearnedPlanner,  # type: ignore[no-untyped-def]
    rows: list[dict[str, Any]],
    batch: int,
) -> None:
    prompts = [r["prompt"] for r in rows[:batch]]
    benchmark.group = "per decision"
    result = benchmark.pedantic(
        planner.generate_detailed, args=(prompts, batch), rounds=3, iterations=1, warmup_rounds=1
    )
    per_decision_ms = benchmark.stats.stats.mean * 1000 / batch
    baseline_ms = _search_per_decision_ms(rows)
    tokens = sum(g.output_tokens for g in result) / len(result)
    benchmark.extra_info.update(
        {
            "batch": batch,
            "per_decision_ms": round(per_decision_ms, 3),
            "mean_output_tokens": tokens,
            "search_per_decision_ms": round(baseline_ms, 4),
            "slowdown_vs_search": round(per_decision_ms / baseline_ms, 1),
        }
    )
    print(
        f"\nlearned batch {batch}: {per_decision_ms:.1f} ms/decision ({tokens:.0f} tokens), "
        f"search: {baseline_ms:.3f} ms/decision, ratio {per_decision_ms / baseline_ms:.0f}x"
    )


def test_search_planner_per_decision(benchmark, rows: list[dict[str, Any]]) -> None:  # type: ignore[no-untyped-def]
    search = SearchPlanner()
    r = rows[0]
    args = (
        TaskProfile.from_dict(r["task"]),
        [WorkerProfile.from_dict(w) for w in r["workers"]],
        Constraints.from_dict(r["constraints"]),
    )
    benchmark.group = "per decision"
    benchmark(lambda: search.plan(*args).to_json())
