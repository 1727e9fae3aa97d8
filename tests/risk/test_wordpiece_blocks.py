"""``WordPiece.encode`` reads a long prompt block by block and stops once it has its ids.

The property: for any text and any block size, the ids are those of the one-block read (the
whole text normalized at once), so cutting at whitespace changes nothing; and a 2 MB prompt
costs what its first blocks cost.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.risk.wordpiece import WordPiece

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "ab", "##b", "##a", "é", "e", ",",
          "σ", "ς", "中", "the", "##s", "!"]  # fmt: skip
ALPHABET = [*"abAB ,!\t\n\rÉéΣσς中\u0301\u00a0\u2028\x00\x0b", "the", "The", "ΑΣ "]


@pytest.fixture(scope="module")
def vocab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(TOKENS) + "\n", encoding="utf-8")
    return path


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.sampled_from(ALPHABET), max_size=120),
    block=st.integers(1, 40),
    max_tokens=st.integers(3, 60),
)
def test_blocks_give_the_ids_of_the_whole_text(
    vocab: Path, parts: list[str], block: int, max_tokens: int
) -> None:
    text = "".join(parts)
    wp = WordPiece(vocab, max_tokens)
    assert wp.encode(text, block_chars=block) == wp.encode(text, block_chars=len(text) + 1)


def test_a_long_prompt_is_read_only_as_far_as_its_ids_go(vocab: Path) -> None:
    wp = WordPiece(vocab, 512)
    short = "ab " * 2_000
    started = time.process_time()
    ids = wp.encode(short + "b " * 1_000_000)  # 2 MB more, past every id that is kept
    assert ids == wp.encode(short) and len(ids) == 512
    assert time.process_time() - started < 5  # the whole text would take ~25 s of CPU
