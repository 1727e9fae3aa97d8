"""A small eval's receipt JSON and journal, byte for byte as main wrote them before the eval's
hot path was cut (branch ``evalcpu2``): the demo policy (scripted mock, ``keywords`` profiler)
on a third of its dataset under every strategy, twice. What a clock or a random draw decides
(timestamps, elapsed and latency figures, reservation ids, the receipt hash over them, the
dataset's path and loomc's version) is blanked in the text as written; every other byte must stay.

The digests were taken from main at 97d16ff. A change that means to move an output updates
them (print ``_outputs`` of both trees and diff them first)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import loomc

ROOT = Path(__file__).resolve().parents[2]
RECEIPT_SHA256 = "57170a10fed5749971800167ebea35fd0d76686ae6dc5320344121702ffda5f4"
JOURNAL_SHA256 = "4e9a585d5f4590675bcd3fcd4ead745541df289f171ab86940fdb2ff11f54ee2"

# a key whose value a clock or a random draw decides, with that value, as the JSON writes it
_BLANK = re.compile(
    r'("(?:created_at|loomc_version|dataset|receipt_hash|\w*_ms|\w*latency\w*)":\s*)'
    r'("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*|null|\[[^\[\]]*\])'  # a string, number, list
)
_LEDGER_ID = re.compile(r'("ledger":"(?:reserve|settle)","id":)"[0-9a-f]+"')


def _blank(text: str) -> str:
    return _LEDGER_ID.sub(r"\1null", _BLANK.sub(r"\1null", text))


def _outputs(tmp: Path) -> tuple[str, str]:
    """The receipt JSON and the journal as written, their clock- and id-decided values blanked
    in place (the journal's lines sorted: workers finish in an order the clock decides)."""
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
    receipt = _blank((tmp / "receipt.json").read_text("utf-8"))
    journal = (tmp / "journal.jsonl").read_text("utf-8").splitlines()
    return receipt, "\n".join(sorted(_blank(line) for line in journal))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_receipt_and_journal_are_main_s_bytes(tmp_path: Path) -> None:
    receipt, journal = _outputs(tmp_path)
    assert len(json.loads(receipt)["runs"]) == 12 * 5 * 2
    assert _sha(receipt) == RECEIPT_SHA256
    assert _sha(journal) == JOURNAL_SHA256
