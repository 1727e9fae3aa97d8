"""Metrics against hand-computed values, and the blank-not-zero rule across formats."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from loomc.eval import stats
from loomc.eval.receipt import EvalSettings, ReceiptError, build_receipt, load_receipt
from loomc.eval.records import RunRecord
from loomc.exec.result import BudgetReport, RunResult, StepRecord
from loomc.report.render import render


def _rec(
    case: str,
    strat: str,
    it: int,
    *,
    q: float | None,
    passed: bool | None,
    calls: int = 1,
    cost: str | None = "0.01",
    ms: int = 100,
    esc: bool = False,
    want: bool | None = None,
) -> RunRecord:
    res = RunResult(
        answer="a",
        pipeline="p",
        tier=None,
        calls=calls,
        escalated=esc,
        escalation_reason=None,
        stop_reason="completed",
        budget=BudgetReport(limits={}, used={}),
        steps=[StepRecord(id="s", role="finalizer", worker="w", model="m-" + strat, status="ok")],
        elapsed_ms=ms,
        cost=cost,
        missing_pricing=[] if cost else ["m-" + strat],
        tokens=10,
        receipt_hash="h",
    )
    return RunRecord(case_id=case, strategy=strat, iteration=it, result=res, quality=q,
                     passed=passed, expected_escalation=want)  # fmt: skip


def test_wilson_3_of_4_matches_textbook() -> None:
    z, n, p = 1.959963984540054, 4, 0.75
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo, hi = stats.wilson(3, 4) or (0.0, 0.0)
    assert (round(lo, 4), round(hi, 4)) == (round(c - h, 4), round(c + h, 4)) == (0.3006, 0.9544)


def test_mean_ci_and_percentiles() -> None:
    ci = stats.mean_ci([1.0, 2.0, 3.0])  # sd 1, t(2)=4.303 -> half 4.303/sqrt(3)
    assert ci is not None and abs(ci[1] - (2 + 4.303 / math.sqrt(3))) < 1e-9
    assert stats.mean_ci([5.0]) is None
    assert stats.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert stats.percentile([float(x) for x in range(1, 21)], 95) == pytest.approx(19.05)
    assert stats.paired_bootstrap([1.0, 2.0, 3.0]) == stats.paired_bootstrap([1.0, 2.0, 3.0])


def test_metrics_and_route_split() -> None:
    recs = [
        _rec("a", "baseline", 0, q=50, passed=True, cost="0.01"),
        _rec("b", "baseline", 0, q=70, passed=False, cost="0.03"),
        _rec(
            "a", "fixed", 0, q=80, passed=True, calls=2, esc=True, want=False, cost="0.04", ms=300
        ),
        _rec(
            "b", "fixed", 0, q=90, passed=True, calls=1, esc=False, want=True, cost="0.04", ms=500
        ),
    ]
    r = build_receipt(recs, EvalSettings(iterations=1))
    m = {x.strategy: x for x in r.metrics}
    assert m["fixed"].avg_calls == 1.5 and m["fixed"].one_call_rate == 0.5
    assert m["fixed"].route_accuracy == 0.0 and m["fixed"].over_escalation_rate == 0.5
    assert m["fixed"].under_escalation_rate == 0.5 and m["baseline"].route_accuracy is None
    assert m["fixed"].cost_index == 200.0 and m["baseline"].cost_index == 100.0
    assert m["fixed"].p50_ms == 400.0
    d = r.deltas[0]
    assert d.pairs == 2 and d.quality == 25.0


def test_unmeasured_numbers_are_blank_not_zero(tmp_path: Path) -> None:
    recs = [_rec("a", "fixed", 0, q=None, passed=None, cost=None)]
    r = build_receipt(recs, EvalSettings(iterations=1))
    m = r.metrics[0]
    assert m.avg_cost_usd is None and m.quality_mean is None and m.pass_rate is None
    assert m.cost_index is None and m.missing_pricing == ["m-fixed"]
    md = render(r, tmp_path / "r.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| fixed"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # quality, pass rate, route accuracy, USD, credits and cost index were not measured
    assert cells[2] == "— —" and cells[3] == "— —" and cells[8] == "—"
    assert cells[11] == "— ¹" and cells[12] == "—" and cells[13] == "—"
    assert cells[5] == "100%"  # one-call rate was measured: 1 of 1 run
    assert "no pricing for m-fixed" in md
    ET.fromstring(render(r, tmp_path / "r.svg").read_text())
    html = render(r, tmp_path / "r.html").read_text()
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")


def test_json_round_trip_and_bad_versions(tmp_path: Path) -> None:
    r = build_receipt([_rec("a", "baseline", 0, q=1, passed=True)], EvalSettings())
    p = render(r, tmp_path / "r.json")
    assert load_receipt(p) == r
    data = json.loads(p.read_text())
    data["version"] = 99
    p.write_text(json.dumps(data))
    with pytest.raises(ReceiptError, match="newer"):
        load_receipt(p)
    p.write_text("{")
    with pytest.raises(ReceiptError, match="not valid JSON"):
        load_receipt(p)


def _labels(svg: str) -> list[tuple[float, float, str]]:
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    return [
        (float(t.get("x", 0)), float(t.get("y", 0)), t.text or "")
        for t in root.iter(ns + "text")
        if t.get("class") == "label"
    ]


@pytest.mark.parametrize("quality", [[70.0] * 5, [70.0, 71.0, 72.0, 70.5, 69.0]])
def test_scatter_labels_do_not_overlap_when_costs_are_equal(quality: list[float]) -> None:
    from loomc.report.charts import _overlaps, cost_quality_scatter, label_box

    names = ["baseline", "fixed", "lean", "balanced", "strict"]
    recs = [
        _rec(f"c{i}", name, 0, q=q, passed=True, cost="0")
        for name, q in zip(names, quality, strict=True)
        for i in range(2)
    ]
    r = build_receipt(recs, EvalSettings(iterations=1))
    svg = cost_quality_scatter(r.metrics)
    labels = _labels(svg)
    assert sorted(t for _, _, t in labels) == sorted(names)
    boxes = [label_box(x, y, t) for x, y, t in labels]
    for i, a in enumerate(boxes):
        assert a[0] >= 0 and a[2] <= 480 and a[1] >= 0 and a[3] <= 300
        for b in boxes[i + 1 :]:
            assert not _overlaps(a, b), (a, b)
    assert "all $0.0000" in svg


def test_scatter_spreads_distinct_costs() -> None:
    from loomc.report.charts import cost_quality_scatter

    recs = [
        _rec("a", "cheap", 0, q=50, passed=True, cost="0.001"),
        _rec("a", "dear", 0, q=90, passed=True, cost="0.010"),
    ]
    svg = cost_quality_scatter(build_receipt(recs, EvalSettings()).metrics)
    xs = sorted(
        float(c.get("cx", 0)) for c in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}circle")
    )
    assert xs[1] - xs[0] > 200 and "$0.0010" in svg and "$0.0100" in svg
