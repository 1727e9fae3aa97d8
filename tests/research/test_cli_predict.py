"""`loomc conductor predict --planner search` on the v2 validation split: every plan exact."""

from __future__ import annotations

import json
from pathlib import Path

from loomc.cli.main import main


def test_search_predictions_match_every_validation_target(shared_dir: Path, tmp_path: Path) -> None:
    data = shared_dir / "reference" / "conductor-v2" / "validation.jsonl"
    out = tmp_path / "pred.jsonl"
    assert (
        main(
            [
                "conductor",
                "predict",
                "--planner",
                "search",
                "--data",
                str(data),
                "--output",
                str(out),
            ]
        )
        == 0
    )
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    preds = {
        json.loads(line)["id"]: json.loads(line)["prediction"]
        for line in out.read_text().splitlines()
    }
    assert len(preds) == len(rows) == 900
    exact = sum(preds[r["id"]] == r["target"] for r in rows)
    policy = sum(json.loads(preds[r["id"]])["policy"] == r["label"]["policy"] for r in rows)
    within = sum(
        json.loads(preds[r["id"]])["estimated_credits"] <= r["constraints"]["max_credits"] + 1e-9
        and json.loads(preds[r["id"]])["estimated_latency_ms"] <= r["constraints"]["max_latency_ms"]
        and json.loads(preds[r["id"]])["max_calls"] <= r["constraints"]["max_calls"]
        for r in rows
    )
    assert (exact, policy, within) == (900, 900, 900)
