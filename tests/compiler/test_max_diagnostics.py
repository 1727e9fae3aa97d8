"""`loomc check` prints at most ``--max-diagnostics`` findings (default 50), errors first.

A file with thousands of findings used to print every one (10,000 keys on a comment line: 10,000
blocks). Compilers stop earlier (clang at 20 errors); here the text and GitHub formats print the
first fifty and a line counting the rest, the summary line counts every one, and JSON and SARIF
(machine formats) always list every one.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.checker.render import MAX_SHOWN, left_out, printed
from loomc.cli.main import main
from loomc.diagnostics import Diagnostic, Severity, Span

POLICY = Path(__file__).resolve().parents[2] / "policies" / "default.yaml"
PIPELINE = 'pipeline p {\n  step a : writer(drafter) { task "hi" max_tokens 100 }\n  answer a\n}\n'


def _keys(tmp: Path, count: int) -> Path:
    """A .loom file whose comment line holds ``count`` keys: one LOOM606 error each."""
    keys = " ".join(f"sk-EXAMPLEnotARealKey{i:08d}" for i in range(count))
    loom = tmp / "keys.loom"
    loom.write_text(f"# {keys}\n{PIPELINE}", encoding="utf-8")
    return loom


def _check(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(["check", *args, "--policy", str(POLICY)])
    return rc, out.getvalue()


def test_text_prints_fifty_then_counts_the_rest(tmp_path: Path) -> None:
    rc, text = _check(str(_keys(tmp_path, 120)))
    assert rc == 1
    assert text.count("error[LOOM606]") == MAX_SHOWN == 50
    assert (
        "... and 70 more diagnostic(s) not shown (70 error(s)); "
        "`loomc check --max-diagnostics 0` shows every one"
    ) in text
    assert text.rstrip().endswith("120 error(s), 0 warning(s)")  # the summary counts all


@pytest.mark.parametrize(("limit", "printed_count"), [("0", 120), ("7", 7), ("500", 120)])
def test_the_limit_is_the_users(tmp_path: Path, limit: str, printed_count: int) -> None:
    rc, text = _check(str(_keys(tmp_path, 120)), "--max-diagnostics", limit)
    assert rc == 1 and text.count("error[LOOM606]") == printed_count
    assert ("more diagnostic(s) not shown" in text) == (printed_count < 120)


def test_machine_formats_list_every_finding(tmp_path: Path) -> None:
    loom = str(_keys(tmp_path, 120))
    rc, text = _check(loom, "--format", "json", "--max-diagnostics", "3")
    doc = json.loads(text)
    assert rc == 1 and len(doc["diagnostics"]) == 120 and doc["summary"]["errors"] == 120
    rc, text = _check(loom, "--format", "sarif")
    assert rc == 1 and len(json.loads(text)["runs"][0]["results"]) == 120


def test_github_annotations_are_capped_too(tmp_path: Path) -> None:
    rc, text = _check(str(_keys(tmp_path, 60)), "--format", "github")
    rows = text.splitlines()
    assert rc == 1 and sum(r.startswith("::error ") for r in rows) == 50
    assert rows[-1].startswith("... and 10 more diagnostic(s) not shown (10 error(s))")


@pytest.mark.parametrize("bad", ["-1", "x", "1.5"])
def test_a_bad_limit_is_refused_in_one_line(
    tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["check", str(_keys(tmp_path, 1)), "--max-diagnostics", bad])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "Traceback" not in err
    assert f"expected a whole number >= 0, got {bad!r}" in err


_SEVERITY = st.sampled_from([Severity.ERROR, Severity.WARNING, Severity.NOTE])


@settings(max_examples=300, deadline=None)
@given(st.lists(_SEVERITY, max_size=40), st.integers(0, 45))
def test_errors_come_first_and_order_is_kept(severities: list[Severity], limit: int) -> None:
    """Whatever the mix: the printed findings are the first ``limit`` of the errors-first order,
    shown in their own order, and the count line adds up."""
    found = [
        Diagnostic("LOOM215", sev, f"finding {i}", Span("f.loom", i + 1, 1, i + 1, 2))
        for i, sev in enumerate(severities)
    ]
    kept = printed(found, limit)
    if limit == 0 or len(found) <= limit:
        assert kept == found and left_out(found, kept) == ""
        return
    assert len(kept) == limit
    indices = [found.index(d) for d in kept]
    assert indices == sorted(indices)  # a subsequence, in order
    errors = [d for d in found if d.is_error]
    kept_errors = [d for d in kept if d.is_error]
    assert kept_errors == errors[:limit]  # no error left out while a non-error is shown
    if len(errors) < limit:
        others = [d for d in found if not d.is_error]
        assert [d for d in kept if not d.is_error] == others[: limit - len(errors)]
    hidden = len(found) - limit
    assert left_out(found, kept).startswith(
        f"... and {hidden} more diagnostic(s) not shown ({len(errors) - len(kept_errors)} error(s))"
    )
