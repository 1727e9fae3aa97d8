"""`loomc run` end to end over real HTTP: the executor, ledger and trace with the HTTP adapters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from replay import ReplayServer

from loomc.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-live-run-test-9f8e7d6c5b4a"
HIGH = "Review this payment webhook handler for double-spend races and missing auth checks."
LOW = "What is the capital of Poland? Return only the city."


def _policy(
    tmp_path: Path,
    base_url: str,
    models: dict[str, str],
    *,
    provider_type: str = "openai-compatible",
) -> Path:
    policy: dict[str, Any] = yaml.safe_load((ROOT / "policies/default.yaml").read_text())
    policy["name"] = "http-test"
    policy["providers"] = {
        "gw": {"type": provider_type, "base_url": base_url, "api_key": "env:LOOMC_TEST_GATEWAY_KEY"}
    }
    for worker, spec in policy["workers"].items():
        spec["model"] = f"gw/{models.get(worker, 'llamacpp')}"
    policy.pop("pricing", None)
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy), encoding="utf-8")
    return path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    code = main(["run", *args, "--project", str(ROOT), "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), out + err


def test_run_over_http_records_exact_usage_receipts_and_no_key(
    replay: ReplayServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOOMC_TEST_GATEWAY_KEY", SECRET)
    policy = _policy(
        tmp_path, f"{replay.base_url}/v1", {"finalizer": "litellm-usage", "critic": "dot"}
    )
    trace = tmp_path / "trace.jsonl"
    code, result, text = _run(
        [HIGH, "--tier", "balanced", "--policy", str(policy), "--trace", str(trace)], capsys
    )
    assert code == 0, text
    assert result["calls"] == 2 and result["escalated"] is True
    steps = {s["id"]: s for s in result["steps"]}
    executed = [s for s in steps.values() if s.get("usage")]
    assert len(executed) == 2
    assert not steps["direct"]["usage"]["estimated"]  # LiteLLM's final usage chunk
    assert steps["verify"]["usage"]["total_tokens"] == 38  # Dot's usage
    # the ledger books Dot's native receipt (2.5 credits), not the policy's estimate
    assert steps["verify"]["credits"] == "2.5"
    # finalizer estimate 1.5 (no receipt from LiteLLM) + Dot receipt 2.5
    assert result["budget"]["used"]["credits"] == "4.0"
    trace_text = trace.read_text()
    assert '"provider-frame"' in trace_text and "zero-retention" in trace_text
    for blob in (text, trace_text):
        assert SECRET not in blob


def test_run_retries_a_503_then_succeeds(
    replay: ReplayServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOOMC_TEST_GATEWAY_KEY", SECRET)
    replay.counts.pop("flaky", None)
    project = tmp_path / "project"
    (project / "pipelines").mkdir(parents=True)
    # The checker refuses retries that could exceed the call ceiling, so this pipeline budgets
    # for the retry: 1 step, 1 retry, at most 2 calls.
    (project / "pipelines" / "retry.loom").write_text(
        "pipeline retry {\n  budget { calls <= 2  latency <= 60s }\n"
        '  step answer : finalizer(finalizer) {\n    task "Answer the task."\n'
        "    max_tokens 200\n    retries 1\n  }\n  answer answer\n}\n",
        encoding="utf-8",
    )
    policy = _policy(tmp_path, f"{replay.base_url}/v1", {"finalizer": "flaky"})
    code = main(
        [
            "run",
            LOW,
            "--pipeline",
            "retry",
            "--policy",
            str(policy),
            "--project",
            str(project),
            "--json",
        ]
    )
    out, err = capsys.readouterr()
    result, text = (json.loads(out) if out.strip() else {}), out + err
    assert code == 0, text
    assert result["calls"] == 2  # the failed attempt is a call, reserved and counted
    assert result["answer"].startswith("The capital of France")
    assert replay.counts["flaky"] == 2


def test_run_reports_a_provider_error_without_traceback(
    replay: ReplayServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOOMC_TEST_GATEWAY_KEY", SECRET)
    policy = _policy(tmp_path, f"{replay.base_url}/v1", {"finalizer": "echo-auth"})
    code, result, text = _run([LOW, "--tier", "lean", "--policy", str(policy)], capsys)
    assert "Traceback" not in text
    assert SECRET not in text
    assert result.get("steps") and result["steps"][0]["status"] == "failed"
    assert "HTTP 401" in json.dumps(result)
    assert code != 0 or result["stop_reason"] != "direct-answer-accepted"


def test_run_over_ollama_native_api(
    replay: ReplayServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOOMC_TEST_GATEWAY_KEY", SECRET)
    policy = _policy(tmp_path, replay.base_url, {"finalizer": "ollama"}, provider_type="ollama")
    code, result, text = _run([LOW, "--tier", "lean", "--policy", str(policy)], capsys)
    assert code == 0, text
    assert result["answer"] == "Use a unique constraint on the idempotency key."
    usage = result["steps"][0]["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["estimated"]) == (
        26,
        8,
        False,
    )
    assert replay.requests[-1]["path"] == "/api/chat"
