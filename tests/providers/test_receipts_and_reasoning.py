"""Thinking models, temperature and deadline receipts over real HTTP (127.0.0.1 replay server).

Reasoning deltas (``reasoning_content`` on OpenAI-compatible servers, ``thinking`` on Ollama)
are their own stream events and never part of the answer; a worker's temperature and
``--temperature`` reach the wire; a call the run deadline cuts off is booked (one call, an
estimate that is never zero tokens) and the run reports ``budget-limited`` and its used latency.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from calls import complete
from replay import ReplayServer

from loomc.cli.main import main
from loomc.policy.models import ProviderConfig
from loomc.providers.base import CompletionRequest, Message, StreamEvent
from loomc.providers.ollama import OllamaProvider
from loomc.providers.openai_compat import OpenAICompatProvider

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-live-reasoning-test-5a4b3c2d1e"
THOUGHT = "The user asks for the capital of France. That is Paris."
ANSWER = "Paris is the capital."


def _request(model: str, temperature: float | None = None) -> CompletionRequest:
    return CompletionRequest(
        model=model,
        messages=(Message("user", "Capital of France?"),),
        max_tokens=64,
        stream=True,
        timeout_s=5,
        temperature=temperature,
    )


def test_reasoning_content_is_streamed_apart_from_the_answer(replay: ReplayServer) -> None:
    cfg = ProviderConfig(
        type="openai-compatible", base_url=f"{replay.base_url}/v1", api_key="env:K"
    )
    events: list[StreamEvent] = []
    out = complete(
        OpenAICompatProvider("gw", cfg, env={"K": KEY}),
        _request("reasoning", temperature=0.3),
        events,
    )
    assert out.content == ANSWER
    assert "".join(e.text for e in events if e.kind == "reasoning") == THOUGHT
    assert "".join(e.text for e in events if e.kind == "token") == ANSWER
    kinds = [e.kind for e in events]
    assert kinds.index("token") > max(i for i, k in enumerate(kinds) if k == "reasoning")
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (12, 19)
    assert replay.requests[-1]["body"]["temperature"] == 0.3


def test_ollama_thinking_is_streamed_apart_from_the_answer(replay: ReplayServer) -> None:
    provider = OllamaProvider(
        "local", ProviderConfig(type="ollama", base_url=replay.base_url), env={}
    )
    events: list[StreamEvent] = []
    out = complete(provider, _request("ollama-thinking", temperature=0.7), events)
    assert out.content == ANSWER
    assert "".join(e.text for e in events if e.kind == "reasoning") == "The user wants the capital."
    assert "".join(e.text for e in events if e.kind == "token") == ANSWER
    assert replay.requests[-1]["body"]["options"]["temperature"] == 0.7


def _project(tmp_path: Path, base_url: str, model: str, worker: dict[str, Any]) -> Path:
    policy: dict[str, Any] = yaml.safe_load((ROOT / "policies/default.yaml").read_text())
    policy["name"] = "http-limits"
    policy["providers"] = {
        "gw": {
            "type": "openai-compatible",
            "base_url": base_url,
            "api_key": "env:LOOMC_TEST_GATEWAY_KEY",
        }
    }
    for spec in policy["workers"].values():
        spec["model"] = f"gw/{model}"
        spec.update(worker)
    policy.pop("pricing", None)
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy), encoding="utf-8")
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    code = main(["run", *argv, "--project", str(ROOT), "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def test_worker_temperature_and_the_flag_reach_the_wire(
    replay: ReplayServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOOMC_TEST_GATEWAY_KEY", KEY)
    policy = _project(tmp_path, f"{replay.base_url}/v1", "reasoning", {"temperature": 0.2})
    trace = tmp_path / "trace.jsonl"
    code, result, err = _run(
        ["hi there", "--tier", "lean", "--policy", str(policy), "--trace", str(trace)], capsys
    )
    assert code == 0, err
    assert replay.requests[-1]["body"]["temperature"] == 0.2
    assert result["answer"] == ANSWER  # the reasoning is never the answer
    code, result, err = _run(
        ["hi there", "--tier", "lean", "--policy", str(policy), "--temperature", "1.1"], capsys
    )
    assert code == 0, err
    assert replay.requests[-1]["body"]["temperature"] == 1.1


@pytest.mark.parametrize("bad", ["nan", "-0.5", "3", "inf"])
def test_a_bad_temperature_is_a_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "hi", "--temperature", bad])
    assert exc.value.code == 2
    assert "temperature" in capsys.readouterr().err


def test_the_deadline_books_the_call_it_cuts_off(
    replay: ReplayServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOOMC_TEST_GATEWAY_KEY", KEY)
    policy = _project(tmp_path, f"{replay.base_url}/v1", "slow", {})
    before = replay.counts.get("slow", 0)
    started = time.monotonic()
    code, result, err = _run(
        ["hi there", "--tier", "lean", "--policy", str(policy), "--max-latency-ms", "1000"], capsys
    )
    wall = time.monotonic() - started
    assert code == 0, err
    assert replay.counts["slow"] - before == 1  # the request was sent ...
    used = result["budget"]["used"]
    assert used["calls"] == 1 and result["calls"] == 1  # ... so it is a call
    step = result["steps"][0]
    assert step["status"] == "cancelled" and step["attempts"] == 1
    assert step["usage"]["estimated"] is True
    assert step["usage"]["prompt_tokens"] > 0 and step["usage"]["completion_tokens"] > 0
    assert used["tokens"] >= step["usage"]["prompt_tokens"]
    assert 1000 <= used["latency_ms"] < 1500
    assert result["stop_reason"] == "max-latency-reached" and result["budget"]["limited"]
    assert result["limited_by"]["dimension"] == "latency"
    assert result["limited_by"]["source"] == "limit"
    assert result["models"]["gw/slow"]["calls"] == 1
    assert wall < 1.0 + 1.5
    assert "LOOM405" in err  # the worst case (20 s) above the limit was a warning


def test_the_live_trace_shows_reasoning_frames_and_labels_receipts(
    replay: ReplayServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOOMC_TEST_GATEWAY_KEY", KEY)
    policy: dict[str, Any] = yaml.safe_load((ROOT / "policies/default.yaml").read_text())
    policy["providers"] = {
        "gw": {
            "type": "openai-compatible",
            "base_url": f"{replay.base_url}/v1",
            "api_key": "env:LOOMC_TEST_GATEWAY_KEY",
        }
    }
    models = {"finalizer": "reasoning", "critic": "dot"}
    for worker, spec in policy["workers"].items():
        spec["model"] = f"gw/{models.get(worker, 'llamacpp')}"
    policy.pop("pricing", None)
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy), encoding="utf-8")
    prompt = "Review this payment webhook handler for double-spend races and missing auth checks."
    code = main(
        ["run", prompt, "--tier", "balanced", "--policy", str(path), "--project", str(ROOT)]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert THOUGHT in err and THOUGHT not in out  # reasoning is shown live, never the answer
    assert "◆ verify" in err and "zero-retention" in err  # Dot's privacy frame, live
    # Dot's receipt (2.5) is exact; the finalizer's credits (1.5, no receipt) an estimate
    assert "credits 2.5 (receipts) + ~1.5 (estimated)" in err
    assert KEY not in out + err
