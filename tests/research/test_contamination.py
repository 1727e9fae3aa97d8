"""research/contamination.py: the rule that keeps training rows away from a sealed split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from research_script import research_script

mod = research_script("contamination")


def _write(path: Path, prompts: list[str], prefix: str) -> Path:
    rows = [{"id": f"{prefix}-{i}", "prompt": p} for i, p in enumerate(prompts)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_shared_eight_word_run_is_flagged_below_the_jaccard_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The case the lead met at hard-test-8: one Spanish frame shared, Jaccard 0.31."""
    frame = "me recomiendas una serie para ver con él"
    train = _write(tmp_path / "t.jsonl", [f"Mi padre tomó dos pastillas hoy; {frame}?"], "t")
    sealed = _write(
        tmp_path / "s.jsonl",
        [f"La abuela dejó el gas abierto toda la noche y dice que huele raro, {frame}", "hola"],
        "s",
    )
    assert mod.main([str(train), str(sealed)]) == 1
    out = capsys.readouterr().out
    assert "t-0 ~ s-0: Jaccard" in out and "a shared 8-word run" in out
    assert "pastillas" not in out and "abuela" not in out  # ids and scores, never prompts


def test_a_seven_word_run_below_the_jaccard_line_passes(tmp_path: Path) -> None:
    run = "one two three four five six seven"
    train = _write(tmp_path / "t.jsonl", [f"{run} alpha beta gamma delta epsilon"], "t")
    sealed = _write(tmp_path / "s.jsonl", [f"{run} zeta eta theta iota kappa"], "s")
    found, best = mod.flagged(mod._rows(train), mod._rows(sealed))
    assert found == [] and best == pytest.approx(7 / 17)
    assert mod.main([str(train), str(sealed)]) == 0


word = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"])


@given(st.lists(word, min_size=1, max_size=20), st.lists(word, min_size=1, max_size=20))
@settings(max_examples=200, deadline=None)
def test_flagged_exactly_by_the_rule(a: list[str], b: list[str]) -> None:
    """Oracle written here: set Jaccard and 8-word windows, on the words themselves."""
    found, best = mod.flagged(
        [{"id": "t", "prompt": " ".join(a)}], [{"id": "s", "prompt": " ".join(b)}]
    )
    j = len(set(a) & set(b)) / len(set(a) | set(b))
    wins = {tuple(a[i : i + 8]) for i in range(len(a) - 7)}
    shared = any(tuple(b[i : i + 8]) in wins for i in range(len(b) - 7))
    assert best == pytest.approx(j)
    assert bool(found) == (j >= 0.5 or shared)
