"""Render diagnostics as human text (with source excerpt and caret) or JSON. The JSON document
is the stable machine interface; SARIF and GitHub annotations, the formats CI services read,
are ``loomc.checker.ci_formats``."""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from pathlib import Path

from loomc.diagnostics import Diagnostic, Severity
from loomc.secrets import REDACTED, redact

FORMATS = ("text", "json", "sarif", "github")
PROJECT_URL = "https://github.com/loomc/loomc"


class SourceCache:
    """Source lines for excerpts, read once per file and tolerant of unreadable files."""

    def __init__(self, sources: dict[str, str] | None = None) -> None:
        self._lines: dict[str, list[str]] = {k: v.splitlines() for k, v in (sources or {}).items()}

    def line(self, file: str, number: int) -> str | None:
        if file not in self._lines:
            try:
                self._lines[file] = Path(file).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                self._lines[file] = []
        lines = self._lines[file]
        return lines[number - 1] if 0 < number <= len(lines) else None


SECRET_CODES = frozenset({"LOOM601", "LOOM606"})
"""Codes whose span holds a literal key: the excerpt shows where it is, never what it is."""


def hidden_value(segment: str) -> str:
    """What a secret span shows instead of its text: its key kept, the value replaced
    (``api_key: [REDACTED]``)."""
    colon = segment.find(": ")
    return (segment[: colon + 2] if colon >= 0 else "") + REDACTED


def visible(text: str) -> str:
    """Control characters of a source line shown as escapes (a file's bytes never drive the
    terminal that prints its diagnostics)."""
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in text)


EXCERPT = 400
"""The most of a source line an excerpt shows. A longer line is cut around the span, ``...``
where it is cut, so that many findings on one long line (a ``tiers`` list of 10,000 names)
render in time and space linear in the file, not one whole line per finding: 20,000
characters of such a list took 18 s to render, 40,000 over a minute."""


def _excerpt(text: str, column: int) -> tuple[str, int, int | None]:
    """``text`` cut to ``EXCERPT`` characters around ``column`` (1-based): the excerpt, the
    column's place in it, and, where the line was cut, how many of its characters the
    excerpt shows from the column on (a shorter line is shown whole, as it always was)."""
    if len(text) <= EXCERPT:
        return text, column, None
    start = max(0, min(column - 1 - EXCERPT // 4, len(text) - EXCERPT))
    end = start + EXCERPT
    head = "..." if start else ""
    tail = "..." if end < len(text) else ""
    return head + text[start:end] + tail, column - start + len(head), end - column + 1


def summary(diagnostics: Sequence[Diagnostic], **extra: object) -> dict[str, object]:
    return {
        "errors": sum(d.severity is Severity.ERROR for d in diagnostics),
        "warnings": sum(d.severity is Severity.WARNING for d in diagnostics),
        "notes": sum(d.severity is Severity.NOTE for d in diagnostics),
        **extra,
    }


MAX_SHOWN = 50
"""Diagnostics a terminal shows by default (``loomc check --max-diagnostics``; clang stops at
20 errors): a file with thousands of findings prints the first fifty and a count, and the
summary line and ``--format json``/``sarif`` keep every one."""


def printed(diagnostics: Sequence[Diagnostic], limit: int) -> list[Diagnostic]:
    """The diagnostics to print under ``limit`` (0: all). When some must be left out, errors
    come first, so no error hides behind a screen of warnings; what is shown keeps its order."""
    if limit <= 0 or len(diagnostics) <= limit:
        return list(diagnostics)
    keep = sorted(range(len(diagnostics)), key=lambda i: (not diagnostics[i].is_error, i))
    return [diagnostics[i] for i in sorted(keep[:limit])]


def left_out(diagnostics: Sequence[Diagnostic], kept: Sequence[Diagnostic]) -> str:
    """The line that says what ``printed`` left out of ``diagnostics`` to keep ``kept`` ("" when
    nothing was)."""
    hidden = len(diagnostics) - len(kept)
    if hidden <= 0:
        return ""
    errors = sum(d.is_error for d in diagnostics) - sum(d.is_error for d in kept)
    return (
        f"... and {hidden} more diagnostic(s) not shown ({errors} error(s)); "
        "`loomc check --max-diagnostics 0` shows every one"
    )


def render_text(
    diagnostics: Sequence[Diagnostic], cache: SourceCache | None = None, *, limit: int = 0
) -> str:
    """The diagnostics as a compiler prints them: the message, the source line (escaped, its
    secrets redacted) and carets; at most ``limit`` of them (0: all) and a line saying how many
    more there are. Secrets are found from every diagnostic, shown or not, so a line printed
    for one finding never shows a key whose own finding was left out."""
    cache = cache or SourceCache()
    shown: dict[tuple[str, int], str] = {}  # each line redacted and escaped once, not per finding
    safe: dict[tuple[str, int], _SafeLine] = {}  # a long line, or one that showing changes
    secrets: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for d in diagnostics:
        if d.code in SECRET_CODES and d.span.end_line == d.span.line:
            secrets.setdefault((d.span.file, d.span.line), []).append(
                (d.span.column, d.span.end_column)
            )
    blocks = []
    kept = printed(diagnostics, limit)
    for d in kept:
        s = d.span
        lines = [f"{s.where}: {d.severity.value}[{d.code}]: {d.message}"]
        source = cache.line(s.file, s.line)
        if source is not None:
            gutter = f"{s.line:>4} | "
            key = (s.file, s.line)
            plain = len(source) <= EXCERPT and key not in secrets
            if plain and key not in shown:
                shown[key] = visible(redact(source))
            if not plain or shown[key] != source:  # carets mapped through what changed
                if key not in safe:
                    safe[key] = _SafeLine(source, secrets.get(key, ()))
                source, column, width = safe[key].excerpt(
                    s.column, s.end_column if s.end_line == s.line else None
                )
            else:  # a short line nothing redacts or escapes is shown as written
                column = s.column
                width = (
                    (s.end_column - s.column)
                    if s.end_line == s.line
                    else len(source) - s.column + 1
                )
            lines.append(gutter + source)
            lines.append(" " * (len(gutter) - 2) + "| " + " " * (column - 1) + "^" * max(1, width))
        for rel in d.related:
            lines.append(f"  = note: {rel.span.where}: {rel.message}")
        if d.hint:
            lines.append(f"  = hint: {d.hint}")
        blocks.append("\n".join(lines))
    more = left_out(diagnostics, kept)
    return "\n\n".join([*blocks, more] if more else blocks)


class _SafeLine:
    """A source line made safe to show, once for all its findings: a line over ``EXCERPT``
    characters, one that holds a secret span, or one that redacting or escaping changes (a
    registered key, a control character: the caret of a finding after it drifted by the
    difference).

    Every secret span on the line (LOOM601/LOOM606) is hidden (``hidden_value``),
    whichever of the line's findings is shown (a policy line ``{base_url: ..., api_key: ...}``
    showed one finding's literal key under the other's caret); the result is redacted, then
    escaped, whole and once; each finding copies only its window (cut after redacting: a key
    across the cut is never shown in part). Columns are mapped through each step, since a
    hidden span, a ``[REDACTED]`` and an escape each change the length of what precedes a
    span: the caret stands under its span, and the caret line is no longer than the window.

    Hiding each secret finding's span in its own copy of the line, then redacting and escaping
    that copy, was quadratic: 2,667 keys on one 80,000-character comment line took 8 s and
    wrote 45 MB (the caret lines, at the unmapped column, as long as the line).
    """

    def __init__(self, source: str, secrets: Sequence[tuple[int, int]]) -> None:
        # 1. the secret spans hidden (overlapping ones as one, as many cover the same value)
        spans: list[tuple[int, int, int]] = []  # (start, end in the line, end as written)
        for column, end_column in sorted(set(secrets)):
            a = min(max(0, column - 1), len(source))
            written = max(a, end_column - 1)
            if spans and a < spans[-1][1]:
                a, written = spans[-1][0], max(written, spans[-1][2])
                spans.pop()
            spans.append((a, min(written, len(source)), written))
        out: list[str] = []
        self._hidden: list[tuple[int, int, int, int]] = []  # (line a, b, hidden a, b)
        pos = at = 0
        for a, b, written in spans:
            replaced = hidden_value(source[a:b])
            out += [source[pos:a], replaced]
            at += a - pos
            self._hidden.append((a, written, at, at + len(replaced)))
            at += len(replaced)
            pos = b
        out.append(source[pos:])
        hid = "".join(out)
        self._hidden_starts = [h[0] for h in self._hidden]
        # 2. redacted: which pieces of `hid` are kept, and where they are in `red`
        red = redact(hid)
        self._segments = _segments(hid, red)
        self._seg_starts = [g[0] for g in self._segments]
        self._hid_len, self._red_len = len(hid), len(red)
        # 3. escaped: where each character of `red` starts in `text`
        self.text = visible(red)
        self._starts: list[int] | None = None
        if len(self.text) != len(red):
            starts, n = [], 0
            for c in red:
                starts.append(n)
                n += 1 if c.isprintable() or c == "\t" else len(repr(c)) - 2
            self._starts = starts

    def _to_hid(self, p: int, end: bool) -> int:
        i = bisect.bisect_right(self._hidden_starts, p) - 1
        if i < 0:
            return p
        a, b, ha, hb = self._hidden[i]
        if p == a:  # a span's start (an empty span's end: past its replacement)
            return hb if end and a == b else ha
        if p < b:  # inside a hidden span: its replacement's start, or end
            return hb if end else ha
        return hb + p - b

    def _to_red(self, h: int, end: bool) -> int:
        if end and h == 0:
            return 0
        if h >= self._hid_len:
            return self._red_len + h - self._hid_len
        j = bisect.bisect_right(self._seg_starts, h - end) - 1
        ha, r, _, kept = self._segments[max(j, 0)]
        if kept:
            return min(r + h - ha, self._red_len)
        return r + len(REDACTED) if end else r  # inside a redacted part: its [REDACTED]

    def _to_text(self, r: int) -> int:
        if self._starts is None:
            return r
        return self._starts[r] if r < len(self._starts) else len(self.text) + r - len(self._starts)

    def column(self, column: int, end: bool = False) -> int:
        """Where the line's 1-based ``column`` is in ``self.text`` (0-based). A position
        inside a hidden or redacted span is its replacement's start, or its end (``end``: the
        column just past a span)."""
        p = max(0, column - 1)
        return self._to_text(self._to_red(self._to_hid(p, end), end))

    def excerpt(self, column: int, end_column: int | None) -> tuple[str, int, int]:
        """The window shown for a span from ``column`` to ``end_column`` (None: the span
        goes on to a later line), its caret's column in the window, and the caret's width."""
        start = self.column(column)
        end = len(self.text) if end_column is None else self.column(end_column, end=True)
        text, at, room = _excerpt(self.text, start + 1)
        width = end - start
        if room is not None and room < width:  # the span goes on past the excerpt's end
            width = room
        return text, at, width


def _segments(hid: str, red: str) -> list[tuple[int, int, int, bool]]:
    """How ``red = redact(hid)`` is made of ``hid``: (start in ``hid``, start in ``red``,
    length in ``hid``, kept), in order, each part of ``hid`` either kept or replaced by one
    ``[REDACTED]``. ``redact`` only replaces parts of a text by ``[REDACTED]``, so the text
    between two of them in ``red`` is found in ``hid`` after the previous one, and the last
    ends ``hid``. This places carets only: what is shown is ``red`` itself."""
    pieces = red.split(REDACTED)
    fallback = [(0, 0, min(len(hid), len(red)), True)]  # carets as if nothing was replaced
    if len(pieces) == 1 or not hid.startswith(pieces[0]):
        return fallback
    segments: list[tuple[int, int, int, bool]] = []
    h = r = 0
    for i, piece in enumerate(pieces):
        if i:  # the [REDACTED] before this piece: hid[h:e]
            if i == len(pieces) - 1:
                e = len(hid) - len(piece)
                e = e if e >= h and hid.endswith(piece) else -1
            elif hid.startswith(REDACTED, h) and hid.startswith(piece, h + len(REDACTED)):
                e = h + len(REDACTED)  # a [REDACTED] already in the text
            else:
                e = hid.find(piece, h + 1) if piece else h
            if e < 0:
                return fallback
            segments.append((h, r, e - h, False))
            h, r = e, r + len(REDACTED)
        if piece:
            segments.append((h, r, len(piece), True))
            h, r = h + len(piece), r + len(piece)
    return segments


def render_json(diagnostics: Sequence[Diagnostic], **extra: object) -> str:
    doc = {
        "diagnostics": [d.to_json() for d in diagnostics],
        "summary": summary(diagnostics, **extra),
    }
    return json.dumps(doc, indent=2, sort_keys=False)
