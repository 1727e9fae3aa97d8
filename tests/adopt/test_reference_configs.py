"""The reference runtime's five example configs run here with no hand edits: import -> check ->
run, on the mock (its own providers are swapped for the mock through ``loomc.run(providers=)``,
since Dot, Ollama and OpenRouter are not reachable offline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import loomc
from loomc.cli.main import main
from loomc.policy.importer import ImportError_, convert
from loomc.policy.load import load_policy
from loomc.providers.mock import MockProvider

ROOT = Path(__file__).resolve().parents[2]
UNPRICED = {"dot", "dot-code", "ollama", "openrouter"}


def _configs(shared_dir: Path) -> list[Path]:
    configs = sorted((shared_dir / "reference" / "seed-configs").glob("*.config.json"))
    assert len(configs) == 5
    return configs


def test_each_reference_config_imports_checks_and_runs(shared_dir: Path, tmp_path: Path) -> None:
    for cfg in _configs(shared_dir):
        name = cfg.name.removesuffix(".config.json")
        policy = tmp_path / f"{name}.yaml"
        assert main(["import", str(cfg), "--output", str(policy)]) == 0
        for source in (policy, cfg):  # the written policy, and the config converted in memory
            result = loomc.check(ROOT / "pipelines", policy=source)
            assert result.errors == 0, (cfg, [d.message for d in result.diagnostics])
            unproven = [d for d in result.diagnostics if d.code == "LOOM412"]
            # a money promise is unproven (a warning, never silence) exactly where nothing is priced
            assert bool(unproven) == (name in UNPRICED), (cfg, unproven)
            assert all(not d.is_error and "unproven" in d.message for d in unproven)
        config = json.loads(cfg.read_text())
        mocks = {p: MockProvider(p) for p in config["providers"]}
        for pipeline in ("general", "code-review", "research"):
            res = loomc.run(
                "Review this payment API for double-spend races.",
                project=ROOT,
                policy=cfg,
                pipeline=pipeline,
                providers=mocks,
                stream=False,
            )
            assert res.stop_reason == "completed", (cfg, pipeline, res.error)
            assert res.tier == "balanced"  # adaptive.policy (or the reference default)
            assert res.calls == 2 and res.answer.strip()
            if name in {"dot", "dot-code"}:  # credits per call carried, ceiling = calls x 1
                assert res.budget.used.credits == 2


def test_adaptive_limits_are_carried_not_dropped() -> None:
    config = {
        "providers": {"dot": {"type": "dot", "apiKey": "env:DOT_API_KEY"}},
        "models": {"drafter": "dot/a", "critic": "dot/b"},
        "adaptive": {
            "policy": "Strict",
            "maxCredits": 5,
            "maxCalls": 2,
            "maxLatencyMs": 30000,
            "estimatedCreditsByModel": {"dot/b": 3},
        },
    }
    policy = convert(config)
    assert policy["default_tier"] == "strict"
    assert policy["tiers"]["strict"] == {"calls": 2, "latency": "30000ms", "credits": 5}
    # tiers without an explicit maxCredits: calls x the largest estimate, as the reference does
    assert policy["tiers"]["lean"]["credits"] == 3
    assert policy["tiers"]["balanced"]["credits"] == 6
    assert policy["workers"]["critic"]["credits"] == 3
    assert policy["workers"]["drafter"]["group"] != policy["workers"]["critic"]["group"]


@pytest.mark.parametrize(
    ("adaptive", "needle"),
    [
        ({"policy": "paranoid"}, "use lean, balanced or strict"),
        ({"maxCredits": -1}, "adaptive.maxCredits"),
        ({"maxCalls": 1.5}, "adaptive.maxCalls"),
        ({"maxLatencyMs": True}, "adaptive.maxLatencyMs"),
    ],
)
def test_bad_adaptive_limits_are_refused(adaptive: dict[str, object], needle: str) -> None:
    config = {"providers": {"mock": {"type": "mock"}}, "models": {"drafter": "mock/a"}}
    with pytest.raises(ImportError_, match=needle):
        convert({**config, "adaptive": adaptive})


def test_run_config_flag_and_reference_spellings(
    shared_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    mock = str(shared_dir / "reference" / "seed-configs" / "mock.config.json")
    argv = ["run", "hi", "--config", mock, "--policy", "strict", "--adaptive", "--json"]
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["tier"] == "strict"
    assert "--policy strict read as --tier strict" in cap.err
    assert main(["run", "hi", "--policy", "lean", "--tier", "strict"]) == 2
    assert "clashes with --tier strict" in capsys.readouterr().err
    assert main(["run", "hi", "--config", mock, "--policy", "policies/default.yaml"]) == 2
    assert "give one" in capsys.readouterr().err


def test_literal_key_in_a_config_never_reaches_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    bad = tmp_path / "bad.config.json"
    config = {"providers": {"x": {"type": "openai", "apiKey": "sk-live-1234"}}}
    bad.write_text(json.dumps(config, indent=2))  # the excerpt shows line 1, as for a YAML policy
    assert main(["run", "hi", "--config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "literal API key" in err and "sk-live" not in err


def test_eval_accepts_reference_strategy_names(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(ROOT)
    argv = ["eval", "--dataset", "evals/mixed-routing.jsonl", "--limit", "2", "--dry-run"]
    argv += ["--strategies", "adaptive-lean,adaptive-strict", "--output", str(tmp_path / "r.json")]
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "'adaptive-lean' is the reference's name for 'lean'" in cap.err
    assert set(json.loads(cap.out)["per_strategy"]) == {"lean", "strict"}
    assert main([*argv[:-4], "--strategies", "lean", "--policy", "balanced", *argv[-2:]]) == 2
    assert "is a tier" in capsys.readouterr().err


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=12,
)
_keys = st.sampled_from(["providers", "models", "workers", "pricing", "adaptive", "name"])


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.dictionaries(_keys, _json, max_size=6))
def test_any_json_config_imports_or_is_refused_with_one_diagnostic(
    tmp_path: Path, config: dict[str, object]
) -> None:
    path = tmp_path / "x.config.json"
    path.write_text(json.dumps(config))
    source, diags = load_policy(path)
    if source is None:  # refused: one located diagnostic, never an exception
        assert len(diags) == 1 and diags[0].is_error and diags[0].span.file == str(path)
        assert diags[0].code in {"LOOM601", "LOOM602", "LOOM603"}
