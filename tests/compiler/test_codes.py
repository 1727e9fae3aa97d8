"""The code table, the docs, the fixtures and the source agree: no undocumented, unlisted,
unexercised or reused code."""

from __future__ import annotations

import re
from pathlib import Path

from loomc.codes import CODES, PREFIXES, RETIRED

CODE_RE = re.compile(r"LOOM[1-7]\d\d")
FIXTURES = Path(__file__).parent / "fixtures"


def _doc(project_root: Path) -> str:
    return (project_root / "docs" / "diagnostics.md").read_text(encoding="utf-8")


def _sections(doc: str) -> dict[str, str]:
    parts = re.split(r"^## ", doc, flags=re.M)
    return {p.split("\n", 1)[0].strip(): p for p in parts[1:]}


def test_codes_well_formed_and_unique(project_root: Path) -> None:
    assert all(CODE_RE.fullmatch(c) for c in [*CODES, *RETIRED])
    assert all(any(c.startswith(p) for p in PREFIXES) for c in CODES)
    text = (project_root / "loomc" / "codes.py").read_text(encoding="utf-8")
    keys = re.findall(r'^\s+"(LOOM\d{3})":', text, re.M)
    assert len(keys) == len(set(keys))
    assert not set(CODES) & set(RETIRED), "a retired code is never reused"


def test_docs_match_codes(project_root: Path) -> None:
    doc = _doc(project_root)
    sections = re.findall(r"^## (LOOM\d{3})$", doc, re.M)
    anchors = re.findall(r'<a id="(loom\d{3})"></a>', doc)
    assert sorted(sections) == sorted(CODES)
    assert sorted(anchors) == sorted(c.lower() for c in [*CODES, *RETIRED])
    retired = _sections(doc).get("Retired codes", "")
    for code in RETIRED:
        assert f"**{code}**" in retired


def test_every_code_is_documented_with_its_fixture(project_root: Path) -> None:
    """Each section quotes its fixture verbatim (the example is the tested one) and its output."""
    sections = _sections(_doc(project_root))
    for code, text in CODES.items():
        section = sections[code]
        assert text in section, code
        assert f"[{code}]" in section and "```text" in section, f"{code}: no example output"
        single = FIXTURES / f"{code}.loom"
        if single.exists():
            raw = single.read_bytes()
            if b"\x00" not in raw:
                assert raw.decode().rstrip("\n") in section, f"{code}: example is not the fixture"
            continue
        folder = FIXTURES / code
        assert folder.is_dir(), f"{code}: no fixture"
        shown = [p for p in folder.rglob("*") if p.is_file() and p.suffix in (".loom", ".yaml")]
        shown = [p for p in shown if p.suffix == ".loom" or not (folder / "ref").is_dir()]
        assert shown
        for p in shown:
            assert p.read_text().rstrip("\n") in section, f"{code}: {p.name} is not quoted"


def test_every_emitted_code_is_listed(project_root: Path) -> None:
    emitted: set[str] = set()
    for path in (project_root / "loomc").rglob("*.py"):
        if path.name == "codes.py":
            continue
        emitted |= set(re.findall(r'"(LOOM\d{3})"', path.read_text(encoding="utf-8")))
    assert emitted, "expected codes in the source"
    assert emitted - set(CODES) == set()
    assert not emitted & set(RETIRED), "a retired code is emitted"
