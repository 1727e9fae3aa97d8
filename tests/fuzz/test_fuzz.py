"""Fuzz targets: `.loom` files, policies, datasets and model replies (see fuzzing.py for the
seeds, the mutation operators, the bounds and the `ci` / `long` profiles)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from pathlib import Path

from fuzzing import (
    DATASET_SEEDS,
    FUZZ,
    LOOM_SEEDS,
    POLICY_SEEDS,
    REPLY_SEEDS,
    ROOT,
    assert_placed,
    mutated,
    within_time_limit,
)
from hypothesis import given

from loomc.cli.main import main
from loomc.conductor.prompt_format import extract_first_json
from loomc.eval.dataset import DatasetError, load_dataset
from loomc.eval.judge import VerdictParseError, parse_verdict

POLICY = ROOT / "policies" / "default.yaml"
PIPELINE = ROOT / "pipelines" / "code-review.loom"


def _check(loom: Path, policy: Path) -> None:
    """`loomc check` in text and JSON: exit 0 or 1, no traceback, every diagnostic placed."""
    for fmt in ("text", "json"):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["check", str(loom), "--policy", str(policy), "--format", fmt])
        assert rc in (0, 1), err.getvalue()
        assert "Traceback" not in out.getvalue() + err.getvalue()
    doc = json.loads(out.getvalue())
    assert rc == (1 if doc["summary"]["errors"] else 0)
    assert_placed(doc["diagnostics"], {str(loom), str(policy)})


@FUZZ
@given(mutated(LOOM_SEEDS))
def test_fuzz_loom(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        loom = Path(tmp) / "fuzz.loom"
        loom.write_bytes(data)
        with within_time_limit("check .loom", data):
            _check(loom, POLICY)


@FUZZ
@given(mutated(POLICY_SEEDS))
def test_fuzz_policy(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "fuzz.yaml"
        policy.write_bytes(data)
        with within_time_limit("check policy", data):
            _check(PIPELINE, policy)


@FUZZ
@given(mutated(DATASET_SEEDS))
def test_fuzz_dataset(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.jsonl"
        path.write_bytes(data)
        with within_time_limit("load dataset", data):
            try:
                cases = load_dataset(path)
            except DatasetError as exc:
                for message in exc.messages:
                    # file:line(:col): or, for the whole file, file:
                    assert re.match(re.escape(str(path)) + r"(:\d+(:\d+)?)?: \S", message), message
                return
        for case in cases:
            (case.id + case.prompt).encode("utf-8")  # a journal, a report, a terminal can hold it


@FUZZ
@given(mutated(REPLY_SEEDS))
def test_fuzz_model_reply(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    with within_time_limit("parse reply", data):
        try:
            verdict = parse_verdict(text)
        except VerdictParseError:
            pass
        else:
            assert 0 <= verdict.score <= 100
        plan = extract_first_json(text)
        assert plan is None or isinstance(plan, dict)
