"""Secrets: recognising key-shaped strings and removing resolved keys from any text.

Two mechanisms, both here so every stage (the artifact writer, the providers, the sinks) uses
the same ones:

- *registered* keys: each value resolved from ``env:NAME`` is registered; ``redact`` removes it
  wherever 8 consecutive characters of it appear (whole, cut by a truncation, split);
- *key-shaped* strings (``sk-...``, ``Bearer ...``, ``AKIA...``, ``ghp_...``): recognised by
  pattern, for diagnostics (a literal key in a policy or a ``.loom`` file) and for error text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Key-shaped strings: vendor prefixes, bearer tokens, JWTs. Long enough that prose is safe.
# Compiled on first use (`scrub_keys`, on error text): case-insensitive, it takes ~5 ms to
# compile, which `loomc check` and a run without errors never need.
_KEY_SHAPES_PATTERN = (
    r"(?i)(?P<bearer>bearer\s+)[A-Za-z0-9._~+/\-]{6,}=*"
    r"|\b(?:sk|pk|rk|key|tok)-[A-Za-z0-9_\-]{6,}"
    r"|\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_\-]{35}"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}"
    r"|\bglpat-[A-Za-z0-9_\-]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9\-]{10,}"
    r"|\bhf_[A-Za-z0-9]{30,}"
    r"|\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*"
)


# What every match of the pattern above holds: the literal part of each alternative, under the
# same `(?i)` (so the same case folding, `ſ` for `s` included). It compiles ~30x faster (no
# case-folded character classes), so text that holds none of them — most source lines that
# `loomc check` quotes — is returned without compiling the full pattern.
_KEY_HINTS_PATTERN = (
    r"(?i)bearer|(?:sk|pk|rk|key|tok)-|(?:sk|rk|pk)_(?:live|test)_|akia|aiza"
    r"|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|hf_|eyj"
)


@functools.cache
def _key_shapes() -> re.Pattern[str]:
    return re.compile(_KEY_SHAPES_PATTERN)


@functools.cache
def _key_hints() -> re.Pattern[str]:
    return re.compile(_KEY_HINTS_PATTERN)


# Unmistakable keys: what LOOM606 reports in source files and LOOM601 in any policy value.
_KEY_IN_SOURCE = re.compile(
    r"\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{16,}"
    r"|\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}"
    r"|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_\-]{35}"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}|\bglpat-[A-Za-z0-9_\-]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9\-]{10,}|\bhf_[A-Za-z0-9]{30,}"
    r"|(?i:\bbearer\s+)[A-Za-z0-9._~+/\-]{16,}"
)


# What every match of `_KEY_IN_SOURCE` holds, as plain substrings (case-sensitive, as the
# pattern is), plus `bearer` in any case (only ASCII letters fold onto b, e, a, r). Looking for
# them is ~50x faster than running the pattern over a whole `.loom` file, which
# `loomc check` does for every file.
_SOURCE_KEY_HINTS = (
    "sk-", "rk-", "pk-", "sk_", "rk_", "pk_", "AKIA", "AIza", "ghp_", "gho_", "ghu_", "ghs_",
    "ghr_", "github_pat_", "glpat-", "xox", "hf_",
)  # fmt: skip


def _may_hold_key(text: str) -> bool:
    return any(hint in text for hint in _SOURCE_KEY_HINTS) or "bearer" in text.lower()


def looks_like_key(text: str) -> bool:
    """True when ``text`` holds an unmistakable key (LOOM601 on policy values whose name does
    not already say they are credentials: a false alarm would block a valid policy)."""
    return _may_hold_key(text) and _KEY_IN_SOURCE.search(text) is not None


def find_keys_in_source(text: str) -> list[re.Match[str]]:
    """Unmistakable keys in a ``.loom`` file (LOOM606)."""
    return list(_KEY_IN_SOURCE.finditer(text)) if _may_hold_key(text) else []


def scrub_keys(text: str) -> str:
    """Key-shaped strings replaced by ``[REDACTED]`` (a ``Bearer `` prefix is kept)."""
    if _key_hints().search(text) is None:
        return text
    return _key_shapes().sub(lambda m: (m.group("bearer") or "") + REDACTED, text)


def scrub_source_keys(text: str) -> str:
    """Unmistakable keys in source text replaced (what the plan artifact carries)."""
    return _KEY_IN_SOURCE.sub(REDACTED, text) if _may_hold_key(text) else text


REDACTED = "[REDACTED]"
_SHINGLE = 8  # a registered key is removed wherever 8 of its characters appear in a row
_registered_secrets: set[str] = set()
_shingles: set[str] = set()
_pieces: set[str] = set()  # every 1..7-character substring: what a stream must hold back


def register_secret(value: str) -> None:
    """Remember a resolved key so that ``redact`` removes it from any text, whatever its shape.

    Keys of 8 characters or more are removed wherever any 8 consecutive characters of them
    appear: a key cut by a truncation, split across lines or quoted in part is still removed.
    """
    if not value or len(value) < 4:
        return
    _registered_secrets.add(value)
    _add_pieces(value, _shingles, _pieces)


def _add_pieces(value: str, shingles: set[str], pieces: set[str]) -> None:
    for i in range(len(value) - _SHINGLE + 1):
        shingles.add(value[i : i + _SHINGLE])
    if len(value) >= _SHINGLE:
        for n in range(1, _SHINGLE):
            pieces.update(value[i : i + n] for i in range(len(value) - n + 1))


_held: dict[str, int] = {}  # keys registered for a while only, with how many blocks hold them


@contextmanager
def held_secret(value: str) -> Iterator[None]:
    """Register ``value`` for the block only: a key pasted into the Studio for one run.

    Inside, ``redact`` removes it like any resolved key; on leaving, it is forgotten (its pieces
    leave the redaction sets, so the process keeps nothing of it) unless it was registered for
    good before the block or another block still holds it.
    """
    permanent = value in _registered_secrets and value not in _held
    register_secret(value)
    _held[value] = _held.get(value, 0) + 1
    try:
        yield
    finally:
        _held[value] -= 1
        if not _held[value]:
            del _held[value]
            if not permanent:
                _forget(value)


def _forget(value: str) -> None:
    """Drop ``value`` and rebuild the piece sets from the other keys, swapped in whole so a
    concurrent ``redact`` sees either the old sets or the new ones, never a partial one."""
    global _shingles, _pieces
    _registered_secrets.discard(value)
    shingles: set[str] = set()
    pieces: set[str] = set()
    for kept in list(_registered_secrets):
        _add_pieces(kept, shingles, pieces)
    _shingles, _pieces = shingles, pieces


def _cuts(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` covered by 8-character pieces of a registered key, merged."""
    cuts: list[tuple[int, int]] = []
    for i in range(len(text) - _SHINGLE + 1):
        if text[i : i + _SHINGLE] in _shingles:
            if cuts and i <= cuts[-1][1]:
                cuts[-1] = (cuts[-1][0], i + _SHINGLE)
            else:
                cuts.append((i, i + _SHINGLE))
    return cuts


def _strip_registered(text: str) -> str:
    for secret in _registered_secrets:
        if len(secret) < _SHINGLE and secret in text:
            text = text.replace(secret, REDACTED)
    if not _shingles or len(text) < _SHINGLE:
        return text
    cuts = _cuts(text)
    if not cuts:
        return text
    out, pos = [], 0
    for a, b in cuts:
        out += [text[pos:a], REDACTED]
        pos = b
    out.append(text[pos:])
    return "".join(out)


def redact(text: str) -> str:
    """Remove registered keys (whole or any 8-character piece) and key-shaped strings.

    Call it before truncating: a cut can leave a key fragment no pattern recognises.
    """
    return scrub_keys(_strip_registered(text))


def redact_secrets(text: str) -> str:
    """Only the registered keys: for model answers, where ``sk-...`` may be legitimate text."""
    return _strip_registered(text)


def redact_data(value: Any) -> Any:
    """``redact_secrets`` applied to every string (keys included) inside JSON-shaped data."""
    if isinstance(value, str):
        return _strip_registered(value)
    if isinstance(value, dict):
        return {redact_data(k): redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_data(v) for v in value)
    return value


class StreamRedactor:
    """Redact a token stream: a key split across chunks is still removed.

    Text is released as soon as it cannot be the start of a key piece: only the longest tail
    (at most 7 characters) that is itself part of a registered key waits for the next chunk,
    so ordinary text streams through unchanged; ``flush`` releases the rest at the end.
    """

    def __init__(self) -> None:
        self._held = ""
        # A held run of key pieces that may go on (a model repeating a key back to back): its
        # raw chunks, how long they are, where the run's merged cut ends in it, and the key
        # pieces it was measured against. A chunk that extends the run is scanned alone (with
        # the 7 characters before it), not the whole run again: that was quadratic, 20,000
        # characters of "lm-studio" repeated in 4-character chunks took 5.5 s, 80,000 90 s.
        self._run: list[str] = []
        self._run_len = 0
        self._run_end = 0
        self._run_tail = ""
        self._run_keys: tuple[set[str], int] | None = None

    def feed(self, chunk: str) -> str:
        if self._run:
            if self._run_goes_on(chunk):
                return ""
            text = "".join(self._run) + chunk
            self._run = []
        else:
            text = self._held + chunk
        split = len(text)
        if _shingles:
            cuts = _cuts(text)
            if cuts and cuts[-1][1] > len(text) - _SHINGLE:
                split = cuts[-1][0]  # a key piece may continue: hold it whole, raw
                self._start_run(text[split:], cuts[-1][1] - split)
            else:
                for n in range(min(_SHINGLE - 1, len(text)), 0, -1):
                    if text[-n:] in _pieces:
                        split = len(text) - n
                        break
        self._held = text[split:]
        return _strip_registered(text[:split])

    def _start_run(self, held: str, end: int) -> None:
        self._run, self._run_len, self._run_end = [held], len(held), end
        self._run_tail = held[-(_SHINGLE - 1) :]
        self._run_keys = (_shingles, len(_shingles))

    def _run_goes_on(self, chunk: str) -> bool:
        """Whether the held run's cut still reaches the last 8 characters with ``chunk``
        added (then ``chunk`` joins the run, and nothing is released: what ``feed`` would
        decide scanning the whole run again). False, with the run untouched, when the cut
        ends, a new cut starts after it, or the registered keys changed meanwhile."""
        if self._run_keys != (_shingles, len(_shingles)):
            return False
        if not chunk:
            return True
        # the shingles that end in `chunk`: those before were scanned when the run was held
        region = self._run_tail + chunk
        base = self._run_len - len(self._run_tail)
        end = self._run_end
        for j in range(len(region) - _SHINGLE + 1):
            if region[j : j + _SHINGLE] in _shingles:
                if base + j > end:
                    return False  # a separate cut: let `feed` decide on the whole text
                end = base + j + _SHINGLE
        if end <= self._run_len + len(chunk) - _SHINGLE:
            return False
        self._run.append(chunk)
        self._run_len += len(chunk)
        self._run_end = end
        self._run_tail = region[-(_SHINGLE - 1) :]
        return True

    def flush(self) -> str:
        held = "".join(self._run) if self._run else self._held
        self._held, self._run = "", []
        return _strip_registered(held)
