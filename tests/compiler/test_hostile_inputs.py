"""Hostile .loom files and policies: linear time, bounded depth and numbers, a positioned
diagnostic and never a traceback (issue 13, items 2-4)."""

from __future__ import annotations

import contextlib
import io
import shutil
import time
from pathlib import Path

import pytest

from loomc.cli.main import main
from loomc.policy.load import load_policy_text
from loomc.syntax.parser import parse_text

ROOT = Path(__file__).resolve().parents[2]
BASELINE = (ROOT / "pipelines" / "baseline.loom").read_text(encoding="utf-8")
POLICY = (ROOT / "policies" / "default.yaml").read_text(encoding="utf-8")
SLOW = 2.0  # CPU seconds: the fuzzing bound for inputs under 64 KB (immune to a busy machine)
MAX_NESTING = 64  # the documented limit (LOOM107)


def _timed_parse(text: str) -> tuple[float, list[tuple[str, int, int]]]:
    start = time.process_time()
    _, diags = parse_text(text, "x.loom")
    return time.process_time() - start, [(d.code, d.span.line, d.span.column) for d in diags]


def _guard(expr: str) -> str:
    return BASELINE.replace(
        "step answer : finalizer(finalizer)", f"step answer : finalizer(finalizer) when {expr}"
    )


# --- item 2: the grammar is linear ---------------------------------------------------------


@pytest.mark.parametrize("lines", [26, 2_000])
def test_unclosed_triple_quote_is_fast_and_placed(lines: int) -> None:
    text = 'pipeline p {\n  instruction """\n' + 'a b "" c\n' * lines + "}\n"
    elapsed, diags = _timed_parse(text)
    assert elapsed < SLOW
    assert diags == [("LOOM102", 2, 15)]  # the column of the opening quotes


PATHOLOGICAL = {
    "triple": 'pipeline p { instruction """' + '""\n' * 20_000,
    "string": 'pipeline p { instruction "' + "\\a" * 30_000,
    "digits": "pipeline p { budget { calls <= " + "1_" * 30_000,
    "unit": "pipeline p { budget { calls <= " + "1" * 30_000 + " " * 30_000 + "callsx",
    "money": "pipeline p { budget { cost <= $" + "9" * 60_000,
    "name": "pipeline " + "a-" * 30_000,
    "comment": "#" * 60_000 + "\npipeline",
    "quotes": '"' * 60_000,
    "dots": "pipeline p { step a : w(w) when " + "a." * 30_000,
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_every_terminal_is_linear(name: str) -> None:
    text = PATHOLOGICAL[name]
    assert len(text) < 64 * 1024
    elapsed, diags = _timed_parse(text)
    assert elapsed < SLOW, f"{name}: {elapsed:.2f}s"
    assert diags and all(line >= 1 and col >= 1 for _, line, col in diags)


# --- item 4: bounded nesting and numbers in .loom ------------------------------------------


def test_nesting_at_the_limit_parses_and_one_past_is_a_diagnostic() -> None:
    ok = "(" * MAX_NESTING + "risk == high" + ")" * MAX_NESTING
    assert _timed_parse(_guard(ok))[1] == []
    assert _timed_parse(_guard("not " * MAX_NESTING + "true"))[1] == []
    too_deep = "(" * (MAX_NESTING + 1) + "true" + ")" * (MAX_NESTING + 1)
    assert [c for c, _, _ in _timed_parse(_guard(too_deep))[1]] == ["LOOM107"]


@pytest.mark.parametrize(
    "expr",
    [
        "(" * 300 + "true" + ")" * 300,
        "not " * 1_000 + "true",
        "(not " * 5_000 + "true" + ")" * 5_000,
    ],
)
def test_deep_guards_are_diagnostics_not_recursion_errors(expr: str) -> None:
    elapsed, diags = _timed_parse(_guard(expr))
    assert elapsed < SLOW
    assert [c for c, _, _ in diags] == ["LOOM107"]
    assert diags[0][1] == 6  # the step's line


HUGE = "9" * 5_000


@pytest.mark.parametrize(
    "old,new",
    [
        ("max_tokens 900", f"max_tokens {HUGE}"),
        ("calls <= 1", f"calls <= {HUGE}"),
        ("calls <= 1", "calls <= 1_000_000_000_000_001"),
        ("latency <= 45s", f"latency <= {HUGE}s"),
        ("latency <= 45s", f"cost <= ${HUGE}"),
        ("calls <= 1", f"tokens <= {HUGE} tokens"),
        ("finalizer(finalizer)", f"finalizer(finalizer) when risk == {HUGE}"),
        ("max_tokens 900", "max_tokens 0." + "0" * 60 + "1"),
    ],
)
def test_huge_numbers_are_a_diagnostic(old: str, new: str) -> None:
    text = BASELINE.replace(old, new)
    assert text != BASELINE
    _, diags = _timed_parse(text)
    assert [c for c, _, _ in diags] == ["LOOM106"]


def _cli(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue() + err.getvalue()


def _project(tmp_path: Path, loom: str, policy: str = POLICY) -> Path:
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "policies").mkdir()
    (tmp_path / "pipelines" / "general.loom").write_text(loom, encoding="utf-8")
    (tmp_path / "policies" / "default.yaml").write_text(policy, encoding="utf-8")
    return tmp_path


def test_huge_max_tokens_fails_check_and_run_cleanly(tmp_path: Path) -> None:
    loom = BASELINE.replace("pipeline baseline", "pipeline general").replace(
        "max_tokens 900", f"max_tokens {HUGE}"
    )
    project = _project(tmp_path, loom)
    rc, text = _cli(
        [
            "check",
            str(project / "pipelines"),
            "--policy",
            str(project / "policies" / "default.yaml"),
        ]
    )
    assert rc == 1 and "LOOM106" in text and "Traceback" not in text
    rc, text = _cli(["run", "hello", "--project", str(project), "--json"])
    assert rc in (1, 2) and "LOOM106" in text and "Traceback" not in text


# --- items 3 and 4: policies ----------------------------------------------------------------


def _policy_codes(text: str) -> list[tuple[str, int]]:
    start = time.process_time()
    source, diags = load_policy_text(text, "p.yaml")
    assert time.process_time() - start < SLOW
    assert source is None or not diags
    return [(d.code, d.span.line) for d in diags]


def test_billion_laughs_is_refused_fast_at_its_line() -> None:
    bomb = POLICY + 'lol0: &l0 ["lol"]\n'
    for i in range(1, 10):
        bomb += f"lol{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n"
    assert len(bomb) < 3_000
    codes = _policy_codes(bomb)
    assert codes and codes[0][0] == "LOOM607"
    assert codes[0][1] > POLICY.count("\n")  # on an alias line, not the file start


def test_a_self_containing_alias_is_refused() -> None:
    assert [c for c, _ in _policy_codes(POLICY + "loop: &a [1, *a]\n")] in (
        ["LOOM607"],
        ["LOOM602"],
    )


@pytest.mark.parametrize(
    "text",
    [
        POLICY + "x: " + "[" * 3_000 + "]" * 3_000 + "\n",
        POLICY + "x: " + "[" * 30_000 + "]" * 30_000 + "\n",  # PyYAML's scanner is quadratic
        POLICY + "x: " + "{a: " * 15_000 + "\n",
        POLICY + "x: " + "{a: " * 3_000 + "1" + "}" * 3_000 + "\n",
        POLICY + "".join("  " * i + f"k{i}:\n" for i in range(300)) + "  " * 300 + "v: 1\n",
    ],
)
def test_deep_yaml_is_a_diagnostic(text: str) -> None:
    codes = _policy_codes(text)
    assert [c for c, _ in codes] == ["LOOM607"]
    assert codes[0][1] > POLICY.count("\n")


@pytest.mark.parametrize(
    "old,new,code",
    [
        ("credits: 0.25", "credits: abc", "LOOM603"),
        ("credits: 0.25", "credits: .nan", "LOOM603"),
        ("credits: 0.25", 'credits: "Infinity"', "LOOM603"),
        ("credits: 0.25", "credits: 1e300", "LOOM603"),
        ("credits: 0.25", f"credits: {HUGE}", "LOOM607"),
        ("max_tokens: 200", f"max_tokens: {HUGE}", "LOOM607"),
        ("max_tokens: 200", "max_tokens: 10000000000000000000", "LOOM603"),
        ("timeout: 20s", "timeout: abc", "LOOM603"),
        ("timeout: 20s", "timeout: 9e999999999s", "LOOM603"),
        ("p95_latency: 2s", "p95_latency: 99999999999999999999999s", "LOOM603"),
    ],
)
def test_bad_policy_numbers_are_diagnostics(old: str, new: str, code: str) -> None:
    text = POLICY.replace(old, new, 1)
    assert text != POLICY
    codes = _policy_codes(text)
    assert [c for c, _ in codes] == [code]
    line = next(i for i, row in enumerate(text.splitlines(), 1) if new in row)
    assert codes[0][1] == line


def test_billion_laughs_through_check(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "tests" / "compiler" / "fixtures" / "LOOM607", tmp_path / "p")
    rc, text = _cli(["check", str(tmp_path / "p")])
    assert rc == 1 and "LOOM607" in text and "Traceback" not in text
