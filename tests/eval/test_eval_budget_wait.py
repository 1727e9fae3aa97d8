"""Issue 13 item 11: an eval-wide budget whose room is only held by the worst case of runs in
flight makes the next run wait for them to settle, not stop: reservations of 1 credit that
settle at 0.1 let every run of a 4-credit eval through at concurrency 8."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import yaml

import loomc

ROOT = Path(__file__).resolve().parents[2]


def test_runs_wait_for_in_flight_reservations_instead_of_stopping(tmp_path: Path) -> None:
    policy = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    policy["providers"]["mock"]["mock"] = {"latency_ms": 40, "rules": [{"spent_credits": "0.1"}]}
    for spec in policy["workers"].values():
        spec["credits"] = 1  # the worst case each call reserves
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text(yaml.safe_dump(policy))
    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "prompt": f"Name {i + 2} colours."}) + "\n"
            for i in range(20)
        )
    )
    ev = loomc.prepare_eval(data, "lean", project=ROOT, policy=policy_path, concurrency=8)
    receipt = ev.run(totals=loomc.Budget(credits=Decimal(4)))
    statuses = [r.status for r in receipt.runs]
    assert statuses == ["ok"] * 20  # 20 x 0.1 settled; each waited while 4 were in flight
    spent = sum((r.result.budget.used.credits for r in receipt.runs if r.result), Decimal(0))
    assert spent == Decimal("2.0")


def test_a_budget_that_truly_cannot_fit_still_stops_runs(tmp_path: Path) -> None:
    policy = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    policy["providers"]["mock"]["mock"] = {"latency_ms": 20, "rules": [{"spent_credits": "1"}]}
    for spec in policy["workers"].values():
        spec["credits"] = 1
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text(yaml.safe_dump(policy))
    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "prompt": f"Name {i + 2} colours."}) + "\n"
            for i in range(10)
        )
    )
    ev = loomc.prepare_eval(data, "lean", project=ROOT, policy=policy_path, concurrency=8)
    receipt = ev.run(totals=loomc.Budget(credits=Decimal(4)))
    assert sum(r.status == "ok" for r in receipt.runs) == 4
    assert sum(r.status == "budget-stopped" for r in receipt.runs) == 6
