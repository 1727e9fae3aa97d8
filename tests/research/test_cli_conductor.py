"""`loomc conductor predict → guard → score → stats` end to end, exit codes, and one-line errors."""

from __future__ import annotations

import hashlib
import json
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

from loomc.cli.main import main
from loomc.conductor.outcome import enumerate_candidates, feasible
from loomc.conductor.plan import canonical_json
from loomc_research.corpus_io import write_jsonl
from loomc_research.v2.generator import generate


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli-conductor") / "test.jsonl"
    write_jsonl(path, generate(sizes=(("test", 24),)).splits["test"])
    return path


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _infeasible(row: dict[str, Any]) -> str | None:
    from loomc_research.v2.score import Example

    e = Example.from_row(row)
    for c in enumerate_candidates(e.workers):
        if not feasible(c, e.constraints):
            return canonical_json(c.record())
    return None


def test_predict_guard_score_stats(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows(data)
    det, det_sum, det_rec = tmp_path / "det.jsonl", tmp_path / "det.json", tmp_path / "det_r.jsonl"
    assert (
        main(
            [
                "conductor",
                "predict",
                "--planner",
                "router",
                "--data",
                str(data),
                "--output",
                str(det),
            ]
        )
        == 0
    )
    assert [r["id"] for r in _rows(det)] == [r["id"] for r in rows]
    assert (
        main(
            [
                "conductor",
                "score",
                "--data",
                str(data),
                "--predictions",
                str(det),
                "--output",
                str(det_sum),
                "--records",
                str(det_rec),
            ]
        )
        == 0
    )
    summary = json.loads(det_sum.read_text())
    assert summary["lane"] == "det" and summary["examples"] == 24
    assert summary["plan_valid_rate"] == 1.0 and summary["receipt_consistent_rate"] == 1.0

    # a "base" lane of prose and a "trained" lane with three flawed proposals
    base = tmp_path / "base.jsonl"
    write_jsonl(
        base,
        [
            {"id": r["id"], "prediction": "```\nI would use a strict plan.", "elapsed_ms": 1000.0}
            for r in rows
        ],
    )
    raw = tmp_path / "raw.jsonl"
    trained = [{"id": r["id"], "prediction": r["target"], "elapsed_ms": 50.0} for r in rows]
    trained[0]["prediction"] = "no json here"
    trained[1]["prediction"] = '{"policy": "strict", "writer": "worker_a"}'
    over = next(i for i, r in enumerate(rows) if i > 1 and _infeasible(r))
    trained[over]["prediction"] = str(_infeasible(rows[over]))
    write_jsonl(raw, trained)

    guarded = tmp_path / "guarded.jsonl"
    assert (
        main(
            [
                "conductor",
                "guard",
                "--data",
                str(data),
                "--predictions",
                str(raw),
                "--output",
                str(guarded),
            ]
        )
        == 0
    )
    report = json.loads(Path(f"{guarded}.guard.json").read_text())
    assert report == {
        "examples": 24,
        "accepted": 21,
        "fallback_count": 3,
        "fallback_rate": 0.125,
        "reasons": {"invalid_json": 1, "invalid_plan": 1, "over_budget": 1},
    }
    g_rows = _rows(guarded)
    assert g_rows[0]["raw_prediction"] == "no json here" and g_rows[0]["runtime_fallback_used"]

    lanes = {}
    for name, preds in (("base", base), ("raw", raw), ("guarded", guarded)):
        out, rec = tmp_path / f"{name}.summary.json", tmp_path / f"{name}_r.jsonl"
        assert (
            main(
                [
                    "conductor",
                    "score",
                    "--data",
                    str(data),
                    "--predictions",
                    str(preds),
                    "--output",
                    str(out),
                    "--records",
                    str(rec),
                    "--lane",
                    name,
                ]
            )
            == 0
        )
        lanes[name] = json.loads(out.read_text())
    assert lanes["base"]["json_valid_rate"] == 0.0
    assert lanes["base"]["mean_inference_ms"] == 1000.0
    assert lanes["raw"]["constraint_satisfied_rate"] < 1.0
    assert lanes["guarded"]["constraint_satisfied_rate"] == 1.0
    assert lanes["guarded"]["runtime_fallback_count"] == 3
    assert lanes["guarded"]["runtime_fallback_rate"] == 0.125

    stats = tmp_path / "stats.json"
    assert (
        main(
            [
                "conductor",
                "stats",
                "--deterministic",
                str(det_rec),
                "--base",
                str(tmp_path / "base_r.jsonl"),
                "--trained",
                str(tmp_path / "guarded_r.jsonl"),
                "--output",
                str(stats),
                "--iterations",
                "200",
            ]
        )
        == 0
    )
    doc = json.loads(stats.read_text())
    assert doc["examples"] == 24 and doc["bootstrap_iterations"] == 200
    assert (
        doc["input_sha256"]["trained"]
        == hashlib.sha256((tmp_path / "guarded_r.jsonl").read_bytes()).hexdigest()
    )
    vs_base = doc["comparisons"]["trained_vs_base"]
    assert vs_base["json_valid"]["mcnemar"]["trained_only"] == 24
    assert vs_base["utility_regret_reduction"]["right_minus_left"] > 900
    capsys.readouterr()


def test_predict_search(data: Path, tmp_path: Path) -> None:
    out, summary = tmp_path / "s.jsonl", tmp_path / "s.json"
    assert (
        main(
            [
                "conductor",
                "predict",
                "--planner",
                "search",
                "--data",
                str(data),
                "--output",
                str(out),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "conductor",
                "score",
                "--data",
                str(data),
                "--predictions",
                str(out),
                "--output",
                str(summary),
            ]
        )
        == 0
    )
    s = json.loads(summary.read_text())
    assert (s["exact_plan_rate"], s["mean_utility_regret"]) == (1.0, 0.0)


@pytest.mark.parametrize("command", ["score", "guard"])
def test_malformed_predictions_name_file_and_line(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    rows = _rows(data)
    good = json.dumps({"id": rows[0]["id"], "prediction": rows[0]["target"]})
    cases = {
        f"{good}\n{{not json\n": ":2:",
        f"{good}\n\n{json.dumps({'id': rows[1]['id']})}\n": ":3: prediction row needs a string 'prediction'",
        f"{good}\n[1, 2]\n": ":2: expected a JSON object",
        f"{good}\n{json.dumps({'id': 'nope', 'prediction': '{}'})}\n": ":2: id 'nope' is not in",
        f"{good}\n{good}\n": ":2: duplicate id",
    }
    for text, needle in cases.items():
        pred = tmp_path / "bad.jsonl"
        pred.write_text(text)
        argv = [
            "conductor",
            command,
            "--data",
            str(data),
            "--predictions",
            str(pred),
            "--output",
            str(tmp_path / "out.json"),
        ]
        assert main(argv) == 1
        line = _one_error_line(capsys)
        assert line.startswith(f"loomc conductor {command}: {pred}")
        assert needle in line, line


def test_missing_and_malformed_inputs(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.jsonl"
    assert (
        main(
            [
                "conductor",
                "score",
                "--data",
                str(missing),
                "--predictions",
                str(missing),
                "--output",
                str(tmp_path / "o.json"),
            ]
        )
        == 1
    )
    assert str(missing) in _one_error_line(capsys)

    bad_data = tmp_path / "bad_data.jsonl"
    bad_data.write_text('{"id": "x", "task": {}}\n')
    assert (
        main(
            [
                "conductor",
                "predict",
                "--planner",
                "router",
                "--data",
                str(bad_data),
                "--output",
                str(tmp_path / "p.jsonl"),
            ]
        )
        == 1
    )
    assert f"{bad_data}:1: row is missing constraints, workers" in _one_error_line(capsys)
    assert (
        main(
            [
                "conductor",
                "guard",
                "--data",
                str(bad_data),
                "--predictions",
                str(bad_data),
                "--output",
                str(tmp_path / "g.jsonl"),
            ]
        )
        == 1
    )
    assert f"{bad_data}:1: not a loom-conductor-v2 row" in _one_error_line(capsys)

    records = tmp_path / "rec.jsonl"
    records.write_text('{"id": "a", "json_valid": true}\n')
    assert (
        main(
            [
                "conductor",
                "stats",
                "--deterministic",
                str(records),
                "--base",
                str(records),
                "--trained",
                str(records),
                "--output",
                str(tmp_path / "s.json"),
            ]
        )
        == 1
    )
    assert f"{records}:1: scored record needs a boolean" in _one_error_line(capsys)

    out_dir = tmp_path / "no" / "such" / "dir" / "p.jsonl"
    assert (
        main(
            [
                "conductor",
                "predict",
                "--planner",
                "router",
                "--data",
                str(data),
                "--output",
                str(out_dir),
            ]
        )
        == 1
    )
    _one_error_line(capsys)


class _FakePlanner:
    calls: ClassVar[list[tuple[int, int]]] = []
    kwargs: ClassVar[dict[str, Any]] = {}

    def __init__(self, base_model: Any, adapter: Any, **kwargs: Any) -> None:
        type(self).kwargs = {"base_model": base_model, "adapter": adapter, **kwargs}
        type(self).calls = []

    def generate(self, prompts: list[str], batch_size: int) -> list[str]:
        type(self).calls.append((len(prompts), batch_size))
        assert all(p.endswith("\nOUTPUT=") for p in prompts)
        return [f" text {len(p)} " for p in prompts]


def test_predict_lm_planner_with_a_fake_module(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = types.ModuleType("loomc.conductor.learned")
    fake.LearnedPlanner = _FakePlanner  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "loomc.conductor.learned", fake)
    out = tmp_path / "learned.jsonl"
    assert (
        main(
            [
                "conductor",
                "predict",
                "--planner",
                "learned",
                "--data",
                str(data),
                "--output",
                str(out),
                "--base-model",
                str(tmp_path / "base"),
                "--adapter",
                str(tmp_path / "adapter"),
                "--revision",
                "abc",
                "--device",
                "cpu",
                "--dtype",
                "float32",
                "--batch-size",
                "10",
                "--max-new-tokens",
                "7",
                "--merge-adapter",
            ]
        )
        == 0
    )
    assert _FakePlanner.kwargs == {
        "base_model": tmp_path / "base",
        "adapter": tmp_path / "adapter",
        "revision": "abc",
        "device": "cpu",
        "dtype": "float32",
        "max_new_tokens": 7,
        "merge_adapter": True,
    }
    assert _FakePlanner.calls == [(10, 10), (10, 10), (4, 4)]
    rows = _rows(out)
    source = _rows(data)
    assert [set(r) for r in rows] == [{"id", "prediction", "elapsed_ms"}] * 24
    assert [r["id"] for r in rows] == [r["id"] for r in source]
    assert rows[0]["prediction"] == f" text {len(source[0]['prompt'])} "  # raw text, unchanged
    for start in (0, 10, 20):
        assert len({r["elapsed_ms"] for r in rows[start : start + 10]}) == 1  # batch wall time
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["examples"] == 24 and meta["batch_size"] == 10


def test_predict_lm_planner_errors(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "conductor",
        "predict",
        "--planner",
        "learned",
        "--data",
        str(data),
        "--output",
        str(tmp_path / "o.jsonl"),
    ]
    assert main(argv) == 2  # no --base-model
    assert "--base-model" in _one_error_line(capsys)

    argv += ["--base-model", str(tmp_path / "base")]
    monkeypatch.setitem(sys.modules, "loomc.conductor.learned", None)  # import fails
    assert main(argv) == 1
    assert "conductor' extra" in _one_error_line(capsys)

    class Broken:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ImportError("No module named 'peft'")

    class Missing:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("base model directory not found: /x\nsecond line")

    for cls, needle in ((Broken, "peft"), (Missing, "not found: /x second line")):
        fake = types.ModuleType("loomc.conductor.learned")
        fake.LearnedPlanner = cls  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "loomc.conductor.learned", fake)
        assert main(argv) == 1
        assert needle in _one_error_line(capsys)
    assert not (tmp_path / "o.jsonl").exists()


def test_predict_planners_are_the_product_registry_plus_the_router() -> None:
    from loomc.cli import conductor as cli
    from loomc.conductor.planners import PLANNER_NAMES
    from loomc_research import conductor as research

    assert cli.PLANNERS == research.PLANNERS  # the CLI cannot import research to ask
    assert set(research.PLANNERS) - {"router"} <= set(PLANNER_NAMES)
