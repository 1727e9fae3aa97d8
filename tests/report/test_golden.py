"""Golden reports rendered from fixed receipts (tests/report/conftest.py), in every format.

Regenerate with LOOMC_UPDATE_GOLDEN=1 (then review the diff)."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from loomc.eval.receipt import EvalReceipt, load_receipt
from loomc.report.render import render, render_text

GOLDEN = Path(__file__).parent / "golden"
EXTS = (".md", ".svg", ".json", ".html")


def _compare(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("LOOMC_UPDATE_GOLDEN"):
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden {path}; run with LOOMC_UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs from its golden"


@pytest.mark.parametrize("ext", EXTS)
def test_demo_golden(demo_receipt: EvalReceipt, ext: str) -> None:
    _compare("demo" + ext, render_text(demo_receipt, ext))


@pytest.mark.parametrize("ext", EXTS)
def test_checks_only_golden(checks_only_receipt: EvalReceipt, ext: str) -> None:
    _compare("checks-only" + ext, render_text(checks_only_receipt, ext))


def test_golden_json_reloads_and_rerenders_identically(
    tmp_path: Path, demo_receipt: EvalReceipt
) -> None:
    loaded = load_receipt(GOLDEN / "demo.json")
    assert loaded == demo_receipt
    for ext in EXTS:  # a saved receipt re-renders byte for byte
        assert (
            render(loaded, tmp_path / f"r{ext}").read_text() == (GOLDEN / f"demo{ext}").read_text()
        )


def _md_row(md: str, strategy: str) -> list[str]:
    row = next(line for line in md.splitlines() if line.startswith(f"| {strategy} |"))
    return [c.strip() for c in row.strip("|").split("|")]


def test_missing_pricing_is_blank_and_listed(checks_only_receipt: EvalReceipt) -> None:
    md = render_text(checks_only_receipt, ".md")
    fixed = _md_row(md, "fixed")
    assert fixed[11] == "— ¹" and fixed[13] == "—"  # USD / run and cost index blank
    assert "¹ fixed: USD blank, no pricing for mock/unpriced-large." in md
    html = render_text(checks_only_receipt, ".html")
    assert "no pricing for mock/unpriced-large" in html
    svg = render_text(checks_only_receipt, ".svg")
    assert "unpriced model" in svg
    doc = json.loads(render_text(checks_only_receipt, ".json"))
    m = {x["strategy"]: x for x in doc["metrics"]}
    assert m["fixed"]["avg_cost_usd"] is None and m["fixed"]["missing_pricing"] == [
        "mock/unpriced-large"
    ]
    assert m["fixed"]["cost_index"] is None and m["lean"]["cost_index"] == 100.0


def test_no_judge_quality_is_flagged_checks_only(checks_only_receipt: EvalReceipt) -> None:
    md = render_text(checks_only_receipt, ".md")
    assert "judge none (quality from checks only)" in md
    assert _md_row(md, "lean")[2].endswith("²")
    assert "² quality from deterministic checks only" in md and "no judge was used" in md
    m = {x.strategy: x for x in checks_only_receipt.metrics}
    assert m["lean"].quality_source == "checks" and "checks-only" in m["lean"].flags
    # the case without checks has no quality at all (blank, not 0)
    runs = [r for r in checks_only_receipt.runs if r.case_id == "sql-count"]
    assert runs and all(r.quality is None and r.passed is None for r in runs)
    assert "² checks only, not judged" in render_text(checks_only_receipt, ".svg")


def test_single_sample_interval_is_na_not_zero(checks_only_receipt: EvalReceipt) -> None:
    one = checks_only_receipt.model_copy(deep=True)
    # keep one run per strategy: every interval over it needs more samples
    keep = {r.strategy: r for r in reversed(one.runs)}
    from loomc.eval.receipt import build_receipt

    single = build_receipt(
        list(keep.values()),
        one.settings,
        one.pricing,
        created_at=one.created_at,
        loomc_version=one.loomc_version,
    )
    md = render_text(single, ".md")
    q = _md_row(md, "lean")[2]
    assert q.startswith("100.0 n/a") or q.startswith("0.0 n/a"), q
    assert "[0.0, 0.0]" not in md and "n/a = an interval needs at least two samples" in md
    delta = _md_row(md.split("## Paired deltas")[1], "balanced")
    assert delta == ["balanced", "1", "100.0 n/a", "0.00000 n/a", "0 n/a"], delta
    assert "n/a" in render_text(single, ".html")


def test_judged_report_keeps_judge_cost_apart(demo_receipt: EvalReceipt) -> None:
    assert demo_receipt.judge is not None
    j = demo_receipt.judge
    assert j.calls == 50 and j.errors == 1 and j.judged == 49 and j.cost_usd == "0.0100"
    m = {x.strategy: x for x in demo_receipt.metrics}
    # workflow cost is the steps' cost only: baseline is 1 call x $0.001
    assert m["baseline"].avg_cost_usd is not None
    assert float(m["baseline"].avg_cost_usd) == pytest.approx(0.001)
    assert m["balanced"].judge_errors == 1 and m["balanced"].quality_n == 9
    md = render_text(demo_receipt, ".md")
    assert "not included in workflow cost or metrics" in md and "1 judge error(s)" in md
    assert _md_row(md, "balanced")[2].endswith("³")


def test_over_under_escalation_in_every_format(demo_receipt: EvalReceipt) -> None:
    m = {x.strategy: x for x in demo_receipt.metrics}
    # 2 of 5 cases expect escalation: lean never escalates, strict always does
    assert m["lean"].under_escalation_rate == pytest.approx(0.4)
    assert m["lean"].over_escalation_rate == 0.0
    assert m["strict"].over_escalation_rate == pytest.approx(0.6)
    assert m["balanced"].route_accuracy == 1.0
    md = render_text(demo_receipt, ".md")
    assert _md_row(md, "strict")[9] == "60% / 0%" and _md_row(md, "lean")[9] == "0% / 40%"
    assert "over-esc.</th><th>under-esc." in render_text(demo_receipt, ".html")
    svg = render_text(demo_receipt, ".svg")
    assert "over / under" in svg and "60% / 0%" in svg
    doc = json.loads(render_text(demo_receipt, ".json"))
    strict = next(x for x in doc["metrics"] if x["strategy"] == "strict")
    assert strict["over_escalation_rate"] == pytest.approx(0.6)
    assert strict["under_escalation_rate"] == 0.0


@pytest.mark.parametrize("fixture", ["demo_receipt", "checks_only_receipt"])
def test_svgs_parse_as_xml(fixture: str, request: pytest.FixtureRequest) -> None:
    receipt: EvalReceipt = request.getfixturevalue(fixture)
    ET.fromstring(render_text(receipt, ".svg"))
    html = render_text(receipt, ".html")
    for chunk in html.split("<svg")[1:]:
        ET.fromstring("<svg" + chunk.split("</svg>")[0] + "</svg>")


def _spend_rows(md: str) -> dict[str, list[str]]:
    section = md.split("## Spend", 1)[1].split("\n\n", 2)[2]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    return {r[0].strip().strip("*"): [c.strip() for c in r[1:]] for r in rows[1:]}


def test_spend_section_sums_the_runs_and_the_judge(demo_receipt: EvalReceipt) -> None:
    rows = _spend_rows(render_text(demo_receipt, ".md"))
    workflow_calls = sum(r.result.calls for r in demo_receipt.runs if r.result)
    judge_calls = demo_receipt.judge.calls if demo_receipt.judge else 0
    assert rows["workflow"][0] == str(workflow_calls)
    assert rows["judge"][0] == str(judge_calls)
    assert rows["total"][0] == str(workflow_calls + judge_calls)
    assert "planner" not in rows  # no planner strategy, no planner row
    html = render_text(demo_receipt, ".html")
    assert f"<th>total</th><td>{workflow_calls + judge_calls}</td>" in html


def test_spend_total_is_blank_when_a_part_is_unpriced(checks_only_receipt: EvalReceipt) -> None:
    rows = _spend_rows(render_text(checks_only_receipt, ".md"))
    assert rows["workflow"][2] == "—"  # one strategy has no pricing: no partial sum
    assert rows["total"][2].startswith("—") and "unpriced" in rows["total"][2]
