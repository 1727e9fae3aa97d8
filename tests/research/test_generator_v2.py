"""The default generator run reproduces the published `loom-conductor-v2` corpus byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from loomc.conductor.plan import Constraints, Plan, TaskProfile, WorkerProfile
from loomc.conductor.prompt_format import build_prompt, extract_first_json
from loomc.conductor.search import SearchPlanner
from loomc.sources import read_jsonl
from loomc_research.v2.generator import generate, write_corpus

PUBLISHED = {
    "train.jsonl": "8e8244bb5ad7034f6d2a5949503526762895072875998662510d5a3a9b269739",
    "validation.jsonl": "b6579587f1123c32b58fe5e55ca9516a5e2d94c47e04a1a84405802dfa4f2795",
    "test.jsonl": "9cd3065a36787ce18042aa8bde7e10b1ccf3acd04093058cf78c77f338c5d049",
}


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("conductor-v2")
    write_corpus(out, generate())
    return out


def test_published_sha256(corpus_dir: Path) -> None:
    for name, digest in PUBLISHED.items():
        assert hashlib.sha256((corpus_dir / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.shared
def test_validation_and_manifest_match_reference(corpus_dir: Path, shared_dir: Path) -> None:
    ref = shared_dir / "reference" / "conductor-v2"
    assert (corpus_dir / "validation.jsonl").read_bytes() == (ref / "validation.jsonl").read_bytes()
    assert (corpus_dir / "manifest.json").read_bytes() == (ref / "manifest.json").read_bytes()


@pytest.mark.shared
def test_search_planner_matches_every_validation_label(shared_dir: Path) -> None:
    rows = read_jsonl(shared_dir / "reference" / "conductor-v2" / "validation.jsonl")
    planner = SearchPlanner()
    for row in rows:
        task = TaskProfile.from_dict(row["task"])
        workers = [WorkerProfile.from_dict(w) for w in row["workers"]]
        constraints = Constraints.from_dict(row["constraints"])
        assert build_prompt(task, constraints, workers) == row["prompt"]
        assert planner.plan(task, workers, constraints).to_json() == row["target"], row["id"]


def test_extract_first_json_skips_non_objects() -> None:
    assert extract_first_json('```json\n[1] {"policy": "lean"} {"x": 2}') == {"policy": "lean"}
    assert extract_first_json("no json {here") is None


def test_plan_from_json_rejects_with_reason() -> None:
    from loomc.conductor.plan import PlanParseError

    with pytest.raises(PlanParseError) as err:
        Plan.from_json("not json")
    assert err.value.reason == "invalid_json"
    with pytest.raises(PlanParseError) as err:
        Plan.from_json('{"policy": "lean"}')
    assert err.value.reason == "missing_key"
