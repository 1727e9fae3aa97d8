"""A stream that repeats a registered key back to back is redacted in time linear in it.

``StreamRedactor`` holds a run of key pieces raw while it may go on, and rescanned the whole
run at every chunk: a model repeating a key (``lm-studio``, a local server's placeholder key)
back to back in 4-character chunks took 5.5 s at 20,000 characters and 90 s at 80,000. A
chunk that extends the run is now scanned alone. Every chunk must release exactly what it
released before (the property against the old class below).
"""

from __future__ import annotations

from deadline import deadline
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc import secrets
from loomc.secrets import _SHINGLE, StreamRedactor, _cuts, _strip_registered, register_secret

# Registered for the whole test session (as tests/security/test_redaction.py does): strings no
# other test writes. A 10-character key like a local server's placeholder (`lm-studio`), a
# periodic one, and one under 8 characters (replaced whole, not by pieces).
KEYS = ("tok_9QwErTy7uIoP3aSdFgHjKlZxCvBnM1", "lq-studio9", "q9Zq9Zq9Zq9", "Qz7#k")
for _key in KEYS:
    register_secret(_key)


class OldStreamRedactor:
    """``StreamRedactor`` as it was before 2026-12-06."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, chunk: str) -> str:
        text = self._held + chunk
        split = len(text)
        if secrets._shingles:
            cuts = _cuts(text)
            if cuts and cuts[-1][1] > len(text) - _SHINGLE:
                split = cuts[-1][0]
            else:
                for n in range(min(_SHINGLE - 1, len(text)), 0, -1):
                    if text[-n:] in secrets._pieces:
                        split = len(text) - n
                        break
        self._held = text[split:]
        return _strip_registered(text[:split])

    def flush(self) -> str:
        held, self._held = self._held, ""
        return _strip_registered(held)


_PIECES = st.sampled_from(
    [
        *KEYS, KEYS[0][:8], KEYS[0][5:20], KEYS[0][-8:], KEYS[0][:7], "lq-stud", "io9", "q9Z",
        "Zq9", "lq", "-", "studio9", "Qz7", "#k", " ", "\n", "x", "é", "",
    ]
)  # fmt: skip


@settings(max_examples=1_000)
@given(st.lists(st.lists(_PIECES, max_size=4).map("".join), max_size=30))
def test_every_chunk_releases_what_it_did_before(chunks: list[str]) -> None:
    new, old = StreamRedactor(), OldStreamRedactor()
    for chunk in chunks:
        assert new.feed(chunk) == old.feed(chunk)
    assert new.flush() == old.flush()


@given(st.lists(st.sampled_from(["lq-studio9", "lq-", "studio9", "x"]), max_size=30), st.data())
def test_a_key_registered_mid_run_is_read_as_before(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    at = data.draw(st.integers(0, len(chunks)))
    new, old = StreamRedactor(), OldStreamRedactor()
    for i, chunk in enumerate(chunks):
        if i == at:
            with secrets.held_secret("studio9lq-stu"):
                assert new.feed(chunk) == old.feed(chunk)
        else:
            assert new.feed(chunk) == old.feed(chunk)
    assert new.flush() == old.flush()


def test_a_key_repeated_back_to_back_streams_in_seconds() -> None:
    """Before: 80,000 characters took 90 s; these 1,000,000 would take hours."""
    text = "lq-studio9" * 100_000
    with deadline(30, "redacting the stream"):
        stream = StreamRedactor()
        out = [stream.feed(text[i : i + 4]) for i in range(0, len(text), 4)]
        out.append(stream.flush())
    assert "".join(out) == "[REDACTED]"
