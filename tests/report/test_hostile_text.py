"""Untrusted text (answers, case ids, strategy and dataset names, judge errors) never becomes
markup in a report, and the SVG card stays well-formed XML whatever characters it holds."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import escape

from loomc.eval.receipt import EvalReceipt, EvalSettings, build_receipt, load_receipt
from loomc.eval.records import JudgeVerdict, RunRecord
from loomc.exec.result import BudgetReport, RunResult
from loomc.report.render import render, render_text

ATTACKS = [
    "<script>alert(1)</script>",
    "<svg onload=alert(9)>",
    '"><img src=x onerror=alert(2)>',
    "]]><!--",
    "a\x00b\x07c\x1b[2Jd\x9be",
    "lone \ud800 surrogate",
    "| col | break |\n# heading\n[link](javascript:alert(3))",
    "&amp; &lt;b&gt;",
]


def _receipt(text: str) -> EvalReceipt:
    res = RunResult(
        answer=text,
        pipeline="p",
        tier=None,
        calls=1,
        escalated=False,
        escalation_reason=None,
        stop_reason="completed",
        budget=BudgetReport(limits={}, used={"calls": 1}),
        steps=[],
        elapsed_ms=5,
        cost="0.01",
        tokens=10,
        receipt_hash="h",
    )
    judge = JudgeVerdict(status="error", model=text, error=text, reason=text)
    rec = RunRecord(case_id=text, strategy=text, iteration=0, result=res, answer=text, judge=judge)
    settings_ = EvalSettings(
        dataset=f"{text}.jsonl",
        policy=text,
        judge_model=text,
        strategies=[text],
        include_answers=True,
    )
    return build_receipt([rec], settings_)


class _Elements(HTMLParser):
    """What a browser would build: element names and attribute names."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs |= {name for name, _ in attrs}


def _assert_inert_html(html: str) -> None:
    parser = _Elements()
    parser.feed(html)
    assert not parser.tags & {"script", "img", "iframe"}, parser.tags
    assert not {a for a in parser.attrs if a.startswith("on")}, parser.attrs
    # the only svg elements are the charts' (their own xmlns), never one from a dataset name
    assert "<svg onload" not in html


@pytest.mark.parametrize("text", ATTACKS)
def test_html_escapes_every_untrusted_field(tmp_path: Path, text: str) -> None:
    html = render(_receipt(text), tmp_path / "r.html").read_text(encoding="utf-8")
    _assert_inert_html(html)
    if text.isprintable():
        assert str(escape(text)) in html  # shown as text, not dropped


@pytest.mark.parametrize("text", ATTACKS)
def test_svg_card_is_well_formed_xml(tmp_path: Path, text: str) -> None:
    svg = render(_receipt(text), tmp_path / "r.svg").read_text(encoding="utf-8")
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert not [e for e in root.iter() if e.tag.rsplit("}", 1)[-1] in ("script", "foreignObject")]
    assert not [a for e in root.iter() for a in e.attrib if a.startswith("on")]


@pytest.mark.parametrize("text", ATTACKS)
def test_markdown_holds_no_raw_html_or_table_break(tmp_path: Path, text: str) -> None:
    md = render(_receipt(text), tmp_path / "r.md").read_text(encoding="utf-8")
    assert "<script" not in md and "<svg" not in md and "<img" not in md
    rows = [line for line in md.splitlines() if line.startswith("| ") and "runs" not in line]
    strategy_row = next(r for r in rows if r.startswith("| ") and "---" not in r)
    # an escaped pipe never splits a cell: 17 columns, 18 unescaped bars
    unescaped = strategy_row.replace("\\|", "")
    assert unescaped.count("|") == 17, strategy_row


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_any_text_keeps_the_svg_well_formed(text: str) -> None:
    ET.fromstring(render_text(_receipt(text), ".svg"))


@pytest.mark.parametrize("ext", [".json", ".md", ".html", ".svg"])
def test_lone_surrogate_never_stops_a_report(tmp_path: Path, ext: str) -> None:
    path = render(_receipt("bad \udcff byte"), tmp_path / f"r{ext}")
    assert "\ufffd" in path.read_text(encoding="utf-8") or ext == ".json"
    if ext == ".json":
        assert load_receipt(path).runs[0].answer == "bad \ufffd byte"
