"""`loom-conductor-v3` removes the v2 leaks, and a learned planner has something to learn."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from loomc.conductor.plan import Constraints, Plan, WorkerProfile
from loomc.conductor.search import SearchPlanner
from loomc_research.ranker import RankerPlanner
from loomc_research.v3.compare import DeepestFeasible, evaluate
from loomc_research.v3.generator import generate


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[dict[str, Any]]]:
    return generate(sizes={"train": 1500, "test": 400})


def test_generation_is_deterministic_and_keeps_the_v2_row_format(
    corpus: dict[str, list[dict[str, Any]]],
) -> None:
    again = generate(sizes={"train": 1500, "test": 400})
    assert again["test"] == corpus["test"]
    row = corpus["test"][0]
    assert row["schema_version"] == "loom-conductor-v3"
    assert set(row) == {
        "constraints",
        "family",
        "id",
        "label",
        "oracle",
        "prompt",
        "schema_version",
        "source",
        "split",
        "target",
        "task",
        "workers",
    }
    Plan.from_json(row["target"], worker_ids=[w["id"] for w in row["workers"]])
    assert len({r["id"] for r in corpus["train"] + corpus["test"]}) == 1900


def test_the_v2_leaks_are_gone(corpus: dict[str, list[dict[str, Any]]]) -> None:
    test = corpus["test"]
    # 1. the deepest feasible policy no longer is the label (100% on v2)
    leak = evaluate(DeepestFeasible(), test)
    assert leak["policy_accuracy"] < 0.85
    # 2. providers are shared: some escalated labels are not independent
    escalated = [r["label"] for r in test if r["label"]["policy"] != "lean"]
    assert Counter(lab["independent_verification"] for lab in escalated)[False] >= 10

    # 3. price bands overlap: the cheapest worker is sometimes the best one
    def cheapest_is_best(row: dict[str, Any]) -> bool:
        ws = [WorkerProfile.from_dict(w) for w in row["workers"]]
        return min(ws, key=lambda w: w.credits_per_call) is max(ws, key=lambda w: w.quality)

    assert sum(cheapest_is_best(r) for r in test) >= 20
    # 4. every label policy occurs, and constraints do not encode it one to one
    assert set(Counter(r["label"]["policy"] for r in test)) == {"lean", "balanced", "strict"}
    calls3 = [r for r in test if Constraints.from_dict(r["constraints"]).max_calls == 3]
    assert len({r["label"]["policy"] for r in calls3}) == 3


def test_search_is_no_longer_exact_and_learning_helps(
    corpus: dict[str, list[dict[str, Any]]],
) -> None:
    search = evaluate(SearchPlanner(), corpus["test"])
    assert search["exact_plan"] < 0.8 and search["mean_expected_regret"] > 0.3
    ranker = RankerPlanner().fit(corpus["train"])
    learned = evaluate(ranker, corpus["test"])
    assert learned["hard_budgets_met"] == 1.0
    assert learned["mean_expected_regret"] < search["mean_expected_regret"] / 2
    assert learned["exact_plan"] > search["exact_plan"]


def test_ranker_round_trips(tmp_path: Path, corpus: dict[str, list[dict[str, Any]]]) -> None:
    ranker = RankerPlanner().fit(corpus["train"][:300], epochs=50)
    path = tmp_path / "ranker.json"
    ranker.save(path)
    loaded = RankerPlanner.load(path)
    assert loaded.weights == ranker.weights
    rows = corpus["test"][:50]
    assert evaluate(loaded, rows)["exact_plan"] == evaluate(ranker, rows)["exact_plan"]


def test_cli_writes_the_v3_corpus_deterministically(tmp_path: Path) -> None:
    from loomc.cli.main import main

    for name in ("a", "b"):
        assert main(["conductor", "generate", "--corpus", "v3", "--out", str(tmp_path / name)]) == 0
    texts = [(tmp_path / n / "test.jsonl").read_text() for n in ("a", "b")]
    assert texts[0] == texts[1] and len(texts[0].splitlines()) == 1200
    assert (
        main(
            [
                "conductor",
                "generate",
                "--corpus",
                "v3",
                "--anchors",
                "x.json",
                "--out",
                str(tmp_path / "c"),
            ]
        )
        == 1
    )
