"""Diagnostics in the formats CI services read: SARIF 2.1.0 (code scanning) and GitHub workflow
annotations. A pipeline checked against several policies reports a problem once per policy;
both formats want it once (``unique``)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from loomc import __version__
from loomc.checker.render import PROJECT_URL, left_out, printed
from loomc.codes import CODES
from loomc.diagnostics import Diagnostic, Severity
from loomc.frozen import replace

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


def render_github(diagnostics: Sequence[Diagnostic], *, limit: int = 0) -> str:
    """Workflow commands, one per unique diagnostic, at most ``limit`` (0: all; GitHub itself
    keeps 50 annotations a job), then a plain line counting the rest."""
    out = []
    found = unique(diagnostics)
    kept = printed(found, limit)
    for d in kept:
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
    more = left_out(found, kept)
    return "\n".join([*out, more] if more else out)
