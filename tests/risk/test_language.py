"""``loomc.risk.language.reads_as_english``: which prompts v33 asks v27 about for their language.

Measured against the corpus's own labels: every routing row carries ``lang`` (en, es, de, fr),
written by people who chose the language; the releases' second opinion reads prompts of at
most 160 characters, so that is where the detector must hold. Properties: the decision is by
function words, so more English function words never turn an English-reading text foreign, and
a text with no letters reads as English (what every release did before).
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from loomc.risk.language import _ENGLISH, _OTHER, reads_as_english

ROUTING = Path(__file__).resolve().parents[2] / "evals" / "routing"


def test_the_corpus_labels_agree_on_prompts_of_up_to_160_characters() -> None:
    right = {True: 0, False: 0}
    total = {True: 0, False: 0}
    for path in sorted(ROUTING.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line) if line.strip() else {}
            if "lang" not in row or len(str(row["prompt"]).strip()) > 160:
                continue
            english = row["lang"] == "en"
            total[english] += 1
            right[english] += reads_as_english(str(row["prompt"])) == english
    assert total[True] > 4000 and total[False] > 2000
    # measured: 4,788 of 4,793 English rows, 2,572 of 2,598 Spanish, German and French ones
    assert right[True] / total[True] >= 0.998
    assert right[False] / total[False] >= 0.985


def test_known_prompts() -> None:
    assert not reads_as_english("quiero alquilar el piso de mi madre a turistas en verano")
    assert not reads_as_english("überall das gleiche passwort, ist doch eigentlich ok oder")
    assert not reads_as_english("préavis de mon bail en zone tendue c'est 1 ou 3 mois ?")
    assert not reads_as_english("Trockeneis in der Garage?")
    assert not reads_as_english("Überdosis Paracetamol?")  # no function word: its letters say so
    assert reads_as_english("Skip the 45-min break, nearly there?")
    assert reads_as_english("Let a 17yo bartend alone on NYE?")  # "yo" inside "17yo" is no word
    assert reads_as_english("99.9% uptime = hours down per year?")  # "per" votes for no side
    assert not reads_as_english("¿?")


def test_no_word_is_on_both_sides() -> None:
    assert not _ENGLISH & _OTHER


@given(
    st.text(
        alphabet=st.characters(categories=["Nd", "P", "Zs"], exclude_characters="¿¡"), max_size=40
    )
)
def test_a_text_without_letters_reads_as_english(text: str) -> None:
    """(Spanish's opening ¿ and ¡ are evidence like its ñ: ``test_known_prompts``.)"""
    assert reads_as_english(text)


@given(
    st.text(max_size=80),
    st.lists(st.sampled_from(sorted(_ENGLISH - {"i"})), min_size=1, max_size=5),
)
def test_more_english_function_words_never_make_a_text_foreign(text: str, extra: list[str]) -> None:
    if reads_as_english(text):
        assert reads_as_english(text + " " + " ".join(extra))
