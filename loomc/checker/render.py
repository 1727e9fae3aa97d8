"""Render diagnostics as human text (with source excerpt and caret), JSON, SARIF 2.1.0 or
GitHub workflow annotations. The JSON document is the stable machine interface."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from loomc import __version__
from loomc.codes import CODES
from loomc.diagnostics import Diagnostic, Severity
from loomc.frozen import replace
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


def _hide_secret(source: str, column: int, end_column: int) -> tuple[str, int]:
    """The source line with the span's value replaced (``api_key: [REDACTED]``), and the new
    span width for the caret."""
    a, b = column - 1, end_column - 1
    segment = source[a:b]
    colon = segment.find(": ")
    shown = (segment[: colon + 2] if colon >= 0 else "") + REDACTED
    return source[:a] + shown + source[b:], len(shown)


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


def render_text(diagnostics: Sequence[Diagnostic], cache: SourceCache | None = None) -> str:
    cache = cache or SourceCache()
    shown: dict[tuple[str, int], str] = {}  # each line redacted and escaped once, not per finding
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
            else:
                key = (s.file, s.line)
                if key not in shown:
                    shown[key] = visible(redact(source))
                source = shown[key]
            # cut after redacting: a key across the cut is never shown in part
            source, column, room = _excerpt(source, s.column)
            if room is not None and room < width:  # the span goes on past the excerpt's end
                width = room
            lines.append(gutter + source)
            lines.append(" " * (len(gutter) - 2) + "| " + " " * (column - 1) + "^" * max(1, width))
        for rel in d.related:
            lines.append(f"  = note: {rel.span.where}: {rel.message}")
        if d.hint:
            lines.append(f"  = hint: {d.hint}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render_json(diagnostics: Sequence[Diagnostic], **extra: object) -> str:
    doc = {
        "diagnostics": [d.to_json() for d in diagnostics],
        "summary": summary(diagnostics, **extra),
    }
    return json.dumps(doc, indent=2, sort_keys=False)


_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


_POLICY_NAMED = re.compile(r"policy '((?:[^'\\]|\\.)*)'")


def unique(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """One finding per problem. A pipeline checked against several policies reports the same
    problem once per policy, differing only in the policy's name; CI annotations want it once,
    naming every policy (``unknown worker 'x' (policies 'default', 'dot')``)."""
    groups: dict[tuple[object, ...], list[Diagnostic]] = {}
    for d in diagnostics:
        key = (d.code, d.severity, d.span, _POLICY_NAMED.sub("policy", d.message), d.related)
        groups.setdefault(key, []).append(d)
    out = []
    for found in groups.values():
        first = found[0]
        names = list(dict.fromkeys(n for d in found for n in _POLICY_NAMED.findall(d.message)))
        if len(names) > 1:
            listed = ", ".join(repr(n) for n in names)
            message = _POLICY_NAMED.sub(
                f"policies {listed}".replace("\\", "\\\\"), first.message, count=1
            )
            first = replace(first, message=message)
        out.append(first)
    return out


def fingerprint(d: Diagnostic) -> str:
    """Stable across runs and line moves: code, file and message (SARIF partialFingerprints)."""
    text = "\0".join((d.code, Path(d.span.file).as_posix(), d.message))
    import hashlib  # only SARIF needs it (OpenSSL, ~3 ms to load)

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def render_sarif(diagnostics: Sequence[Diagnostic]) -> str:
    diagnostics = unique(diagnostics)
    used = sorted({d.code for d in diagnostics})
    rules = [
        {
            "id": code,
            "shortDescription": {"text": CODES.get(code, code)},
            "helpUri": f"{PROJECT_URL}/blob/main/docs/diagnostics.md#{code.lower()}",
        }
        for code in used
    ]
    index = {code: i for i, code in enumerate(used)}
    results = []
    for d in diagnostics:
        s = d.span
        result: dict[str, object] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": d.message + (f" (hint: {d.hint})" if d.hint else "")},
            "locations": [_location(s.file, s.line, s.column, s.end_line, s.end_column)],
            "partialFingerprints": {"loomc/v1": fingerprint(d)},
        }
        if d.related:
            result["relatedLocations"] = [
                {
                    **_location(
                        r.span.file, r.span.line, r.span.column, r.span.end_line, r.span.end_column
                    ),
                    "id": i,
                    "message": {"text": r.message},
                }
                for i, r in enumerate(d.related)
            ]
        results.append(result)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "loomc",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": PROJECT_URL,
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2)


def _location(file: str, line: int, col: int, end_line: int, end_col: int) -> dict[str, object]:
    if line == 0:  # the file as a whole: SARIF's region is optional
        return {"physicalLocation": {"artifactLocation": {"uri": Path(file).as_posix()}}}
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": Path(file).as_posix()},
            "region": {
                "startLine": line,
                "startColumn": col,
                "endLine": end_line,
                "endColumn": max(end_col, col + 1) if end_line == line else end_col,
            },
        }
    }


def _gh_data(text: str) -> str:
    """Workflow-command message data: ``%``, CR and LF are escaped (the runner's own rule)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(value: object) -> str:
    """Workflow-command property values also escape ``:`` and ``,`` (they delimit properties)."""
    return _gh_data(str(value)).replace(":", "%3A").replace(",", "%2C")


def render_github(diagnostics: Sequence[Diagnostic]) -> str:
    out = []
    for d in unique(diagnostics):
        kind = {"error": "error", "warning": "warning", "note": "notice"}[d.severity.value]
        s = d.span
        msg = d.message + (f" — hint: {d.hint}" if d.hint else "")
        props: dict[str, object] = {"file": s.file}
        if s.line:  # a whole-file span names the file alone
            props |= {"line": s.line, "col": s.column, "endLine": s.end_line}
            props |= {"endColumn": s.end_column}
        props["title"] = d.code
        head = ",".join(f"{k}={_gh_property(v)}" for k, v in props.items())
        out.append(f"::{kind} {head}::{_gh_data(msg)}")
    return "\n".join(out)
