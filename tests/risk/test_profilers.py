"""Reference bugs reproduced by ``reference``, fixed by ``keywords``; routing on the seed suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loomc.policy.models import RiskSettings
from loomc.risk.evaluate import escalates, evaluate_profiler
from loomc.risk.factory import make_profiler
from loomc.risk.keywords import KeywordProfiler
from loomc.risk.reference import ReferenceProfiler, js_length

REF = ReferenceProfiler()
KW = KeywordProfiler()

# Listed in CONDUCTOR-V2 §7.2 as never matching because of the trailing \b.
REFERENCE_MISSES = [
    "vulnerability", "concurrency", "idempotent", "oauth", "authentication", "tokens",
    "credits", "payments", "races", "replays", "secrets", "attacks",
]  # fmt: skip


@pytest.mark.parametrize("word", REFERENCE_MISSES)
def test_reference_misses_stems_and_plurals(word: str) -> None:
    risk = REF.profile(f"please look at the {word} here")
    assert risk.signals == () and risk.level == "low"


@pytest.mark.parametrize("word", REFERENCE_MISSES)
def test_keywords_fix_stems_and_plurals(word: str) -> None:
    risk = KW.profile(f"please look at the {word} here")
    assert risk.level == "high" and risk.signals


def test_reference_signal_order_and_hyphen_boundary() -> None:
    risk = REF.profile("deploy the multi-tenant payment api")
    assert risk.signals == ("identity", "money", "production-code")
    assert (risk.kind, risk.complexity, risk.level) == ("code-review", "high", "high")


def test_reference_pipeline_name_is_part_of_text() -> None:
    assert REF.profile("compare nothing", "general").kind == "research"
    assert REF.profile("hello", "research").kind == "research"
    assert REF.profile("hello", "code-review").level == "high"
    assert REF.profile("hello", "no-such-pipeline").level == "low"


def test_reference_length_is_utf16_units() -> None:
    assert js_length("😀") == 2
    assert REF.profile("😀" * 90).level == "medium"  # 180 units, 90 code points
    assert REF.profile("x" * 179).level == "low"


@pytest.mark.parametrize(
    "prompt",
    [
        "customers are charged twice when they double-click Pay",
        "the reset link contains the user id and never expires",
        "the image proxy fetches any URL the user gives",
    ],
)
def test_keywords_catch_paraphrases_reference_misses(prompt: str) -> None:
    assert not escalates(REF.profile(prompt), prompt)
    assert escalates(KW.profile(prompt), prompt)


@pytest.mark.parametrize(
    "prompt",
    [
        "what does SSRF stand for?",
        "What is a CSRF token?",
        "this is not about payments, just rename the variable",
    ],
)
def test_keywords_do_not_escalate_trivia_or_negations(prompt: str) -> None:
    assert not escalates(KW.profile(prompt), prompt)


def test_trivia_with_own_context_still_escalates() -> None:
    assert KW.profile("what is wrong with how we store our session tokens?").level == "high"


def _seed_rows(shared_dir: Path) -> list[dict[str, object]]:
    path = shared_dir / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("profiler", [REF, KW], ids=lambda p: p.name)
def test_seed_suite_fully_routed_with_hints(shared_dir: Path, profiler: object) -> None:
    result = evaluate_profiler(profiler, _seed_rows(shared_dir), use_hints=True)  # type: ignore[arg-type]
    assert result["accuracy"] == 1.0, result["misses"]


def test_factory_selects_and_falls_back() -> None:
    assert make_profiler(RiskSettings(profiler="reference")).name == "reference"
    kw = make_profiler(RiskSettings(signals={"money": ["zorkmid*"]}))
    assert kw.profile("send zorkmids").signals == ("money",)
    sem = make_profiler(RiskSettings(profiler="semantic"))
    if sem.name == "keywords":
        assert "semantic" in (getattr(sem, "notice", None) or "")


@given(st.text(max_size=200))
def test_keywords_never_below_reference_on_signals(text: str) -> None:
    """Fixing bugs only adds matches, except where negation/trivia deliberately removes them."""
    kw = KeywordProfiler(negation=False, trivia=False)
    assert set(REF.profile(text).signals) <= set(kw.profile(text).signals)
