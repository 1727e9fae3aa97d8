"""Many findings on one long source line render in time linear in the file.

``render_text`` quoted the whole source line under every finding, redacting and escaping it
again each time: a ``.loom`` file whose one line lists 3,000 undefined tiers (20,000
characters) took 18 s to render and wrote 20 MB; 40,000 characters, over a minute. A line is
now redacted and escaped once, and a line longer than ``EXCERPT`` is shown cut around the
span. Lines up to ``EXCERPT`` characters render exactly as before (the property below).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.checker.render import (
    EXCERPT,
    SECRET_CODES,
    SourceCache,
    _hide_secret,
    render_text,
    visible,
)
from loomc.diagnostics import Diagnostic, Severity, Span
from loomc.secrets import redact


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


@settings(max_examples=500)
@given(_findings())
def test_lines_up_to_the_excerpt_render_as_before(case: tuple[str, list[Diagnostic]]) -> None:
    text, diagnostics = case
    cache = SourceCache({"f.loom": text})
    assert render_text(diagnostics, cache) == _old_render_text(diagnostics, cache)


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
    with _deadline(30, "100,000 findings on one line"):
        out = render_text(found, SourceCache({"f.loom": line}))
    assert len(out) < len(found) * (2 * EXCERPT)  # an excerpt per finding, not the line


@contextmanager
def _deadline(seconds: int, what: str) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise AssertionError(f"{what}: still rendering after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    except AssertionError as exc:
        raise AssertionError(str(exc)) from None  # a fresh traceback pytest can always format
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
