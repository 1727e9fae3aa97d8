"""The code table, the docs and the source agree: no undocumented or unlisted code."""

from __future__ import annotations

import re
from pathlib import Path

from loomc.codes import CODES

CODE_RE = re.compile(r"LOOM[1-7]\d\d")


def test_codes_well_formed_and_unique(project_root: Path) -> None:
    assert all(CODE_RE.fullmatch(c) for c in CODES)
    text = (project_root / "loomc" / "codes.py").read_text(encoding="utf-8")
    keys = re.findall(r'^\s+"(LOOM\d{3})":', text, re.M)
    assert len(keys) == len(set(keys))


def test_docs_match_codes(project_root: Path) -> None:
    doc = (project_root / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (LOOM\d{3})$", doc, re.M)
    anchors = re.findall(r'<a id="(loom\d{3})"></a>', doc)
    assert sorted(sections) == sorted(CODES)
    assert sorted(anchors) == sorted(c.lower() for c in CODES)


def test_every_emitted_code_is_listed(project_root: Path) -> None:
    emitted: set[str] = set()
    for path in (project_root / "loomc").rglob("*.py"):
        if path.name == "codes.py":
            continue
        emitted |= set(re.findall(r'"(LOOM\d{3})"', path.read_text(encoding="utf-8")))
    assert emitted, "expected codes in the source"
    assert emitted - set(CODES) == set()
