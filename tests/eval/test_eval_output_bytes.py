"""A small eval's receipt JSON and journal, byte for byte as main wrote them before the eval's
hot path was cut (branch ``evalcpu2``): the demo policy (scripted mock, ``keywords`` profiler)
on a third of its dataset under every strategy, twice. What a clock or a random draw decides
(timestamps, elapsed and latency figures, reservation ids, the receipt hash over them, the
dataset's path and loomc's version) is blanked; everything else must not move.

The digests were taken from main at 97d16ff. A change that means to move an output updates
them (print ``_outputs`` of both trees and diff them first)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import loomc

ROOT = Path(__file__).resolve().parents[2]
RECEIPT_SHA256 = "faf4ade37e92c88139c3e81925434cc205abf5c8a241b771de44dff6a30661e1"
JOURNAL_SHA256 = "afcfec527fcc3d90cce65d5be86fc576d0f3ee621398de28f9702587bd4951f3"

_BLANK = {"created_at", "loomc_version", "dataset", "receipt_hash"}


def _blank(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: None if k in _BLANK or k.endswith("_ms") or "latency" in k else _blank(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_blank(v) for v in value]
    return value


def _outputs(tmp: Path) -> tuple[str, str]:
    """The blanked receipt JSON (in its own key order) and journal (its lines sorted: workers
    finish in an order the clock decides)."""
    policy = (ROOT / "policies/demo.yaml").read_text(encoding="utf-8")
    assert policy.count("profiler: auto") == 1
    (tmp / "demo.yaml").write_text(policy.replace("profiler: auto", "profiler: keywords"))
    ev = loomc.prepare_eval(
        ROOT / "evals/mixed-routing.jsonl",
        "baseline,fixed,lean,balanced,strict",
        project=ROOT,
        policy=tmp / "demo.yaml",
        concurrency=4,
        iterations=2,
        limit=12,
    )
    loomc.render(ev.run(journal=tmp / "journal.jsonl"), tmp / "receipt.json")
    receipt = json.dumps(_blank(json.loads((tmp / "receipt.json").read_text("utf-8"))))
    lines = []
    for line in (tmp / "journal.jsonl").read_text("utf-8").splitlines():
        obj = json.loads(line)
        if obj.get("ledger") in ("reserve", "settle"):
            obj["id"] = None
        lines.append(json.dumps(_blank(obj)))
    return receipt, "\n".join(sorted(lines))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_receipt_and_journal_are_main_s_bytes(tmp_path: Path) -> None:
    receipt, journal = _outputs(tmp_path)
    assert len(json.loads(receipt)["runs"]) == 12 * 5 * 2
    assert _sha(receipt) == RECEIPT_SHA256
    assert _sha(journal) == JOURNAL_SHA256
