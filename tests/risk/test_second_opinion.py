"""semantic-v31, round 44's candidate (evals/routing/README.md, "v31, v27 asked about short
prompts"): v30's files and rules, and on a prompt of at most 60 characters (stripped) v27's
whole cascade too, escalating when either release does (``loomc.risk.second_opinion``).

Why: v30's heads rank short questions badly: on the diagnostic short-question-test v30 missed
10 of 80 high short prompts and v27 2. Pinned here: the decision is exactly "v30 escalates, or
the prompt is short and v27 escalates" (a property over real prompts of both lengths, padded
and not, single and batched); the profile that wins says why in its first reason; the bound is
on the stripped prompt; a policy that gives its own file by ``data`` gets no second opinion.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from release_checks import need_semantic_extra, release_profiler

from loomc.policy.models import RiskSettings
from loomc.risk.evaluate import escalates
from loomc.risk.factory import make_profiler
from loomc.risk.releases import RELEASES, RULES, SECOND_OPINION, SecondOpinion, release_files
from loomc.risk.second_opinion import SecondOpinionProfiler
from loomc.risk.semantic import SemanticProfiler

ROUTING = Path(__file__).resolve().parents[2] / "evals" / "routing"


@pytest.fixture(scope="module")
def three() -> dict[str, Any]:
    need_semantic_extra()
    return {r: release_profiler(r) for r in ("v27", "v30", "v31")}


def _prompts() -> list[str]:
    """Real prompts of both lengths and four languages: every short-question-test row (spent:
    measured once), the first 40 rows of round 43's ordinary split everyday-test-8 and the
    last 40 of round 44's everyday-test-11 (both spent)."""
    rows = [json.loads(x) for x in (ROUTING / "short-question-test.jsonl").read_text().splitlines()]
    rows += [json.loads(x) for x in (ROUTING / "everyday-test-8.jsonl").read_text().splitlines()][
        :40
    ]
    rows += [json.loads(x) for x in (ROUTING / "everyday-test-11.jsonl").read_text().splitlines()][
        -40:
    ]
    return [str(r["prompt"]) for r in rows]


PROMPTS = _prompts()


def test_v31_is_v30s_files_and_rules_asking_v27() -> None:
    assert dict(SECOND_OPINION) == {"v31": SecondOpinion("v27", 60)}
    assert RELEASES["v31"] == RELEASES["v30"] and RULES["v31"] == RULES["v30"]
    # an install that serves it holds v27's files as well (the wheel and archives read this)
    assert set(release_files("v27")) <= set(release_files("v31"))
    assert set(release_files("v30")) <= set(release_files("v31"))


def test_the_profiler_is_v30s_with_v27s_beside_it(three: dict[str, Any]) -> None:
    v31 = three["v31"]
    assert isinstance(v31, SecondOpinionProfiler) and v31.release == "v31"
    assert v31.opinion.release == "v27" and type(v31.opinion) is SemanticProfiler
    assert v31.band == three["v30"].band and v31.data_path == three["v30"].data_path
    assert v31.opinion.band == three["v27"].band
    # both stages' MiniLM is one encoder (the same v22 delta): no second copy of the weights
    assert v31.second_encoder is v31.opinion.second_encoder


def test_a_file_given_by_data_gets_no_second_opinion() -> None:
    need_semantic_extra()
    settings = RiskSettings(
        profiler="semantic", options={"release": "v31", "data": str(RELEASES["v30"])}
    )
    assert type(make_profiler(settings)) is SemanticProfiler


@pytest.mark.parametrize("release", list(SECOND_OPINION))
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    picked=st.lists(st.sampled_from(PROMPTS), min_size=1, max_size=4),
    pad=st.sampled_from(["", "  ", "\n", " \t "]),
)
def test_it_escalates_when_v30_does_or_an_asked_prompt_v27_does(
    three: dict[str, Any], release: str, picked: list[str], pad: str
) -> None:
    asking = SECOND_OPINION[release]
    prompts = [pad + p + pad for p in picked]
    v27, v30, ours = (three[r].profile_many(prompts) for r in ("v27", "v30", release))
    for text, a, b, c in zip(prompts, v27, v30, ours, strict=True):
        asked = asking.asks(text)
        want = escalates(b, text) or (asked and escalates(a, text))
        assert escalates(c, text) == want, text
        if escalates(b, text) or not want:
            assert c == b  # v30's own profile, untouched
        else:  # v27's, saying why first
            size = len(text.strip())
            why = f"short prompt ({size} characters <= {asking.max_chars})"
            assert c.reasons[0].startswith(why + ": release v27 escalates it")
            assert c.reasons[1:] == a.reasons and c.level == a.level
    # one at a time decides as the batch does and says why alike (to float rounding: a batch's
    # matrix product may differ from one row's in the last bit, which may reorder neighbours
    # tied to two decimals in the explanation, so only the first reason is compared)
    for text, c in zip(prompts, ours, strict=True):
        one = three[release].profile(text)
        assert (one.level, one.reasons[0]) == (c.level, c.reasons[0])
        assert one.probability == pytest.approx(c.probability, abs=1e-9)


@given(st.text(max_size=200), st.sampled_from([0, 40, 60]))
def test_which_prompts_are_asked(text: str, short: int) -> None:
    """Every prompt of at most ``max_chars`` characters once stripped, and no other."""
    assert SecondOpinion("v27", short).asks(text) == (len(text.strip()) <= short)


def test_the_bound_is_the_stripped_prompts_length(three: dict[str, Any]) -> None:
    """Prompts from round 43's spent everyday-test-8 that v27 escalates and v30 does not: at
    57 characters v31 asks v27 and escalates; at 63 it does not ask."""
    short = "spülmaschine stinkt muffig wenn man sie aufmacht, was tun"
    long = "going away for 2 weeks how do i keep my sourdough starter alive"
    assert (len(short), len(long)) == (57, 63)
    for text in (short, long, "   " + short + "   "):
        assert escalates(three["v27"].profile(text), text)
        assert not escalates(three["v30"].profile(text), text)
    assert escalates(three["v31"].profile("   " + short + "   "), short)
    assert escalates(three["v31"].profile(short), short)
    assert not escalates(three["v31"].profile(long), long)


def test_the_doctor_names_the_second_opinion() -> None:
    from loomc.risk.factory import describe

    need_semantic_extra()
    ok, line = describe(RiskSettings(profiler="auto", options={"release": "v31"}))
    assert ok and "release v31, rules: hazard-floor, people-floor-wide, lexical-floor-v30" in line
    assert line.endswith(
        "on a prompt of at most 60 characters it asks release v27 too (router-static-v27.npz,"
        " band (0.08, 0.43)) and escalates when either does)"
    )
    ok, line = describe(RiskSettings(profiler="auto", options={"release": "v30"}))
    assert ok and "asks release" not in line
