"""Hostile eval input: odd encodings, deep JSON, bad arguments, unwritable outputs and a judge
reply nested to break the parser; each is one line and an exit code, never a traceback, and
nothing is paid before the outputs are known to be writable (issue 13, item 9)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
import yaml

from loomc.cli.main import main
from loomc.conductor.prompt_format import extract_first_json
from loomc.eval.judge import VerdictParseError, parse_verdict
from loomc.sources import read_jsonl

ROOT = Path(__file__).resolve().parents[2]
CASE = {"id": "c1", "prompt": "Define a mutex.", "checks": [{"type": "contains", "value": "a"}]}
LINES = json.dumps(CASE) + "\n" + json.dumps({**CASE, "id": "c2"}) + "\n"


def _eval(
    capsys: pytest.CaptureFixture[str], data: Path, out: Path, *extra: str
) -> tuple[int, str]:
    rc = main(
        [
            "eval",
            "--project",
            str(ROOT),
            "--dataset",
            str(data),
            "--strategies",
            "baseline",
            "--output",
            str(out),
            *extra,
        ]
    )
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "Traceback" not in text
    return rc, text


@pytest.mark.parametrize(
    "raw,expect",
    [
        (b"\x00\x01\x02binary\xff", "d.jsonl:1: dataset is binary"),
        (LINES.encode("utf-16"), "d.jsonl:1: dataset is UTF-16"),
        (LINES.encode("utf-16-be"), "d.jsonl:1: dataset is binary"),
        (
            LINES.encode() + '{"id": "c3", "prompt": "caf\u00e9"}\n'.encode("latin-1"),
            "d.jsonl:3:28: dataset is not UTF-8 (byte 0xe9)",
        ),
        (
            LINES.encode() + b'{"id": "x", "prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
            "d.jsonl:3:1: nested deeper than 32 levels",
        ),
        (
            LINES.encode()
            + b'{"id": "x", "prompt": "p", "extra": '
            + b"[" * 40
            + b"]" * 40
            + b"}\n",
            "d.jsonl:3:37: nested deeper than 32 levels",  # the column of "extra"'s value
        ),
        (
            LINES.encode() + b'{"id": "x", "prompt": "p", "n": ' + b"9" * 5_000 + b"}\n",
            "d.jsonl:3:1: a number too long to read",
        ),
        (
            LINES.encode() + b'{"id": "x\\ud800", "prompt": "lone surrogate"}\n',
            "d.jsonl:3:8: a lone surrogate \\ud800",
        ),
    ],
)
def test_bad_datasets_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], raw: bytes, expect: str
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_bytes(raw)
    rc, text = _eval(capsys, data, tmp_path / "r.json")
    assert rc == 1
    assert expect in text, text


def test_a_utf8_bom_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.jsonl"
    data.write_bytes(b"\xef\xbb\xbf" + LINES.encode())
    rc, text = _eval(capsys, data, tmp_path / "r.json", "--dry-run")
    assert rc == 0, text


@pytest.mark.parametrize(
    "extra,expect",
    [
        (["--limit", "-1"], "--limit must be >= 1"),
        (["--limit", "0"], "--limit must be >= 1"),
        (["--iterations", "100000000", "--dry-run"], "one eval plans at most 100,000"),
        (["--max-total-calls", "-5"], "--max-total-calls must be >= 0"),
    ],
)
def test_bad_arguments_are_refused_fast(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], expect: str
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(LINES)
    start = time.process_time()
    rc, text = _eval(capsys, data, tmp_path / "r.json", *extra)
    assert rc == 2
    assert expect in text, text
    assert time.process_time() - start < 5
    assert not (tmp_path / "r.json.journal.jsonl").exists()


@pytest.mark.parametrize("flag", ["--max-total-credits", "--max-total-cost"])
@pytest.mark.parametrize("value", ["NaN", "Infinity", "sNaN", "$inf"])
def test_non_finite_totals_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(LINES)
    with pytest.raises(SystemExit) as exited:
        main(["eval", "--dataset", str(data), "--output", str(tmp_path / "r.json"), flag, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "not a finite number" in err or "must be >= 0" in err
    assert "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_read_only_folder_is_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(LINES)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        rc, text = _eval(capsys, data, locked / "r.json")
    finally:
        locked.chmod(0o700)
    assert rc == 2 and "nothing was run" in text


@pytest.mark.parametrize("where", ["output", "artifacts"])
def test_unwritable_output_is_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(LINES)
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder is needed")
    out = tmp_path / "r.json"
    extra: list[str] = []
    if where == "output":
        out = blocker / "r.json"
    else:
        extra = ["--artifacts", str(blocker / "report")]
    rc, text = _eval(capsys, data, out, *extra)
    assert rc == 2 and "cannot write" in text and "nothing was run" in text
    assert not out.with_name(out.name + ".journal.jsonl").exists()  # no run was journaled


def test_an_output_that_is_a_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(LINES)
    out = tmp_path / "r.json"
    out.mkdir()
    rc, text = _eval(capsys, data, out)
    assert rc == 2 and "cannot write" in text


# --- the judge's reply ----------------------------------------------------------------------

NESTED = [
    '{"score": ' + "[" * 100_000 + "]" * 100_000 + "}",
    '{"score": 80, "reason": ' + '{"a": ' * 5_000 + "1" + "}" * 5_000 + "}",
    '{"a": ' * 100_000 + "1" + "}" * 100_000,
    "{" * 200_000,
    '{"x": ' * 40 + '{"score": 1}' + "}" * 40,
]


@pytest.mark.parametrize("reply", NESTED)
def test_a_nested_reply_is_a_parse_error_not_a_crash(reply: str) -> None:
    start = time.process_time()
    with pytest.raises(VerdictParseError):
        parse_verdict(reply)
    assert extract_first_json(reply) is None
    assert time.process_time() - start < 2


def test_flat_replies_still_parse() -> None:
    assert parse_verdict('noise {"v": {"x": 1}, "w": [{"score": 9}]} tail').score == 9
    assert parse_verdict('```json\n{"score": "7/10"}\n```').score == 70
    assert extract_first_json('plan: {"policy": "lean", "access": {"writer": []}} ok') == {
        "policy": "lean",
        "access": {"writer": []},
    }


def test_a_nested_judge_reply_is_a_judge_error_and_the_eval_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    policy["providers"]["mock"]["mock"]["rules"] = [
        {"role": "judge", "response": '{"score": ' + "[" * 50_000 + "]" * 50_000 + "}"},
    ]
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    data = tmp_path / "d.jsonl"
    data.write_text(LINES)
    out = tmp_path / "r.json"
    rc, text = _eval(capsys, data, out, "--policy", str(path), "--judge-model", "mock/judge-large")
    assert rc == 0, text
    runs = json.loads(out.read_text())["runs"]
    assert [r["judge"]["status"] for r in runs] == ["error", "error"]


@pytest.mark.parametrize(
    "line,expect",
    [
        (b"[" * 100_000 + b"]" * 100_000, ":2: nested too deeply"),
        (b'{"n": ' + b"9" * 5_000 + b"}", ":2: a number too long to read"),
    ],
)
def test_the_strict_jsonl_reader_names_the_line(tmp_path: Path, line: bytes, expect: str) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"ok": 1}\n' + line + b"\n")
    with pytest.raises(ValueError, match=re.escape(str(path) + expect)):
        read_jsonl(path)
