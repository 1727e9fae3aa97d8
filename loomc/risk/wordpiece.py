"""BERT's uncased WordPiece tokenizer in plain Python, from the model folder's ``vocab.txt``.

Why not the ``tokenizers`` library: ``Tokenizer.from_file`` builds its tables while holding the
GIL (~0.1-0.4 s, during which no other thread runs, an event loop included), and it is one more
compiled dependency for a tokenizer that is 60 lines of Python. This one reads the vocabulary
with the GIL released between lines, and a prompt of a few dozen words tokenizes in ~0.1 ms.
``tests/risk/test_wordpiece.py`` checks it against ``tokenizers`` on every routing prompt and on
generated text, id for id (characters newer than Python's Unicode database, category ``Cn``
here, are dropped as control characters where the library may know them).

The steps are those of the model's ``tokenizer.json`` (BertNormalizer with lowercase and accent
stripping, Chinese characters spaced out; BertPreTokenizer; WordPiece with ``##`` continuations
and ``[UNK]`` for words over 100 characters or without a split; ``[CLS] ... [SEP]``).
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

MAX_WORD_CHARS = 100


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf", "Cn", "Co", "Cs")


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B920 <= cp <= 0x2CEAF  # sic: the tokenizers library (BERT itself has 0x2B820)
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


class WordPiece:
    """``encode(text)`` -> token ids with ``[CLS]``/``[SEP]``, at most ``max_tokens`` of them."""

    def __init__(self, vocab_file: Path, max_tokens: int) -> None:
        with vocab_file.open(encoding="utf-8") as fh:
            self.vocab = {line.rstrip("\n"): i for i, line in enumerate(fh)}
        self.unk, self.cls, self.sep = (self.vocab[t] for t in ("[UNK]", "[CLS]", "[SEP]"))
        self.max_tokens = max_tokens
        self._cache: dict[str, list[int]] = {}

    def normalize(self, text: str) -> str:
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or _is_control(ch):
                continue
            if _is_whitespace(ch):
                out.append(" ")
            elif _is_cjk(cp):
                out.append(f" {ch} ")
            else:
                out.append(ch)
        text = unicodedata.normalize("NFD", "".join(out).lower())
        return "".join(ch for ch in text if unicodedata.category(ch) != "Mn")

    def words(self, text: str) -> list[str]:
        out: list[str] = []
        for chunk in text.split():
            start = 0
            for i, ch in enumerate(chunk):
                if _is_punctuation(ch):
                    if i > start:
                        out.append(chunk[start:i])
                    out.append(ch)
                    start = i + 1
            if start < len(chunk):
                out.append(chunk[start:])
        return out

    def word_ids(self, word: str) -> list[int]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        ids: list[int] = []
        if len(word) > MAX_WORD_CHARS:
            ids = [self.unk]
        else:
            start = 0
            while start < len(word):
                end = len(word)
                found = None
                while start < end:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    found = self.vocab.get(piece)
                    if found is not None:
                        break
                    end -= 1
                if found is None:
                    ids = [self.unk]
                    break
                ids.append(found)
                start = end
        if len(self._cache) < 100_000:
            self._cache[word] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        ids = [i for w in self.words(self.normalize(text)) for i in self.word_ids(w)]
        return [self.cls, *ids[: self.max_tokens - 2], self.sep]
