"""Many findings on one long source line render in time linear in the file.

``render_text`` quoted the whole source line under every finding, redacting and escaping it
again each time: a ``.loom`` file whose one line lists 3,000 undefined tiers (20,000
characters) took 18 s to render and wrote 20 MB; 40,000 characters, over a minute. A line is
now redacted and escaped once, and a line longer than ``EXCERPT`` is shown cut around the
span. Lines up to ``EXCERPT`` characters render exactly as before (the property below).

Many keys on one long line (one LOOM606 each) were still quadratic: each secret finding hid its
span in a copy of the line and redacted and escaped that copy again, and its caret line was as
long as the line. A line that is long or holds a secret span is now hidden (all its secret
spans), redacted and escaped once, with columns mapped through each step; no part of a key
is ever shown (the second property), whichever finding of the line is shown.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from deadline import deadline
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.checker.render import (
    EXCERPT,
    SECRET_CODES,
    SourceCache,
    hidden_value,
    render_text,
    visible,
)
from loomc.cli.main import main
from loomc.diagnostics import Diagnostic, Severity, Span
from loomc.secrets import REDACTED, find_keys_in_source, held_secret, redact

POLICY = Path(__file__).resolve().parents[2] / "policies" / "default.yaml"


def _hide_secret(source: str, column: int, end_column: int) -> tuple[str, int]:
    """The old renderer's hiding: the line with the span's value replaced, and the new span
    width for the caret."""
    a, b = column - 1, end_column - 1
    shown = hidden_value(source[a:b])
    return source[:a] + shown + source[b:], len(shown)


def _old_render_text(diagnostics: Sequence[Diagnostic], cache: SourceCache) -> str:
    """``render_text`` as it was before 2026-12-06."""
    blocks = []
    for d in diagnostics:
        s = d.span
        lines = [f"{s.where}: {d.severity.value}[{d.code}]: {d.message}"]
        source = cache.line(s.file, s.line)
        if source is not None:
            gutter = f"{s.line:>4} | "
            width = (
                (s.end_column - s.column) if s.end_line == s.line else len(source) - s.column + 1
            )
            if d.code in SECRET_CODES and s.end_line == s.line:
                source, width = _hide_secret(source, s.column, s.end_column)
            source = visible(redact(source))
            lines.append(gutter + source)
            lines.append(
                " " * (len(gutter) - 2) + "| " + " " * (s.column - 1) + "^" * max(1, width)
            )
        for rel in d.related:
            lines.append(f"  = note: {rel.span.where}: {rel.message}")
        if d.hint:
            lines.append(f"  = hint: {d.hint}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


_LINE = st.lists(
    st.sampled_from(["a", " ", "\t", "x: y", "sk-", "0123456789abcdef", "\x1b", "\u202e", "é"]),
    max_size=60,
).map("".join)


@st.composite
def _findings(draw: st.DrawFn) -> tuple[str, list[Diagnostic]]:
    lines = draw(st.lists(_LINE.filter(lambda t: len(t) <= EXCERPT), min_size=1, max_size=4))
    found = []
    for _ in range(draw(st.integers(1, 6))):
        line = draw(st.integers(1, len(lines) + 1))
        length = len(lines[line - 1]) if line <= len(lines) else 0
        column = draw(st.integers(1, length + 2))
        end_line = draw(st.sampled_from([line, line + 1]))
        end_column = draw(st.integers(column, column + 30)) if end_line == line else 1
        code = draw(st.sampled_from(["LOOM101", "LOOM215", *sorted(SECRET_CODES)]))
        span = Span("f.loom", line, column, end_line, end_column)
        found.append(
            Diagnostic(code, Severity.ERROR, "m", span, draw(st.sampled_from([None, "h"])))
        )
    return "\n".join(lines), found


def _ordinary(text: str, diagnostics: Sequence[Diagnostic], line: int) -> bool:
    """Whether the old renderer's blocks for ``line`` (up to ``EXCERPT`` characters) are
    right: the line holds no secret span and nothing on it is redacted or escaped, or one, which every finding on the line points at,
    with nothing before it that redacting or escaping changes in length. Otherwise the old
    renderer showed one finding's secret under another's caret, or its caret stood off its
    span."""
    lines = text.splitlines()
    if line > len(lines):
        return True
    on_line = [d for d in diagnostics if d.span.line == line]
    secret = {
        (d.span.column, d.span.end_column)
        for d in on_line
        if d.code in SECRET_CODES and d.span.end_line == line
    }
    if not secret:  # as written, unless showing it changes it (a caret after the change drifted)
        return visible(redact(lines[line - 1])) == lines[line - 1]
    if len(secret) > 1 or any(
        d.code not in SECRET_CODES or d.span.end_line != line for d in on_line
    ):
        return False
    ((column, end_column),) = secret
    source = lines[line - 1]
    if column > len(source) + 1:
        return False
    hidden, width = _hide_secret(source, column, end_column)
    upto = column - 1 + width
    return visible(redact(hidden))[:upto] == hidden[:upto]


@settings(max_examples=500)
@given(_findings())
def test_lines_up_to_the_excerpt_render_as_before(case: tuple[str, list[Diagnostic]]) -> None:
    """Block by block: a line's blocks are compared where the old renderer was right."""
    text, diagnostics = case
    cache = SourceCache({"f.loom": text})
    new = render_text(diagnostics, cache).split("\n\n")
    old = _old_render_text(diagnostics, cache).split("\n\n")
    assert len(new) == len(old) == len(diagnostics)
    for d, a, b in zip(diagnostics, new, old, strict=True):
        if _ordinary(text, diagnostics, d.span.line):
            assert a == b


@pytest.mark.parametrize(
    ("before", "held"),
    [
        ("\x07\x07\x07 ", None),  # escaped as \x07: each 4 characters shown for 1
        ("hunter2hunter2 ", "hunter2hunter2"),  # a resolved key: shown as [REDACTED]
        ("\u202e ", None),  # a bidi control
    ],
)
def test_a_caret_stands_under_its_span_after_a_change_on_a_short_line(
    before: str, held: str | None
) -> None:
    """A short line without secret findings was shown redacted and escaped with the carets at
    the written column, so a finding after a key or a control character pointed beside its
    text."""
    line = f'  step a : writer(drafter) {{ task "{before}hi" max_tokens 100 }}'
    at = line.index("max_tokens")
    span = Span("f.loom", 1, at + 1, 1, at + 1 + len("max_tokens"))
    with held_secret(held) if held else contextlib.nullcontext():
        out = render_text(
            [Diagnostic("LOOM215", Severity.ERROR, "m", span)], SourceCache({"f.loom": line})
        )
    _, excerpt, caret = out.splitlines()[:3]
    start = caret.index("^")
    assert excerpt[start : start + len("max_tokens")] == "max_tokens"
    assert caret.endswith("^" * len("max_tokens")) and not caret.endswith("^" * 11)
    assert held is None or held not in out


def test_a_long_line_is_cut_around_the_span() -> None:
    line = "tiers " + ", ".join(f"t{i}" for i in range(300))
    at = line.index("t150")
    d = Diagnostic("LOOM215", Severity.ERROR, "m", Span("f.loom", 1, at + 1, 1, at + 5))
    excerpt, caret = render_text([d], SourceCache({"f.loom": line})).splitlines()[1:3]
    assert excerpt.startswith("   1 | ...") and excerpt.endswith("...")
    assert len(excerpt) == len("   1 | ") + EXCERPT + 6
    assert excerpt[caret.index("^") :].startswith("t150")
    assert caret.endswith("^^^^") and not caret.endswith("^^^^^")


def test_many_findings_on_one_long_line_render_in_seconds() -> None:
    """Before: 20,000 characters and 2,857 findings, 18 s; this line is 600,000 characters."""
    names = [f"t{i}" for i in range(100_000)]
    line = "  tiers " + ", ".join(names)
    found, at = [], len("  tiers ")
    for name in names:
        span = Span("f.loom", 1, at + 1, 1, at + 1 + len(name))
        found.append(Diagnostic("LOOM215", Severity.ERROR, f"tier {name!r} is not defined", span))
        at += len(name) + 2
    with deadline(30, "100,000 findings on one line"):
        out = render_text(found, SourceCache({"f.loom": line}))
    assert len(out) < len(found) * (2 * EXCERPT)  # an excerpt per finding, not the line


_KEYS = st.one_of(
    st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=16, max_size=40).map("sk-".__add__),
    st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=16, max_size=16).map("AKIA".__add__),
    st.text(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=30, max_size=40
    ).map("ghp_".__add__),
    st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=16, max_size=30).map(
        "Bearer ".__add__
    ),
).filter(lambda key: "REDACTED" not in key)
_SECRET = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=8, max_size=24)
_FILLER = st.sampled_from(
    [
        " ",
        ", ",
        "# ",
        "x: ",
        "\t",
        "\x1b",
        "é",
        "\u202e",
        "(",
        "sk-",
        " " * 150,
        ", " * 80,
        "é" * 60,
    ]
)


@st.composite
def _keys_on_a_line(draw: st.DrawFn) -> tuple[str, list[Diagnostic], list[str], list[str]]:
    """One line of filler, keys (LOOM606, where the checker finds them), secrets only a
    LOOM601 span says are secret and registered keys (no finding: ``redact`` removes them),
    with findings of other codes anywhere on the line."""
    parts: list[str] = []
    placed: list[tuple[int, str]] = []  # where each secret is
    registered: list[str] = []
    at = 0
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["filler", "filler", "key", "secret", "registered"]))
        part = draw(_FILLER if kind == "filler" else _KEYS if kind == "key" else _SECRET)
        if kind != "filler":
            part = " " + part + " "  # apart from the filler, as the checker would see it
        if kind == "secret":
            placed.append((at + 1, part.strip()))
        if kind == "registered":  # a resolved key: `redact` removes any 8 characters of it
            registered.append(part.strip())
        parts.append(part)
        at += len(part)
    line = "".join(parts)
    found = []
    for m in find_keys_in_source(line):
        span = Span("f.loom", 1, m.start() + 1, 1, m.end() + 1)
        found.append(Diagnostic("LOOM606", Severity.ERROR, "m", span))
    for start, secret in placed:
        span = Span("f.loom", 1, start + 1, 1, start + 1 + len(secret))
        found.append(Diagnostic("LOOM601", Severity.ERROR, "m", span))
    for _ in range(draw(st.integers(0, 5))):
        column = draw(st.integers(1, len(line) + 1))
        end_line = draw(st.sampled_from([1, 1, 2]))
        end_column = draw(st.integers(column, len(line) + 1)) if end_line == 1 else 1
        span = Span("f.loom", 1, column, end_line, end_column)
        found.append(Diagnostic("LOOM215", Severity.ERROR, "m", span))
    found = draw(st.permutations(found))
    keys = [m.group() for m in find_keys_in_source(line)] + [s for _, s in placed]
    return line, found, keys + registered, registered


@settings(max_examples=300, deadline=None)
@given(_keys_on_a_line(), st.integers(0, 4))
def test_no_part_of_a_key_is_ever_shown(
    case: tuple[str, list[Diagnostic], list[str], list[str]], limit: int
) -> None:
    """Keys at random places on a short or long line, findings of every kind on it: no 8
    characters of a key in a row are shown, whichever finding quotes the line and whichever
    findings a ``limit`` leaves out, and each caret stands inside its excerpt."""
    line, diagnostics, keys, registered = case
    with contextlib.ExitStack() as held:
        for key in registered:
            held.enter_context(held_secret(key))
        out = render_text(diagnostics, SourceCache({"f.loom": line}), limit=limit)
    for key in keys:
        for i in range(len(key) - 7):
            assert key[i : i + 8] not in out, (key, i)
    # a short line without secret findings is shown as it always was, its carets unmapped
    mapped = len(line) > EXCERPT or any(d.code in SECRET_CODES for d in diagnostics)
    rows = out.split("\n")
    for excerpt, caret in itertools.pairwise(rows):
        if excerpt.startswith("   1 | ") and caret.startswith("     | "):
            assert len(excerpt) <= len("   1 | ") + EXCERPT + 6
            assert not mapped or caret.index("^") <= len(excerpt)


def test_a_key_under_another_findings_caret_is_hidden() -> None:
    """A flow-style policy line with three credentials: each LOOM601 showed the others."""
    line = '  gw: {base_url: "http://u:pw@h/v1", api_key: hunter2hunter2, headers: {A: "Basic xyzzyxyzzy"}}'
    values = ['"http://u:pw@h/v1"', "hunter2hunter2", '"Basic xyzzyxyzzy"']
    found = []
    for value in values:
        at = line.index(value)
        span = Span("p.yaml", 1, at + 1, 1, at + 1 + len(value))
        found.append(Diagnostic("LOOM601", Severity.ERROR, "m", span))
    out = render_text(found, SourceCache({"p.yaml": line}))
    assert "hunter2" not in out and "u:pw" not in out and "xyzzy" not in out
    shown = "  gw: {base_url: [REDACTED], api_key: [REDACTED], headers: {A: [REDACTED]}}"
    for block in out.split("\n\n"):
        excerpt, caret = block.splitlines()[1:3]
        assert excerpt == "   1 | " + shown
        start = caret.index("^")
        assert excerpt[start : start + len(REDACTED)] == REDACTED
        assert caret.endswith("^" * len(REDACTED)) and not caret.endswith("^" * 11)


def test_many_keys_on_one_line_check_in_seconds(tmp_path: Path) -> None:
    """`loomc check` on a comment line of 10,000 keys (300,000 characters). Before: 2,667
    keys (80,000 characters) took 8 s and wrote 45 MB, quadratic; this one needed minutes."""
    keys = [f"sk-EXAMPLEnotARealKey{i:08d}" for i in range(10_000)]
    loom = tmp_path / "keys.loom"
    loom.write_text(
        "# " + " ".join(keys) + "\n"
        'pipeline p {\n  step a : writer(drafter) { task "hi" max_tokens 100 }\n  answer a\n}\n',
        encoding="utf-8",
    )
    out = io.StringIO()
    with (
        deadline(30, "10,000 keys on one line"),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(out),
    ):
        rc = main(["check", str(loom), "--policy", str(POLICY), "--max-diagnostics", "0"])
    text = out.getvalue()
    assert rc == 1
    assert text.count("error[LOOM606]") == len(keys)
    assert len(text) < len(keys) * 3 * EXCERPT  # a window per finding, not the line
    quoted = [row for row in text.splitlines() if row.startswith("   1 | ")]
    assert len(quoted) == len(keys)
    assert all(re.search(r"[\w-]{8}", row.replace(REDACTED, "")) is None for row in quoted)
    carets = [row for row in text.splitlines() if row.startswith("     | ")]
    assert len(carets) == len(keys)
    assert all(re.fullmatch(r"     \| +\^{10}", row) for row in carets)
    assert max(map(len, carets)) <= len("     | ") + EXCERPT + 6
