"""§5.7 paired statistics: Wilson intervals, the bootstrap seed/index rule, exact McNemar."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from loomc_research.v2.stats import (
    STAT_FIELDS,
    bootstrap,
    bootstrap_seed,
    mcnemar,
    paired_statistics,
    wilson,
)


def test_wilson_published_examples() -> None:
    assert wilson(1127, 1200) == [0.924191, 0.95134]  # deterministic policy 0.939167
    assert wilson(1090, 1200) == [0.890678, 0.923382]  # guarded exact plan 0.908333


def test_wilson_formula_and_clipping() -> None:
    z = 1.959963984540054
    n, k = 50, 10
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson(k, n) == [round(centre - half, 6), round(centre + half, 6)]
    assert wilson(0, 1200)[0] == 0.0 and wilson(1200, 1200)[1] == 1.0
    assert wilson(1200, 1200) == [0.996809, 1.0]
    with pytest.raises(ValueError):
        wilson(0, 0)


def test_seed_rule() -> None:
    assert bootstrap_seed("trained_vs_deterministic", "exact_plan") == 20264333
    assert bootstrap_seed("trained_vs_base", "regret") == 20260716 + sum(
        map(ord, "trained_vs_baseregret")
    )


def test_mcnemar() -> None:
    assert mcnemar(10, 0) == 0.001953125
    assert round(mcnemar(10, 0), 6) == 0.001953  # the published p=0.001953
    assert mcnemar(0, 10) == mcnemar(10, 0)
    assert mcnemar(0, 0) == 1.0
    assert mcnemar(5, 5) == 1.0  # capped at 1
    assert mcnemar(0, 73) == 0.0  # 2 / 2**73 rounds away at 12 dp
    assert mcnemar(1, 3) == round(2 * (1 + 4) / 16, 12)


def _reference_bootstrap(left: list[float], right: list[float], seed: int, it: int) -> list[float]:
    """The rule spelled out in §5.7, independently of the module."""
    d = [r - lf for lf, r in zip(left, right, strict=True)]
    rng = random.Random(seed)
    n = len(d)
    means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(it))
    return [
        round(means[math.floor(0.025 * (it - 1))], 6),
        round(means[math.floor(0.975 * (it - 1))], 6),
    ]


def test_bootstrap_matches_rule_and_is_deterministic() -> None:
    rng = random.Random(7)
    left = [float(rng.random() < 0.6) for _ in range(300)]
    right = [float(rng.random() < 0.8) for _ in range(300)]
    seed = bootstrap_seed("trained_vs_deterministic", "exact_plan")
    a = bootstrap(left, right, seed, 500)
    assert a == bootstrap(left, right, seed, 500)
    assert a == bootstrap(left, right, seed, 500, use_numpy=False)
    assert a["ci95"] == _reference_bootstrap(left, right, seed, 500)
    assert a["left_mean"] == round(sum(left) / 300, 6)
    assert a["right_mean"] == round(sum(right) / 300, 6)
    assert a["right_minus_left"] == round((sum(right) - sum(left)) / 300, 6)
    assert (a["iterations"], a["seed"]) == (500, 20264333)


def test_bootstrap_float_values_match_python_loop() -> None:
    rng = random.Random(11)
    left = [rng.random() * 3 for _ in range(97)]
    right = [rng.random() * 1000 if rng.random() < 0.02 else rng.random() for _ in range(97)]
    fast = bootstrap(left, right, 123, 400)
    assert fast == bootstrap(left, right, 123, 400, use_numpy=False)
    assert fast["ci95"] == _reference_bootstrap(left, right, 123, 400)


def _lane(ids: list[str], **flags: Any) -> dict[str, dict[str, Any]]:
    out = {}
    for i, ident in enumerate(ids):
        rec: dict[str, Any] = {"id": ident, "unsafe_under_escalation": False, "utility_regret": 1.0}
        rec.update({f: True for f in STAT_FIELDS})
        for key, fn in flags.items():
            rec[key] = fn(i)
        out[ident] = rec
    return out


def test_paired_statistics_document() -> None:
    ids = [f"r{i:03d}" for i in range(40)]
    lanes = {
        "deterministic": _lane(
            ids,
            exact_plan=lambda i: i >= 10,
            utility_regret=lambda i: 2.0,
            unsafe_under_escalation=lambda i: i < 4,
        ),
        "base": _lane(
            [*ids, "extra"],
            json_valid=lambda i: False,
            exact_plan=lambda i: False,
            utility_regret=lambda i: 1000.0,
        ),
        "trained": _lane(ids, utility_regret=lambda i: 0.5),
    }
    doc = paired_statistics(
        lanes, {"deterministic": "d", "base": "b", "trained": "t"}, iterations=200
    )
    assert doc["examples"] == 40 and doc["paired_by_example_id"] is True
    assert doc["bootstrap_iterations"] == 200 and doc["seed"] == 20260716
    assert doc["input_sha256"] == {"deterministic": "d", "base": "b", "trained": "t"}
    assert doc["lane_intervals"]["deterministic"]["exact_plan"]["rate"] == 0.75
    assert doc["lane_intervals"]["deterministic"]["exact_plan"]["wilson95"] == wilson(30, 40)
    vs_det = doc["comparisons"]["trained_vs_deterministic"]
    assert vs_det["exact_plan"]["mcnemar"] == {
        "baseline_only": 0,
        "trained_only": 10,
        "p_value": mcnemar(0, 10),
    }
    assert vs_det["exact_plan"]["right_minus_left"] == 0.25
    assert vs_det["exact_plan"]["seed"] == 20264333
    assert vs_det["json_valid"]["ci95"] == [0.0, 0.0]
    assert vs_det["json_valid"]["mcnemar"]["p_value"] == 1.0
    regret = vs_det["utility_regret_reduction"]
    assert (regret["left_mean"], regret["right_mean"], regret["right_minus_left"]) == (
        0.5,
        2.0,
        1.5,
    )
    assert regret["seed"] == bootstrap_seed("trained_vs_deterministic", "regret")
    unsafe = vs_det["unsafe_under_escalation_reduction"]
    assert unsafe["right_minus_left"] == 0.1 and unsafe["left_mean"] == 0.0
    vs_base = doc["comparisons"]["trained_vs_base"]
    assert vs_base["utility_regret_reduction"]["right_minus_left"] == 999.5
    assert vs_base["json_valid"]["mcnemar"]["trained_only"] == 40


def test_paired_statistics_requires_every_trained_id() -> None:
    ids = [f"r{i}" for i in range(5)]
    lanes = {"deterministic": _lane(ids[:4]), "base": _lane(ids), "trained": _lane(ids)}
    with pytest.raises(ValueError, match="fewer than the 5 trained"):
        paired_statistics(lanes, iterations=10)
