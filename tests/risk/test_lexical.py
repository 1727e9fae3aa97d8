"""The lexical model of ``loomc.risk.lexical`` (v25's ``lexical-floor``): its n-grams, its
TF-IDF vector, the shipped file and what trained it, the floor's reason, and hostile input.

The n-gram rule is scikit-learn's ``char_wb`` analyser (what the recipe was explored with);
the examples below are worked by hand from that rule, not printed by the code."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from corpus_files import ROUTING, bounded_stride, named_on
from hypothesis import given, settings
from hypothesis import strategies as st
from research_script import research_script

from loomc.risk import lexical
from loomc.risk.evaluate import load_rows
from loomc.risk.lexical import LEXICAL_FILE, MAX_CHARS, LexicalModel, ngrams, shared_model

# Round 39's rule: the model learns every routing file committed at the rule's commit.
ROUND_39_FILES = 84


def test_a_word_is_padded_and_cut_into_two_to_five_characters() -> None:
    assert ngrams("Ab") == [" a", "ab", "b ", " ab", "ab ", " ab "]  # " ab " is 4: whole at 4
    assert ngrams("cat") == [
        *(" c", "ca", "at", "t "),
        *(" ca", "cat", "at "),
        *(" cat", "cat "),
        " cat ",
    ]
    assert ngrams("a  b") == [" a", "a ", " a ", " b", "b ", " b "]  # words apart, never across


def _expected_count(length: int) -> int:
    """How many n-grams a word of ``length`` characters gives: padded to ``length + 2``, each
    n from 2 to 5 gives ``padded - n + 1`` windows, until ``n`` reaches the padded length,
    where the whole padded word counts once and longer n-grams are not taken."""
    padded, total = length + 2, 0
    for n in range(2, 6):
        if padded <= n:
            return total + 1
        total += padded - n + 1
    return total


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_every_n_gram_is_a_padded_word_s_window(text: str) -> None:
    words = text.lower().split()
    grams = ngrams(text)
    assert len(grams) == sum(_expected_count(len(w)) for w in words)
    padded = [f" {w} " for w in words]
    for g in grams:
        assert 2 <= len(g) <= 7 and any(g in p for p in padded)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_the_vector_is_unit_length_and_in_bucket_order(text: str) -> None:
    idf = shared_model().idf
    vec = lexical.tfidf(lexical.counts(text), idf)
    buckets = [b for b, _ in vec]
    assert buckets == sorted(set(buckets))
    if vec:
        assert math.isclose(math.fsum(v * v for _, v in vec), 1.0, rel_tol=1e-12)
        assert all(v > 0 for _, v in vec)


def test_buckets_are_crc32_the_same_on_every_machine() -> None:
    assert lexical.bucket_of("vorh") == zlib.crc32(b"vorh") % lexical.BUCKETS
    assert lexical.bucket_of("é") == zlib.crc32("é".encode()) % lexical.BUCKETS


def test_the_shipped_model_is_round_39_s_and_reads_its_corpus_as_it_is() -> None:
    model = shared_model()
    meta = model.meta
    assert meta["release"] == "semantic-v25" and meta["hash"] == "crc32"
    assert meta["buckets"] == lexical.BUCKETS and meta["ngrams"] == [2, 5]
    assert (meta["c"], meta["min_df"], model.threshold) == (8.0, 2, 0.5)
    assert len(meta["corpus"]) == ROUND_39_FILES
    assert set(meta["corpus"]) == {p.name for p in named_on(53)}  # every file to round 38
    current = [hashlib.sha256((ROUTING / n).read_bytes()).hexdigest() for n in meta["corpus"]]
    assert meta["corpus_sha256"] == current  # sealed files never change
    assert meta["rows"] == sum(len(load_rows(ROUTING / n)) for n in meta["corpus"])


# The default's and the newest model are retrained in CI (20-40 s each); the others are a soak
# (``pytest -m soak``).
@pytest.mark.parametrize(
    "rule",
    [
        pytest.param("lexical-floor", marks=pytest.mark.soak),
        pytest.param("lexical-floor-v26", marks=pytest.mark.soak),
        "lexical-floor-v27",
        pytest.param("lexical-floor-v28", marks=pytest.mark.soak),
        pytest.param("lexical-floor-v30", marks=pytest.mark.soak),
        "lexical-floor-v34",
    ],
)
def test_retraining_on_its_corpus_gives_the_same_decisions(rule: str) -> None:
    """``research/train_lexical.py`` on the meta's files gives the shipped model again, and the
    same decision on a bounded stride of the corpus. Why tolerances, not bits: the sums run in
    a fixed order, but numpy's log and exp may round differently on another CPU, and L-BFGS then
    takes a slightly different path to the same optimum. Its size, measured: the rows fitted in
    reverse order (another summation order throughout) move no weight by more than 6.6e-5, so
    1e-3 holds with room; a prompt whose shipped logit is within 1e-3 of the threshold is not
    compared, since such a move may flip it."""
    tl = research_script("train_lexical")
    shipped = shared_model(rule)
    rows = [r for n in shipped.meta["corpus"] for r in load_rows(ROUTING / n)]
    fresh = tl.fit(rows, shipped.meta["c"], shipped.meta["min_df"])
    with np.load(lexical.MODELS[rule]) as z:
        assert np.allclose(fresh["idf"], z["idf"], rtol=1e-6, atol=0)
        assert np.abs(fresh["weights"] - z["weights"]).max() < 1e-3
        assert abs(float(fresh["intercept"]) - float(z["intercept"])) < 1e-3
    again = tl.model_of(fresh)
    compared = 0
    for row in bounded_stride(rows, 400, 6):
        prompt = str(row["prompt"])
        p = shipped.probability(prompt)
        if 0.0 < p < 1.0 and abs(math.log(p / (1.0 - p))) < 1e-3:
            continue
        assert (again.probability(prompt) >= 0.5) == (p >= 0.5), row["id"]
        compared += 1
    assert compared >= 200


def test_the_floor_names_its_probability_and_the_words_behind_it() -> None:
    prompt = (
        "Kannst du das idiomatischer schreiben (Go)? Aus unserer Alarmierungsbrücke.\n"
        "```go\nconst QuittungTimeout = 10 * time.Minute // vorher 90 * time.Second\n```"
    )
    (reason,) = lexical.lexical_floor(prompt)
    p = shared_model().probability(prompt)
    assert p >= 0.5 and reason.startswith(f"lexical:high (P={p:.2f} >= 0.50; ")
    words = shared_model().strongest(prompt)
    assert len(words) == 3 and all(w in prompt.lower().split() for w in words)
    assert lexical.lexical_floor("What is the capital of France?") == ()


def test_a_huge_prompt_is_read_up_to_its_bound_in_bounded_time() -> None:
    model = shared_model()
    head = "Ordéname las claves de este JSON de la alarma de la nave. " * 400
    prompt = head + "x" * 2_000_000
    start = time.process_time()
    p = model.probability(prompt)
    assert time.process_time() - start < 5.0
    assert p == model.probability(prompt[:MAX_CHARS])


def test_a_damaged_model_file_is_refused_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "lexical.npz"
    with np.load(LEXICAL_FILE) as z:
        np.savez(bad, **{k: z[k] for k in z.files if k != "weights"}, weights=np.zeros(7, "f4"))
    with pytest.raises(ValueError, match=r"lexical\.npz: expected 262144 buckets"):
        LexicalModel.load(bad)


def test_the_floor_needs_no_numpy() -> None:
    """The one-prompt path profiles without numpy (``loomc.risk.pure``); the floor is part of
    its decision, so it must not pull numpy in."""
    prompt = "Tu peux traduire les commentaires ? detection:\n  sirene: false  # default true"
    code = (
        "import json, sys\n"
        "sys.modules['numpy'] = None\n"
        "from loomc.risk.lexical import shared_model\n"
        f"print(json.dumps(shared_model().probability({prompt!r})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout) == shared_model().probability(prompt)
