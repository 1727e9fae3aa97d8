"""Bulk robustness: every reference pipeline, truncated at every 7th offset and mutated by seeded
character edits (delete, insert, replace), goes through `loomc check --format json` in-process.

Each run must exit 0 or 1 (1 exactly when there are errors), print one JSON document, and every
diagnostic must carry a known code, a file, a line and a column. Unlike `test_robustness.py`
(hypothesis, token-level edits) this is exhaustive over truncation points and deterministic.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import random
from pathlib import Path

import pytest

import loomc.project.checking
from loomc.cli.main import main
from loomc.codes import CODES

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "policies" / "default.yaml"
PIPELINES = sorted((ROOT / "pipelines").glob("*.loom"))
STRIDE = 7
MUTANTS_PER_FILE = 40
# Characters the language gives meaning to, plus a few it does not.
ALPHABET = '{}()?:,.|<=>"$#/_\n\t abc019-' + "é\x00"


def _mutants(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(MUTANTS_PER_FILE):
        chars = list(text)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(chars) + 1)
            op = rng.choice(("delete", "insert", "replace"))
            if op == "insert" or not chars or i == len(chars):
                chars.insert(i, rng.choice(ALPHABET))
            elif op == "delete":
                del chars[i]
            else:
                chars[i] = rng.choice(ALPHABET)
        out.append("".join(chars))
    return out


def _problems(path: Path) -> list[str]:
    """What is wrong with `loomc check` on one file; empty when it behaves."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["check", str(path), "--policy", str(POLICY), "--format", "json"])
    except BaseException as exc:  # a crash is a finding, not a test error
        return [f"raised {type(exc).__name__}: {exc}"]
    if rc not in (0, 1):
        return [f"exit {rc}"]
    if "Traceback" in err.getvalue():
        return ["traceback on stderr"]
    try:
        doc = json.loads(out.getvalue())
    except json.JSONDecodeError as exc:
        return [f"stdout is not one JSON document: {exc}"]
    problems = []
    if rc != (1 if doc["summary"]["errors"] else 0):
        problems.append(f"exit {rc} with {doc['summary']['errors']} error(s)")
    for d in doc["diagnostics"]:
        if d.get("code") not in CODES:
            problems.append(f"unknown code {d.get('code')!r}")
        if not isinstance(d.get("file"), str) or not d["file"]:
            problems.append(f"{d.get('code')}: no file")
        for key in ("line", "column"):
            if not isinstance(d.get(key), int) or d[key] < 1:
                problems.append(f"{d.get('code')}: bad {key} {d.get(key)!r}")
    return problems


@pytest.mark.parametrize("source", PIPELINES, ids=lambda p: p.name)
def test_truncated_and_mutated_pipelines(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The policy never changes here: load it once (YAML parsing would dominate the run time).
    monkeypatch.setattr(
        loomc.project.checking, "load_policy", functools.cache(loomc.project.checking.load_policy)
    )
    text = source.read_text(encoding="utf-8")
    variants = [text[:n] for n in range(0, len(text), STRIDE)]
    variants += _mutants(text, seed=sum(map(ord, source.name)))
    target = tmp_path / source.name
    failures = []
    for variant in variants:
        target.write_bytes(variant.encode("utf-8"))
        found = _problems(target)
        if found:
            failures.append(f"{found[0]} for input {variant!r}")
    assert not failures, f"{len(failures)} of {len(variants)} inputs misbehave:\n" + "\n".join(
        failures[:5]
    )
