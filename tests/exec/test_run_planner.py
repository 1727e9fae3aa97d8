"""`loomc run --planner`: plan, guard, compile and execute end to end on the mock policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from needs import need

from loomc.cli.main import main
from loomc.conductor.guard import conduct
from loomc.conductor.planners import LearnedProposer
from loomc.exec.executor import execute
from loomc.project import load_project
from loomc.providers.registry import ProviderPool
from loomc.risk.factory import make_profiler

ROOT = Path(__file__).resolve().parents[2]
LOW = "What is the capital of Poland? Return only the city."
HIGH = "Review this payment webhook handler for double-spend races and missing auth checks."


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["run", *argv, "--json", "--no-stream", "--project", str(ROOT)])
    captured = capsys.readouterr()
    out: dict[str, Any] = json.loads(captured.out) if captured.out.strip() else {}
    out["_stderr"] = captured.err
    return code, out


@pytest.mark.parametrize(
    ("planner", "prompt", "extra", "calls"),
    [
        ("risk", LOW, [], 1),
        ("risk", HIGH, [], 3),
        ("risk", HIGH, ["--max-calls", "2"], 2),
        ("risk", HIGH, ["--tier", "balanced"], 2),
        ("search", LOW, [], 1),
        ("search", HIGH, [], 3),
        ("search", HIGH, ["--max-calls", "2"], 2),
        ("search", HIGH, ["--max-credits", "2.5"], 2),
    ],
)
def test_run_planner_makes_the_planned_calls(
    capsys: pytest.CaptureFixture[str], planner: str, prompt: str, extra: list[str], calls: int
) -> None:
    code, out = run_json(capsys, prompt, "--planner", planner, *extra)
    assert code == 0
    conductor = out["conductor"]
    assert conductor["planner"] == planner and conductor["accepted"] is True
    assert conductor["reasons"] == [] and conductor["fallback"] is None
    plan = conductor["plan"]
    assert plan["max_calls"] == calls == out["calls"]
    ran = [s for s in out["steps"] if s["status"] == "ok"]
    assert [s["worker"] for s in ran] == [
        w for w in (plan["writer"], plan["reviewer"], plan["finalizer"]) if w
    ]
    assert [s["id"] for s in ran] == conductor["steps"]
    assert out["tier"] == f"conductor-{plan['policy']}"
    assert out["stop_reason"] == "completed"


def test_run_without_planner_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_json(capsys, HIGH)
    assert code == 0 and "conductor" not in out
    assert (out["tier"], out["calls"]) == ("balanced", 2)
    assert [s["id"] for s in out["steps"]][:2] == ["direct", "verify"]


def test_run_planner_trace_records_the_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    code, _ = run_json(capsys, LOW, "--planner", "search", "--trace", str(trace))
    assert code == 0
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert lines[0]["kind"] == "conductor-plan"
    assert lines[0]["data"]["planner"] == "search" and lines[0]["data"]["accepted"] is True
    assert lines[1]["kind"] == "run-started"


def test_run_learned_without_model_exits_1_unless_the_fallback_is_allowed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = run_json(capsys, LOW, "--planner", "learned", "--base-model", "/nonexistent")
    assert code == 1 and "calls" not in out  # a misconfigured planner runs nothing
    assert out["conductor"]["reasons"] == ["planner_unavailable"]
    assert "/nonexistent" in out["_stderr"] and "--allow-planner-fallback" in out["_stderr"]
    code, out = run_json(
        capsys,
        LOW,
        "--planner",
        "learned",
        "--base-model",
        "/nonexistent",
        "--allow-planner-fallback",
    )
    assert code == 0
    conductor = out["conductor"]
    assert conductor["accepted"] is False and conductor["reasons"] == ["planner_unavailable"]
    assert "risk planner planned this run instead" in conductor["details"][0]
    assert conductor["fallback"] == "risk" and out["calls"] == conductor["plan"]["max_calls"]


@pytest.mark.parametrize(
    "argv",
    [
        [LOW, "--planner", "learned"],
        [LOW, "--planner", "search", "--baseline"],
    ],
)
def test_run_planner_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(["run", *argv, "--project", str(ROOT)]) == 2


def test_run_planner_refuses_when_nothing_fits(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_json(capsys, HIGH, "--planner", "search", "--max-latency-ms", "10000")
    assert code == 1
    assert "over_budget:latency" in out["conductor"]["reasons"]
    assert "no model was called" in out["_stderr"]
    assert "calls" not in out  # nothing executed


def test_run_planner_unknown_worker_flag(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["run", LOW, "--planner", "risk", "--workers", "drafter,ghost", "--project", str(ROOT)]
    )
    assert code == 1
    assert "ghost" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("no plan today", "invalid_json"),
        ('{"policy": "strict", "writer": "drafter"}', "missing_key"),
    ],
)
def test_malformed_learned_proposal_runs_the_fallback(raw: str, reason: str) -> None:
    class Canned:
        def generate(self, prompts: list[str], batch_size: int = 8) -> list[str]:
            return [raw for _ in prompts]

    project = load_project(ROOT)
    compiled, _ = project.pipelines()
    base = next(p for p in compiled if p.name == "general" and p.tier == "strict")
    profiler = make_profiler(project.policy.risk)
    decision = conduct(
        project.policy_source,
        base,
        HIGH,
        profiler,
        "learned",
        proposer=LearnedProposer(model=Canned()),
    )
    assert not decision.accepted and decision.reasons == [reason]

    async def go() -> Any:
        async with ProviderPool(project.policy) as pool:
            return await execute(decision.pipeline, HIGH, pool=pool, profiler=profiler)

    result = anyio.run(go)
    assert result.calls == decision.plan.max_calls == 3
    assert [s.worker for s in result.steps] == list(decision.plan.roles)


def test_run_learned_with_a_real_tiny_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The real `LearnedPlanner` (random weights): its text is guarded like any proposal."""
    need("torch")
    need("transformers")
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from tinymodel import build_tiny_model  # type: ignore[import-not-found]
    except ImportError:
        pytest.skip("tests/tinymodel.py not available")
    finally:
        sys.path.pop(0)
    base = build_tiny_model(tmp_path / "tiny")
    code, out = run_json(
        capsys,
        HIGH,
        "--planner",
        "learned",
        "--base-model",
        str(base),
        "--device",
        "cpu",
        "--dtype",
        "float32",
        "--max-new-tokens",
        "24",
    )
    assert code == 0, out["_stderr"]
    conductor = out["conductor"]
    assert conductor["planner"] == "learned"
    assert isinstance(conductor["proposal"], str)  # the model's raw text was produced
    assert conductor["accepted"] is False and conductor["fallback"] == "risk"
    assert conductor["reasons"] and "planner_failed" not in conductor["reasons"]
    assert out["calls"] == conductor["plan"]["max_calls"]
