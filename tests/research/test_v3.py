"""`loom-conductor-v3` removes the v2 leaks, and a learned planner has something to learn."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from loomc.conductor.plan import Constraints, Plan, WorkerProfile
from loomc.conductor.search import SearchPlanner
from loomc_research.ranker import HIDDEN_EFFECT_FEATURES, RankerPlanner
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


def test_family_holdout_shares_no_family_with_training() -> None:
    corpus = generate(sizes={"train": 300, "test": 120}, holdout="family")
    train = {r["family"] for r in corpus["train"]}
    test = {r["family"] for r in corpus["test"]}
    assert train and test and not train & test
    assert "payment_races" in test and "direct_facts" in train  # v2's own family split
    with pytest.raises(ValueError, match="holdout"):
        generate(sizes={"test": 1}, holdout="task")


def test_ranker_without_hidden_effect_features(
    tmp_path: Path, corpus: dict[str, list[dict[str, Any]]]
) -> None:
    blind = RankerPlanner(without=HIDDEN_EFFECT_FEATURES).fit(corpus["train"][:400], epochs=60)
    assert not set(blind.names) & set(HIDDEN_EFFECT_FEATURES)
    assert len(blind.weights) == len(blind.names) == 24 - len(HIDDEN_EFFECT_FEATURES)
    path = tmp_path / "blind.json"
    blind.save(path)
    loaded = RankerPlanner.load(path)
    assert loaded.names == blind.names and loaded.weights == blind.weights
    rows = corpus["test"][:60]
    assert evaluate(loaded, rows) == {**evaluate(blind, rows), "ms_per_decision": ANY}
    with pytest.raises(ValueError, match="unknown ranker feature"):
        RankerPlanner(without=("psychic",))


def test_report_states_both_rankers_against_search() -> None:
    from loomc_research.v3.compare import RANKER, RANKER_BLIND, compare, section

    results, meta = compare(7, 600, 200, "family")
    text = section("family", results, meta)
    assert RANKER_BLIND in text and f"- {RANKER}: regret" in text
    assert "unsafe under-escalation" in text and "search's" in text
    assert meta["holdout"] == "family" and not set(meta["train_families"]) & set(
        meta["test_families"]
    )
