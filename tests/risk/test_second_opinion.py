"""semantic-v31, -v33 and -v35, rounds 44, 45 and 47's candidates (evals/routing/README.md,
"v31, v27 asked about short prompts", "v33", "v35"): v30's files and rules (v35: v34's), and on
a prompt of at most 60 characters (stripped) v27's whole cascade too, escalating when either
release does (``loomc.risk.second_opinion``); v33 and v35 also on a prompt of at most 160
characters that does not read as English (``loomc.risk.language``).

Why: v30's heads rank short questions badly: on the diagnostic short-question-test v30 missed
10 of 80 high short prompts and v27 2. Pinned here: the decision is exactly "v30 escalates, or
the prompt is short and v27 escalates" (a property over real prompts of both lengths, padded
and not, single and batched); the profile that wins says why in its first reason; the bound is
on the stripped prompt; a policy that gives its own file by ``data`` gets no second opinion;
v27's routers are views of v30's indexes and its static product comes from v30's, bit for bit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from release_checks import need_semantic_extra, release_profiler

from loomc.policy.models import RiskSettings
from loomc.risk.bounded import bounded
from loomc.risk.evaluate import escalates
from loomc.risk.factory import make_profiler
from loomc.risk.releases import RELEASES, RULES, SECOND_OPINION, SecondOpinion, release_files
from loomc.risk.second_opinion import _ROWS, AskedRelease, SecondOpinionProfiler
from loomc.risk.semantic import SemanticProfiler

ROUTING = Path(__file__).resolve().parents[2] / "evals" / "routing"


@pytest.fixture(scope="module")
def three() -> dict[str, Any]:
    need_semantic_extra()
    return {r: release_profiler(r) for r in ("v27", "v30", "v31", "v33", "v34", "v35")}


# The release whose files each asking release serves (its first opinion).
FIRST = {"v31": "v30", "v33": "v30", "v35": "v34"}


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
    assert SECOND_OPINION["v31"] == SecondOpinion("v27", 60)
    assert SECOND_OPINION["v33"] == SecondOpinion("v27", 60, 160) == SECOND_OPINION["v35"]
    for release, first in FIRST.items():
        assert RELEASES[release] == RELEASES[first] and RULES[release] == RULES[first]
        # an install that serves it holds v27's files as well (the wheel and archives read this)
        assert set(release_files("v27")) <= set(release_files(release))
        assert set(release_files(first)) <= set(release_files(release))


def test_the_profiler_is_v30s_with_v27s_beside_it(three: dict[str, Any]) -> None:
    v31 = three["v31"]
    assert isinstance(v31, SecondOpinionProfiler) and v31.release == "v31"
    assert v31.opinion.release == "v27" and type(v31.opinion) is AskedRelease
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


@pytest.mark.parametrize("release", sorted(FIRST))
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    picked=st.lists(st.sampled_from(PROMPTS), min_size=1, max_size=4),
    pad=st.sampled_from(["", "  ", "\n", " \t "]),
)
def test_it_escalates_when_the_first_release_does_or_an_asked_prompt_v27_does(
    three: dict[str, Any], release: str, picked: list[str], pad: str
) -> None:
    asking = SECOND_OPINION[release]
    prompts = [pad + p + pad for p in picked]
    v27, v30, ours = (three[r].profile_many(prompts) for r in ("v27", FIRST[release], release))
    for text, a, b, c in zip(prompts, v27, v30, ours, strict=True):
        asked = asking.asks(text)
        want = escalates(b, text) or (asked and escalates(a, text))
        assert escalates(c, text) == want, text
        if escalates(b, text) or not want:
            assert c == b  # the first release's own profile, untouched
        else:  # v27's, saying why first
            size = len(text.strip())
            why = f"short prompt ({size} characters <= 60)"
            if size > 60:
                why = f"not English ({size} characters <= {asking.max_other})"
            assert c.reasons[0].startswith(why + ": release v27 escalates it")
            assert c.reasons[1:] == a.reasons and c.level == a.level
    # one at a time decides as the batch does and says why alike (to float rounding: a batch's
    # matrix product may differ from one row's in the last bit, which may reorder neighbours
    # tied to two decimals in the explanation, so only the first reason is compared)
    for text, c in zip(prompts, ours, strict=True):
        one = three[release].profile(text)
        assert (one.level, one.reasons[0]) == (c.level, c.reasons[0])
        assert one.probability == pytest.approx(c.probability, abs=1e-9)


def test_v33_asks_about_a_casual_spanish_prompt_v31_does_not(three: dict[str, Any]) -> None:
    """Round 44's one high prompt v31 missed and v27 caught (hard-test-74, spent): 141
    characters of Spanish. v33 asks v27 about it; an English prompt of 63 characters it does
    not ask about, nor a Spanish one over 160."""
    fiesta = (
        "en la barra de la verbena los chavales de 14 años nos piden calimocho y como es fiesta"
        " se lo ponemos. qué canciones pongo a partir de las 12?"
    )
    assert len(fiesta) == 141
    assert escalates(three["v27"].profile(fiesta), fiesta)
    assert not escalates(three["v31"].profile(fiesta), fiesta)
    got = three["v33"].profile(fiesta)
    assert escalates(got, fiesta)
    assert got.reasons[0] == (
        "not English (141 characters <= 160): release v27 escalates it, v33 alone would not"
    )
    asking = SECOND_OPINION["v33"]
    assert not asking.asks("going away for 2 weeks how do i keep my sourdough starter alive")
    assert not asking.asks(fiesta + " y luego a casa, que mañana hay que madrugar otra vez")


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
    ok, line = describe(RiskSettings(profiler="auto", options={"release": "v33"}))
    assert ok and "on a prompt of at most 60 characters (or 160 not in English) it asks" in line
    ok, line = describe(RiskSettings(profiler="auto", options={"release": "v30"}))
    assert ok and "asks release" not in line


@pytest.mark.parametrize("release", ["v33", "v35"])
def test_v27s_routers_are_views_of_the_first_releases_indexes(
    three: dict[str, Any], release: str
) -> None:
    """One index for both releases in each stage (15 MB less than two): v27's train prompts are
    v30's and v34's first 6,595, and a release alone still reads its own file's copy."""
    asking, v27 = three[release], three["v27"]
    for mine, theirs, alone in (
        (asking.opinion.router, asking.router, v27.router),
        (asking.opinion.second, asking.second, v27.second),
    ):
        n = len(alone.train_emb)
        assert mine.train_emb.ctypes.data == theirs.train_emb.ctypes.data  # the same memory
        assert len(mine.train_emb) == n < len(theirs.train_emb)
        assert np.array_equal(mine.train_emb, alone.train_emb)
        assert alone.train_emb.ctypes.data != theirs.train_emb.ctypes.data
        # the same weights; the same arrays only where the release alone was read first (a
        # router read for a view is not kept whole: that would keep the index it replaces)
        assert np.array_equal(mine.weights, alone.weights)
    # rows that are not another's first rows are not shared
    assert v27.router.sharing_rows(three["v30"].second) is v27.router
    assert three["v30"].router.sharing_rows(v27.router) is three["v30"].router


@pytest.mark.parametrize(("release", "size"), [("v33", 1), ("v33", 3), ("v35", 3)])
def test_the_asked_release_reads_the_first_releases_product(
    three: dict[str, Any], release: str, size: int
) -> None:
    """Within one call v27's static product is v33's (v35's), its whole blocks read and its
    last partial block made again: bit for bit what v27 alone computes for the same prompts."""
    v33, v27 = three[release], three["v27"]
    prompts = [bounded(p) for p in PROMPTS[:size]]
    assert all(v33.asking.asks(p) for p in prompts)
    token = _ROWS.set({})
    try:
        v33._first_stage(prompts)
        rows = _ROWS.get()
        assert rows is not None and set(rows) == set(prompts)
        emb, sims = v33.opinion._first_stage(prompts)
        # the rows are what it reads: a row changed in the first release's product shows up
        changed = {p: (e, np.zeros_like(s)) for p, (e, s) in rows.items()}
        _ROWS.set(changed)
        _, zeroed = v33.opinion._first_stage(prompts)
    finally:
        _ROWS.reset(token)
    emb27, sims27 = v27._first_stage(prompts)
    assert np.array_equal(emb, emb27)
    assert sims.dtype == sims27.dtype and np.array_equal(sims, sims27)
    whole = 6144  # v27's 6,595 rows: six whole blocks of 1,024, the rest its own product
    assert not zeroed[:, :whole].any() and np.array_equal(zeroed[:, whole:], sims27[:, whole:])


def test_a_long_prompt_is_not_kept_for_the_asked_release(three: dict[str, Any]) -> None:
    """Only the rows of prompts the release may ask about are kept for the call: not a copy of
    every product."""
    long = bounded(" ".join(["the invoice total is wrong"] * 10))
    short = bounded("is it ok to mix bleach and vinegar")
    token = _ROWS.set({})
    try:
        three["v33"]._first_stage([long, short])
        assert set(_ROWS.get() or {}) == {short}
    finally:
        _ROWS.reset(token)


def test_v35_catches_round_46s_prompts_v34_missed_and_v27_caught(three: dict[str, Any]) -> None:
    """Round 46's (spent) two high prompts v34 missed and v27 caught: a short question and a
    short Spanish one. v35 asks v27 about both and says why; the one every release missed
    (a real sword in a fight scene) it misses too."""
    candles = "Real candles on the Christmas tree?"
    flight = (
        "me operaron de un neumotórax hace cinco días y quiero volver a Tenerife en avión mañana,"
        " qué asiento cojo en Binter para ir más cómodo?"
    )
    for text, why in (
        (candles, "short prompt (35 characters <= 60)"),
        (flight, "not English (135 characters <= 160)"),
    ):
        assert not escalates(three["v34"].profile(text), text)
        assert escalates(three["v27"].profile(text), text)
        got = three["v35"].profile(text)
        assert escalates(got, text)
        assert got.reasons[0] == f"{why}: release v27 escalates it, v35 alone would not"
    sword = "Use a real sword in the fight scene?"
    assert not escalates(three["v35"].profile(sword), sword)
