"""The redaction engine: a registered key is removed wherever 8 of its characters appear in a
row, in whole text, in JSON-shaped data and in a stream cut at arbitrary chunk boundaries."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from loomc import secrets
from loomc.providers.failures import excerpt
from loomc.secrets import (
    REDACTED,
    StreamRedactor,
    redact,
    redact_data,
    redact_secrets,
    register_secret,
)

KEY = "tok_9QwErTy7uIoP3aSdFgHjKlZxCvBnM1"  # 34 characters, no vendor prefix
register_secret(KEY)
PIECES = {KEY[i : i + 8] for i in range(len(KEY) - 7)}


def _clean(text: str) -> bool:
    return not any(p in text for p in PIECES)


def test_a_key_cut_by_a_truncation_is_still_removed() -> None:
    """The old order (cut at 300, then redact) left 28 of 34 characters in the message."""
    body = "x" * 272 + KEY + " trailing"
    assert _clean(excerpt(body)) and _clean(redact(body[:300]))
    assert redact(KEY[6:]) == REDACTED and redact(KEY[:-6]) == REDACTED
    assert redact(f"a{KEY[3:12]}b") == f"a{REDACTED}b"


def test_data_keys_and_values_are_redacted() -> None:
    data = {"note": f"billed {KEY}", KEY: [KEY[2:20], 3, None], "n": 1}
    out = redact_data(data)
    assert _clean(repr(out)) and out["n"] == 1 and out[REDACTED][1:] == [3, None]


def test_answers_keep_unregistered_key_shapes() -> None:
    """Answers may legitimately talk about `sk-...` placeholders; only real keys are cut."""
    assert redact_secrets("use sk-your-key-here") == "use sk-your-key-here"
    assert "[REDACTED]" in redact("Authorization: Bearer abcdefghijkl")


pieces = st.sampled_from(
    [KEY, KEY[:8], KEY[5:20], KEY[-8:], KEY[:7], "hello ", " ", "\n", "sk-", "é", KEY[10:30]]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(pieces, max_size=12), st.data())
def test_stream_equals_whole_text_redaction(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=10)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    stream = StreamRedactor()
    out = "".join(stream.feed(c) for c in chunks) + stream.flush()
    assert out == redact_secrets(text)
    assert _clean(out)


def test_ordinary_text_streams_through_unchanged() -> None:
    """Only a tail that could begin a key waits; words ending in a space pass at once."""
    stream = StreamRedactor()
    assert [stream.feed(w) for w in ["Use ", "a ", "unique ", "index. "]] == [
        "Use ",
        "a ",
        "unique ",
        "index. ",
    ]


# Fragments of every key shape and of prose, in both cases and with the characters that `(?i)`
# folds onto ASCII letters (long s, Kelvin sign, dotless i, dotted I): the hint pattern that lets
# `scrub_keys` skip the full pattern must hold wherever the full pattern matches.
_FRAGMENTS = st.sampled_from(
    [
        "sk-", "SK-", "pk-", "rk-", "key-", "KEY-", "tok-", "Tok-", "sk_live_", "rk_TEST_",
        "AKIA", "akia", "AIza", "aiza", "ghp_", "GHO_", "github_pat_", "glpat-", "xoxb-",
        "XOXP-", "hf_", "HF_", "eyJ", "EYJ", "Bearer ", "bearer\t", "BEARER  ", ".", "=",
        "abcdefgh", "ABCDEFGHIJ", "0123456789", "A1b2C3d4E5f6G7h8", "_", "-", " ", "\n",
        "\u017f", "\u212a", "\u0131", "\u0130", "tokens <= 24_000", "s", "k",
    ]
)  # fmt: skip


@given(st.lists(_FRAGMENTS, max_size=12).map("".join))
@settings(max_examples=400, deadline=None)
def test_scrub_keys_shortcut_changes_nothing(text: str) -> None:
    full = secrets._key_shapes().sub(lambda m: (m.group("bearer") or "") + REDACTED, text)
    assert secrets.scrub_keys(text) == full
    if full != text:  # the shortcut is taken only where the full pattern finds nothing
        assert secrets._key_hints().search(text) is not None


def test_scrub_keys_still_removes_every_shape() -> None:
    shapes = [
        "sk-abcdefghijkl", "Bearer abcdefgh", "sk_live_abcdefgh12", "AKIA" + "A" * 16,
        "AIza" + "a" * 35, "ghp_" + "a" * 30, "github_pat_" + "a" * 30, "glpat-" + "a" * 20,
        "xoxb-" + "a" * 10, "hf_" + "a" * 30, "eyJ" + "a" * 10 + "." + "b" * 10 + ".c",
        "\u017fk-abcdefghijkl",  # long s folds onto s under (?i)
    ]  # fmt: skip
    for shape in shapes:
        assert REDACTED in secrets.scrub_keys(f"see {shape} here"), shape


_SOURCE_FRAGMENTS = st.sampled_from(
    [
        "sk-", "rk-", "pk-", "SK-", "sk_live_", "pk_test_", "AKIA", "akia", "AIza", "ghp_",
        "ghr_", "GHP_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "hf_", "Bearer ", "BEARER\t",
        "bEaReR  ", "A" * 16, "a1B2c3D4e5F6g7H8", "0123456789", "_", "-", " ", "\n", ".",
        "\u017f", "\u212a", "\u0130", "budget { calls <= 3 }", "x" * 35,
    ]
)  # fmt: skip


@given(st.lists(_SOURCE_FRAGMENTS, max_size=14).map("".join))
@settings(max_examples=400, deadline=None)
def test_source_key_shortcut_changes_nothing(text: str) -> None:
    """The substring hints skip the source-key pattern only where it finds nothing."""
    found = [m.span() for m in secrets._KEY_IN_SOURCE.finditer(text)]
    assert [m.span() for m in secrets.find_keys_in_source(text)] == found
    assert secrets.looks_like_key(text) == bool(found)
    assert secrets.scrub_source_keys(text) == secrets._KEY_IN_SOURCE.sub(REDACTED, text)
