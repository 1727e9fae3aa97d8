"""A provider's lone surrogate (JSON "\\ud800") never crashes a run or an eval: provider text is
made well-formed where it enters (the metered call), so it can be estimated, journaled, printed."""

from __future__ import annotations

import json
from pathlib import Path

import loomc
from loomc.policy.models import MockRule, MockScript
from loomc.providers.mock import MockProvider

ROOT = Path(__file__).resolve().parents[2]
BAD = "bad \ud800 answer."


def _mock() -> MockProvider:
    return MockProvider("mock", MockScript(rules=[MockRule(response=BAD)]))


def test_a_lone_surrogate_becomes_a_replacement_character() -> None:
    sink = loomc.MemorySink()
    result = loomc.run(
        "hello there", project=ROOT, tier="lean", providers={"mock": _mock()}, sinks=[sink]
    )
    assert result.stop_reason == "completed"
    assert result.answer == "bad \ufffd answer."
    assert result.model_dump_json()  # encodable
    tokens = "".join(str(e.data.get("text", "")) for e in sink.events if e.kind == "token")
    assert "\ud800" not in tokens and "\ufffd" in tokens


def test_an_eval_journals_it(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "prompt": "hello there"}) + "\n", encoding="utf-8")
    journal = tmp_path / "j.jsonl"
    ev = loomc.prepare_eval(data, "lean", project=ROOT, include_answers=True)
    receipt = ev.run(journal=journal, providers={"mock": _mock()})
    assert receipt.runs[0].answer == "bad \ufffd answer."
    assert "\\ufffd" in journal.read_text(encoding="utf-8") or "\ufffd" in journal.read_text(
        encoding="utf-8"
    )
