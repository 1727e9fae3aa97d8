"""The parser and the checker never crash on damaged input, and SARIF keeps its structure."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomc.cli.main import main
from loomc.syntax.parser import parse_text

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "pipelines").glob("*.loom"))]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SOURCES))
    tokens = text.split(" ")
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "insert", "dup", "truncate", "swap"]))
        i = draw(st.integers(0, max(0, len(tokens) - 1)))
        if op == "delete" and tokens:
            del tokens[i]
        elif op == "insert":
            tokens.insert(
                i, draw(st.sampled_from(["{", "}", '"', "step", "<=", "$", "?", "when", "1e"]))
            )
        elif op == "dup" and tokens:
            tokens.insert(i, tokens[i])
        elif op == "truncate":
            joined = " ".join(tokens)
            tokens = joined[: draw(st.integers(0, len(joined)))].split(" ")
        elif op == "swap":
            lines = " ".join(tokens).splitlines()
            if len(lines) > 1:
                j = draw(st.integers(0, len(lines) - 2))
                lines[j], lines[j + 1] = lines[j + 1], lines[j]
            tokens = "\n".join(lines).split(" ")
    return " ".join(tokens)


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=200), mutated()))
def test_parser_never_raises(text: str) -> None:
    module, diags = parse_text(text, "x.loom")
    assert module is not None or diags
    for d in diags:
        assert d.span.line >= 1 and d.span.column >= 1


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(mutated())
def test_check_json_on_mutated_files(tmp_path: Path, text: str) -> None:
    f = tmp_path / "m.loom"
    f.write_text(text, encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = main(
            ["check", str(f), "--policy", str(ROOT / "policies/default.yaml"), "--format", "json"]
        )
    assert rc in (0, 1)
    doc = json.loads(out.getvalue())
    assert rc == (1 if doc["summary"]["errors"] else 0)
    for d in doc["diagnostics"]:
        assert d["code"].startswith("LOOM")
        loc = json.dumps(d)
        assert "line" in loc and "column" in loc


def test_sarif_structure(tmp_path: Path) -> None:
    f = tmp_path / "bad.loom"
    f.write_text("pipeline p {\n  step a : writer(nobody) { max_tokens 100 }\n  answer a\n}\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(
            ["check", str(f), "--policy", str(ROOT / "policies/default.yaml"), "--format", "sarif"]
        )
    assert rc == 1
    doc = json.loads(out.getvalue())
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    assert run["tool"]["driver"]["name"] == "loomc"
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert "LOOM204" in rule_ids
    for r in run["tool"]["driver"]["rules"]:
        assert r["helpUri"].endswith("#" + r["id"].lower())
    for res in run["results"]:
        assert res["ruleId"] in rule_ids and rule_ids[res["ruleIndex"]] == res["ruleId"]
        assert res["level"] in ("error", "warning", "note", "none")
        assert res["message"]["text"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"].endswith("bad.loom")
        assert loc["region"]["startLine"] == 2 and loc["region"]["startColumn"] >= 1


def test_github_annotations(tmp_path: Path) -> None:
    f = tmp_path / "bad.loom"
    f.write_text("pipeline p {\n  step a : writer(nobody) { max_tokens 100 }\n  answer a\n}\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(
            ["check", str(f), "--policy", str(ROOT / "policies/default.yaml"), "--format", "github"]
        )
    line = next(x for x in out.getvalue().splitlines() if "LOOM204" in x)
    assert line.startswith("::error file=") and ",line=2," in line and "title=LOOM204::" in line


def test_missing_path_is_clear(tmp_path: Path) -> None:
    err = io.StringIO()
    with contextlib.redirect_stdout(err), contextlib.redirect_stderr(err):
        rc = main(["check", str(tmp_path / "nope.loom")])
    assert rc == 1
    assert "no such file" in err.getvalue() and "Traceback" not in err.getvalue()


def test_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`loomc check --format github | head -1` must not end in a BrokenPipeError traceback."""
    import subprocess
    import sys

    bad = tmp_path / "pipelines"
    bad.mkdir()
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "default.yaml").write_text(
        (ROOT / "policies" / "default.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    # many diagnostics, so the output is larger than the pipe buffer
    body = "\n".join(
        f'pipeline p{i} {{ step a : nobody(x) {{ task "t" }} answer a }}' for i in range(800)
    )
    (bad / "many.loom").write_text(body, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "loomc", "check", str(tmp_path), "--format", "github"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.wait(timeout=60)
    assert first.startswith(b"::error ")
    assert "Traceback" not in err and "BrokenPipeError" not in err
    assert proc.returncode in (1, 141)


SARIF_SCHEMA = Path(__file__).parent / "sarif" / "sarif-schema-2.1.0.json"


def _shipped_project_with_typo(tmp_path: Path) -> Path:
    """The shipped pipelines and all six policies, plus one pipeline with an unknown worker."""
    import shutil

    shutil.copytree(ROOT / "pipelines", tmp_path / "pipelines")
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    (tmp_path / "pipelines" / "typo.loom").write_text(
        "pipeline typo {\n  step a : writer(drafterr) { max_tokens 100 }\n  answer a\n}\n"
    )
    return tmp_path


def _check(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(argv)
    return out.getvalue()


def test_sarif_validates_against_the_official_schema(tmp_path: Path) -> None:
    import jsonschema

    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft4Validator(schema)
    project = _shipped_project_with_typo(tmp_path)
    bad = tmp_path / "bad.loom"
    bad.write_text(
        "pipeline p {\n  step a : writer(critic) sees b { max_tokens 100 }\n  answer a\n"
    )
    for argv in (
        ["check", str(project), "--format", "sarif"],
        ["check", str(bad), "--policy", str(ROOT / "policies/default.yaml"), "--format", "sarif"],
        ["check", str(ROOT / "pipelines"), "--format", "sarif"],
    ):
        doc = json.loads(_check(argv))
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
    assert doc["runs"][0]["tool"]["driver"]["informationUri"] == "https://github.com/loomc/loomc"


def test_sarif_one_finding_per_problem_with_fingerprints(tmp_path: Path) -> None:
    """A typo in a pipeline is one result, not one per policy (six are shipped)."""
    project = _shipped_project_with_typo(tmp_path)
    doc = json.loads(_check(["check", str(project), "--format", "sarif"]))
    typo = [
        r
        for r in doc["runs"][0]["results"]
        if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("typo.loom")
    ]
    assert [r["ruleId"] for r in typo] == ["LOOM204"]
    prints = [r["partialFingerprints"]["loomc/v1"] for r in doc["runs"][0]["results"]]
    assert len(prints) == len(set(prints)), "each distinct finding has its own fingerprint"
    again = json.loads(_check(["check", str(project), "--format", "sarif"]))
    assert prints == [r["partialFingerprints"]["loomc/v1"] for r in again["runs"][0]["results"]]
    annotations = _check(["check", str(project), "--format", "github"]).splitlines()
    assert sum("typo.loom" in a and "LOOM204" in a for a in annotations) == 1


def test_github_annotation_properties_are_escaped(tmp_path: Path) -> None:
    """`file=` may hold `,` `:` `%` (a property delimiter otherwise); data escapes `%` and EOLs."""
    from loomc.checker.ci_formats import render_github
    from loomc.diagnostics import Diagnostic, Severity, Span

    folder = tmp_path / "a,b:c%d"
    folder.mkdir()
    f = folder / "p.loom"
    f.write_text("pipeline p {\n  step a : writer(nobody) { max_tokens 100 }\n  answer a\n}\n")
    out = _check(
        ["check", str(f), "--policy", str(ROOT / "policies/default.yaml"), "--format", "github"]
    )
    line = next(x for x in out.splitlines() if "LOOM204" in x)
    assert (
        f"file={str(f).replace('%', '%25').replace(':', '%3A').replace(',', '%2C')},line=2," in line
    )
    d = Diagnostic("LOOM101", Severity.ERROR, "50% done\r\nnext::line", Span.point("x.loom"))
    assert render_github([d]).endswith("::50%25 done%0D%0Anext::line")


def test_a_whole_file_finding_names_the_file_without_a_line(tmp_path: Path) -> None:
    """An unknown pipeline name comes from the command line, not from a line of `pipelines/`:
    text, annotations, SARIF (schema-valid, no region) and the API's error name the folder alone."""
    import jsonschema

    import loomc
    from loomc.checker.ci_formats import render_github, render_sarif
    from loomc.checker.render import render_text
    from loomc.diagnostics import Diagnostic, DiagnosticError, Severity, Span

    d = Diagnostic("LOOM203", Severity.ERROR, "unknown pipeline 'x'", Span.whole("pipelines"))
    assert render_text([d]) == "pipelines: error[LOOM203]: unknown pipeline 'x'"
    assert render_github([d]) == "::error file=pipelines,title=LOOM203::unknown pipeline 'x'"
    doc = json.loads(render_sarif([d]))
    location = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": "pipelines"}}
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    assert not list(jsonschema.Draft4Validator(schema).iter_errors(doc))
    assert str(DiagnosticError([d])) == "pipelines: LOOM203 unknown pipeline 'x'"
    with pytest.raises(DiagnosticError) as caught:
        loomc.run("hello", pipeline="nope", project=ROOT, policy=ROOT / "policies/demo.yaml")
    unknown = caught.value.diagnostics[-1]
    assert (unknown.code, unknown.span) == ("LOOM203", Span.whole(ROOT / "pipelines"))
    assert str(caught.value).startswith(f"{ROOT / 'pipelines'}: LOOM203 unknown pipeline 'nope'")
