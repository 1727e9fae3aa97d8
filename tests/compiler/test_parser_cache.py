"""The parser tables shipped in the package and cached between processes (loomc.syntax.tables):
the loaded parser parses exactly as a freshly built one, the shipped tables are those of the
grammar as it is, and the cache never stands in the way (unwritable, damaged, foreign or shared
folders fall back to building in memory). The cache tests pass ``packaged=False``: with the
shipped tables current, the cache is what an edited grammar or another lark version uses."""

from __future__ import annotations

import os
from pathlib import Path

import lark
import pytest

from loomc.syntax.parser import grammar_path
from loomc.syntax.tables import (
    OPTIONS,
    PACKAGED,
    build_parser,
    cache_key,
    load_packaged,
    packaged_key,
    write_packaged,
)

ROOT = Path(__file__).resolve().parents[2]
GRAMMAR = grammar_path().read_text(encoding="utf-8")
SOURCES = sorted((ROOT / "pipelines").glob("*.loom")) + sorted(
    (ROOT / "tests" / "compiler" / "fixtures").glob("*.loom")
)


def _cached_file(folder: Path) -> Path:
    return folder / f"parser-{cache_key(GRAMMAR, lark.__version__)}.lark"


def _outcome(parser: lark.Lark, text: str) -> object:
    """What a parse produced: the tree with every node's position, or the error's details."""
    try:
        tree = parser.parse(text)
    except lark.exceptions.UnexpectedInput as exc:
        expected = getattr(exc, "expected", None) or getattr(exc, "allowed", None)
        return (type(exc).__name__, exc.line, exc.column, sorted(expected or ()))
    return [
        (t.data, t.meta.line, t.meta.column, t.meta.end_line, t.meta.end_column, t.children)
        for t in tree.iter_subtrees()
        if not t.meta.empty
    ]


def test_a_saved_parser_is_loaded_and_parses_as_a_built_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOMC_CACHE_DIR", str(tmp_path / "cache"))
    first = build_parser(GRAMMAR, packaged=False)
    saved = _cached_file(tmp_path / "cache")
    assert saved.is_file()
    assert saved.stat().st_mode & 0o077 == 0  # private to this user
    second = build_parser(GRAMMAR, packaged=False)
    assert second.source_path == "<deserialized>"  # lark marks a parser it loaded
    fresh = lark.Lark(GRAMMAR, **OPTIONS)
    assert len(SOURCES) > 30
    for path in SOURCES:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert _outcome(second, text) == _outcome(fresh, text) == _outcome(first, text), path


def test_a_damaged_cache_file_is_rebuilt_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOMC_CACHE_DIR", str(tmp_path))
    tmp_path.chmod(0o700)
    saved = _cached_file(tmp_path)
    saved.write_bytes(b"\x80\x05not a pickle")
    parser = build_parser(GRAMMAR, packaged=False)
    assert parser.source_path != "<deserialized>"
    assert _outcome(parser, "pipeline p {\n}\n") is not None
    assert saved.read_bytes()[:2] != b"\x80\x05n"
    assert build_parser(GRAMMAR, packaged=False).source_path == "<deserialized>"


def test_an_unwritable_cache_folder_only_costs_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("LOOMC_CACHE_DIR", str(blocker / "cache"))
    parser = build_parser(GRAMMAR, packaged=False)
    assert isinstance(_outcome(parser, (ROOT / "pipelines" / "general.loom").read_text()), list)


def test_a_folder_others_may_write_is_neither_read_nor_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv("LOOMC_CACHE_DIR", str(shared))
    build_parser(GRAMMAR, packaged=False)
    shared.chmod(0o777)  # now anyone could have replaced the file: do not unpickle it
    assert build_parser(GRAMMAR, packaged=False).source_path != "<deserialized>"
    os.unlink(_cached_file(shared))
    build_parser(GRAMMAR, packaged=False)
    assert not _cached_file(shared).exists()


def test_an_empty_setting_turns_the_cache_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOMC_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert build_parser(GRAMMAR, packaged=False).source_path != "<deserialized>"
    assert list(tmp_path.rglob("*.lark")) == []


def test_the_key_changes_with_grammar_and_lark_version() -> None:
    assert cache_key(GRAMMAR, "1.3.1") != cache_key(GRAMMAR + "\n", "1.3.1")
    assert cache_key(GRAMMAR, "1.3.1") != cache_key(GRAMMAR, "1.3.2")


def test_the_packaged_tables_are_those_of_the_grammar_as_it_is() -> None:
    """Edit grammar/loom.lark (or upgrade lark) and this fails until the tables are rebuilt:
    `python -m loomc.syntax.tables`."""
    key = PACKAGED.read_bytes().split(b"\n", 1)[0].decode("ascii")
    assert key == packaged_key(GRAMMAR, lark.__version__)


def test_the_packaged_parser_parses_as_a_built_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOMC_CACHE_DIR", str(tmp_path / "cache"))
    shipped = build_parser(GRAMMAR)
    again = build_parser(GRAMMAR)  # the shipped literals are read, never changed
    assert shipped.source_path == again.source_path == "<deserialized>"
    assert not (tmp_path / "cache").exists()  # no cache folder needed, none written
    fresh = lark.Lark(GRAMMAR, **OPTIONS)
    for path in SOURCES:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert _outcome(shipped, text) == _outcome(fresh, text) == _outcome(again, text), path


def test_the_packaged_tables_serve_no_other_grammar_or_lark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOOMC_CACHE_DIR", "")
    assert load_packaged(GRAMMAR) is not None
    edited = GRAMMAR + "\n// an edit\n"
    assert load_packaged(edited) is None
    parser = build_parser(edited)  # built from the edited text, not served the shipped tables
    assert parser.source_path != "<deserialized>"
    assert packaged_key(GRAMMAR, "1.3.1") != packaged_key(GRAMMAR, "1.3.2")
    text = (ROOT / "pipelines" / "general.loom").read_text(encoding="utf-8")
    assert _outcome(parser, text) == _outcome(build_parser(GRAMMAR), text)


def test_damaged_or_missing_packaged_tables_fall_back(tmp_path: Path) -> None:
    written = tmp_path / "loom.tables"
    write_packaged(GRAMMAR, written)
    assert load_packaged(GRAMMAR, written) is not None
    assert load_packaged(GRAMMAR, tmp_path / "missing") is None
    written.write_bytes(written.read_bytes()[:200])  # truncated
    assert load_packaged(GRAMMAR, written) is None
