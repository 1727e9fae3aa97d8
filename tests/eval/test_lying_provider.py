"""A provider that lies about usage, over real HTTP: negative token counts and Dot receipts are
clamped (the worst of reported and estimated is booked), and a report that passes a ceiling or a
request's max_tokens marks the run ``over-ceiling`` with the amount, exits 1 and sends nothing
more, for `loomc run` and for an eval-wide budget alike."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from lying_server import LyingServer

from loomc.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-lp-7Qx2Vb9Zr4Tn1Wm8Kd3Hs6"  # random-looking: any 8 characters of a key are redacted
PROMPT = "What is two plus two? Answer in one sentence."
PIPELINE = """pipeline two {
  budget { calls <= 2  latency <= 60s }
  step first : finalizer(finalizer) {
    task "Answer the task."
    max_tokens 100
  }
  step second : critic(critic) sees first {
    task "Check the answer and return it corrected."
    max_tokens 100
  }
  answer second | first
}
pipeline one {
  budget { calls <= 1  latency <= 60s }
  step answer : finalizer(finalizer) {
    task "Answer the task."
    max_tokens 100
  }
  answer answer
}
"""


@pytest.fixture
def server() -> Iterator[LyingServer]:
    srv = LyingServer().start()
    yield srv
    srv.stop()


def _project(
    tmp_path: Path, server: LyingServer, first: str, second: str = "honest", credits: str = "0.1"
) -> Path:
    project = tmp_path / "project"
    (project / "pipelines").mkdir(parents=True)
    (project / "pipelines" / "two.loom").write_text(PIPELINE, encoding="utf-8")
    policy: dict[str, Any] = yaml.safe_load((ROOT / "policies/default.yaml").read_text())
    policy["providers"] = {
        "gw": {
            "type": "openai-compatible",
            "base_url": server.base_url,
            "api_key": "env:LOOMC_LYING_KEY",
        }
    }
    for name, spec in policy["workers"].items():
        spec["model"] = f"gw/{first if name == 'finalizer' else second}"
        spec["credits"] = credits
    policy.pop("pricing", None)
    (project / "loomc.yaml").write_text(yaml.safe_dump(policy), encoding="utf-8")
    return project


def _run(
    project: Path, capsys: pytest.CaptureFixture[str], *extra: str, pipeline: str = "two"
) -> tuple[int, dict[str, Any], str]:
    code = main(
        [
            "run",
            PROMPT,
            "--pipeline",
            pipeline,
            "--project",
            str(project),
            "--policy",
            str(project / "loomc.yaml"),
            "--json",
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOMC_LYING_KEY", KEY)


@pytest.mark.parametrize("stream", [True, False])
def test_negative_usage_and_receipts_book_the_estimate(
    server: LyingServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], stream: bool
) -> None:
    project = _project(tmp_path, server, "negative", "negative")
    code, result, err = _run(project, capsys, *([] if stream else ["--no-stream"]))
    assert code == 0, err
    assert server.counts["negative"] == 2
    for step in result["steps"]:
        usage = step["usage"]
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
        assert usage["estimated"] is True  # the report was replaced by the local estimate
        assert Decimal(step["credits"]) == Decimal("0.1")  # the estimate, not -100
    used = result["budget"]["used"]
    assert Decimal(used["credits"]) == Decimal("0.2") and used["tokens"] > 0
    assert result["stop_reason"] == "completed"


def test_inconsistent_stream_usage_never_books_below_zero(
    server: LyingServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, server, "inconsistent")
    code, result, err = _run(project, capsys, pipeline="one")
    assert code == 0, err
    step = result["steps"][0]
    # the last usage chunk said completion -7 and spent -0.5: both are implausible
    assert step["usage"]["completion_tokens"] > 0 and step["usage"]["estimated"] is True
    assert Decimal(step["credits"]) == Decimal("0.1")
    assert result["budget"]["used"]["tokens"] == step["usage"]["total_tokens"] > 0


def test_output_over_max_tokens_is_over_ceiling_and_nothing_more_is_sent(
    server: LyingServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, server, "oversized")
    code, result, err = _run(project, capsys)
    assert code == 1
    assert result["stop_reason"] == "over-ceiling" and result["budget"]["limited"] is True
    assert "20000 completion tokens > max_tokens 100 (over by 19900)" in result["error"]
    assert "over by 19900" in err and "Traceback" not in err
    assert server.total == 1  # the second step was never sent
    first, second = result["steps"]
    assert first["status"] == "ok" and first["usage"]["completion_tokens"] == 20000  # booked
    assert second["status"] != "ok" and second["attempts"] == 0
    assert result["budget"]["used"]["tokens"] >= 20000


def test_a_dot_receipt_over_max_credits_is_over_ceiling(
    server: LyingServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, server, "dot-50")
    code, result, err = _run(project, capsys, "--max-credits", "1")
    assert code == 1, err
    assert result["stop_reason"] == "over-ceiling" and result["budget"]["limited"] is True
    assert "credits 50 > ceiling 1 (over by 49)" in result["error"]
    assert Decimal(result["budget"]["used"]["credits"]) == Decimal(50)
    assert server.total == 1


def _dataset(tmp_path: Path, n: int) -> Path:
    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "prompt": f"Task {i}: add two and two."}) + "\n"
            for i in range(n)
        )
    )
    return data


def _eval(project: Path, data: Path, out: Path, *extra: str) -> int:
    return main(
        [
            "eval",
            "--dataset",
            str(data),
            "--strategies",
            "one",
            "--project",
            str(project),
            "--policy",
            str(project / "loomc.yaml"),
            "--output",
            str(out),
            "--run-until-budget",
            *extra,
        ]
    )


def test_negative_receipts_never_free_an_eval_wide_budget(
    server: LyingServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, server, "negative", credits="1")
    out = tmp_path / "r.json"
    code = _eval(
        project, _dataset(tmp_path, 30), out, "--max-total-credits", "5", "--concurrency", "4"
    )
    assert code == 0, capsys.readouterr().err
    assert server.total == 5  # each call books its 1-credit estimate, never -100
    runs = json.loads(out.read_text())["runs"]
    assert sum(r["status"] == "ok" for r in runs) == 5
    assert sum(r["status"] == "budget-stopped" for r in runs) == 25


def test_an_eval_over_its_ceiling_sends_nothing_more_and_exits_1(
    server: LyingServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, server, "dot-50", credits="1")
    out = tmp_path / "r.json"
    code = _eval(
        project, _dataset(tmp_path, 10), out, "--max-total-credits", "5", "--concurrency", "1"
    )
    err = capsys.readouterr().err
    assert code == 1
    assert server.total == 1  # the first receipt passed the eval-wide ceiling: nothing after
    assert "eval ledger credits 50 > ceiling 5 (over by 45)" in err
    runs = json.loads(out.read_text())["runs"]
    assert runs[0]["result"]["stop_reason"] == "over-ceiling"
    assert {r["result"]["stop_reason"] for r in runs[1:]} == {"over-ceiling"}
    assert all(r["result"]["calls"] == 0 for r in runs[1:])
