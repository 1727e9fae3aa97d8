"""The learned planner served like any model: a real server on 127.0.0.1 serving the tiny model
with its adapter, called through the provider layer, guarded like the in-process planner; the
adapter's pinned base verified before loading; a misconfigured planner refuses unless the
fallback is allowed."""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from needs import need

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
need("torch")
need("transformers")
need("peft")

from tiny_server import TinyServer  # noqa: E402
from tinymodel import attach_random_lora, build_tiny_model  # noqa: E402

import loomc  # noqa: E402
from loomc.api.conducting import PlanningFailed  # noqa: E402
from loomc.conductor.guard import conduct  # noqa: E402
from loomc.conductor.learned import LearnedPlanner  # noqa: E402
from loomc.conductor.pin import PinMismatch, verify_pin, weights_digest  # noqa: E402
from loomc.conductor.planners import LearnedProposer, PlannerUnavailable  # noqa: E402
from loomc.conductor.served import ServedPlanner  # noqa: E402
from loomc.project import load_project  # noqa: E402
from loomc.risk.factory import make_profiler  # noqa: E402

pytestmark = pytest.mark.conductor
ROOT = Path(__file__).resolve().parents[2]
MAX_NEW = 16
HIGH = "Review this payment webhook handler for double-spend races and missing auth checks."


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tiny-served")
    base = build_tiny_model(root / "base")
    return base, attach_random_lora(base, root / "adapter")


@pytest.fixture(scope="module")
def local(tiny: tuple[Path, Path]) -> LearnedPlanner:
    base, adapter = tiny
    return LearnedPlanner(base, adapter, device="cpu", dtype="float32", max_new_tokens=MAX_NEW)


@pytest.fixture(scope="module")
def server(local: LearnedPlanner) -> Iterator[TinyServer]:
    srv = TinyServer(local).start()
    yield srv
    srv.stop()


def url(server: TinyServer) -> str:
    return f"http://127.0.0.1:{server.port}/v1"


def pin(tiny: tuple[Path, Path]) -> dict[str, Any]:
    base = tiny[0]
    return {"base_model_id": str(base), "revision": weights_digest(base)}


def test_served_equals_in_process(server: TinyServer, local: LearnedPlanner) -> None:
    prompts = ["plan A", "a longer prompt for plan B", "plan C?"]
    served = ServedPlanner(url(server), "conductor", max_new_tokens=MAX_NEW)
    before = len(server.prompts)
    assert served.generate(prompts, batch_size=3) == local.generate(prompts, batch_size=1)
    assert server.prompts[before:] and sorted(server.prompts[before:]) == sorted(prompts)
    assert served.calls == 3 and served.completion_tokens > 0  # metered per call


def test_served_proposals_go_through_the_same_guard(
    server: TinyServer, tiny: tuple[Path, Path], local: LearnedPlanner
) -> None:
    project = load_project(ROOT)
    compiled, _ = project.pipelines()
    base = next(p for p in compiled if p.name == "general" and p.tier == "strict")
    profiler = make_profiler(project.policy.risk)
    proposer = LearnedProposer(
        adapter=str(tiny[1]), endpoint=url(server), endpoint_model="conductor", **pin(tiny)
    )
    decision = conduct(project.policy_source, base, HIGH, profiler, "learned", proposer=proposer)
    # the served text is exactly the in-process text for the same prompt, guarded the same way
    assert proposer.last_prompt is not None
    assert proposer.last_raw == local.generate([proposer.last_prompt])[0]
    assert decision.proposal is not None and decision.fallback == "risk"
    assert decision.reasons and "planner_unavailable" not in decision.reasons


def test_eval_plans_every_case_in_one_batch(server: TinyServer, tiny: tuple[Path, Path]) -> None:
    before = len(server.prompts)
    ev = loomc.prepare_eval(
        ROOT / "evals" / "mixed-routing.jsonl",
        "conductor:learned",
        project=ROOT,
        limit=4,
        planner_options={
            "adapter": str(tiny[1]),
            "endpoint": url(server),
            "endpoint_model": "conductor",
            "max_new_tokens": MAX_NEW,
            **pin(tiny),
        },
    )
    assert len(server.prompts) == before  # asked once the eval starts, never on a dry run
    receipt = ev.run()
    assert len(server.prompts) - before == 4
    assert all(d["planner"] == "learned" and d["proposal"] for d in ev.decisions.values())
    assert receipt.planners["conductor:learned"]["decisions"] == 4
    assert all(r.result is not None and r.result.calls >= 1 for r in receipt.runs)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_endpoint_down_refuses_unless_the_fallback_is_allowed(tiny: tuple[Path, Path]) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}/v1"
    options = {
        "endpoint": dead,
        "endpoint_model": "conductor",
        "adapter": str(tiny[1]),
        **pin(tiny),
    }
    with pytest.raises(loomc.PlanRejected, match=r"unavailable.*--allow-planner-fallback"):
        loomc.run(HIGH, project=ROOT, planner="learned", planner_options=options)
    result = loomc.run(
        HIGH, project=ROOT, planner="learned", planner_options={**options, "allow_fallback": True}
    )
    assert result.conductor is not None
    assert result.conductor["reasons"] == ["planner_unavailable"]
    assert result.conductor["fallback"] == "risk" and "127.0.0.1" in result.conductor["details"][0]
    with pytest.raises(PlanningFailed, match=r"conductor:learned: .*--allow-planner-fallback"):
        loomc.prepare_eval(
            ROOT / "evals" / "mixed-routing.jsonl",
            "conductor:learned",
            project=ROOT,
            limit=2,
            planner_options=options,
        ).run()
    ev = loomc.prepare_eval(
        ROOT / "evals" / "mixed-routing.jsonl",
        "conductor:learned",
        project=ROOT,
        limit=2,
        planner_options=options,
        allow_planner_fallback=True,
    )
    summary = ev.run().planners["conductor:learned"]
    assert summary["unavailable"] == 2 and summary["fallbacks"] == 2


def test_pin_is_verified_before_loading(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    base, adapter = tiny
    good = pin(tiny)
    verify_pin(adapter, base, good["base_model_id"], good["revision"])  # passes
    with pytest.raises(PinMismatch, match="pin its base before loading"):
        verify_pin(adapter, base, None, None)
    with pytest.raises(PinMismatch, match="not the pinned base 'other/model'"):
        verify_pin(adapter, base, "other/model", good["revision"])
    with pytest.raises(PinMismatch, match="not the pinned sha256:0000"):
        verify_pin(adapter, base, good["base_model_id"], "sha256:" + "0" * 64)
    with pytest.raises(PinMismatch, match="not snapshot"):
        verify_pin(adapter, base, good["base_model_id"], "a" * 40)
    moved = tmp_path / "adapter"
    shutil.copytree(adapter, moved)
    config = json.loads((moved / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = "mistralai/Other"
    (moved / "adapter_config.json").write_text(json.dumps(config))
    proposer = LearnedProposer(str(base), str(moved), device="cpu", **good)
    with pytest.raises(PlannerUnavailable) as caught:
        proposer.model()
    message = str(caught.value)
    assert "\n" not in message and "'mistralai/Other'" in message and str(base) in message
    assert proposer._model is None  # nothing was loaded


def test_eval_loads_an_in_process_planner_only_when_it_runs(tiny: tuple[Path, Path]) -> None:
    base, adapter = tiny
    options = {"base_model": str(base), "adapter": str(adapter), "device": "cpu",
               "dtype": "float32", "max_new_tokens": MAX_NEW, **pin(tiny)}  # fmt: skip
    ev = loomc.prepare_eval(ROOT / "evals" / "mixed-routing.jsonl", "conductor:learned",
                            project=ROOT, limit=2, planner_options=options)  # fmt: skip
    (pending,) = ev.planned.pending
    assert pending.proposer._model is None  # checked (pin, directories), not loaded
    assert ev.estimate.planner_calls == 0  # nothing billed in process
    receipt = ev.run()
    decisions = [r.conductor for r in receipt.runs]
    assert len(decisions) == 2 and all(d and d["proposal"] is not None for d in decisions)
    assert all(d and d.get("usage") is None for d in decisions)
    assert "planner" not in receipt.totals
