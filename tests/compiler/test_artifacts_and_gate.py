"""IR artifact and plan table goldens, `import` of the reference configs, and the --against gate."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from loomc.cli.main import main
from loomc.policy.load import load_policy

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("LOOMC_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def _out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().out


def test_ir_artifact_is_deterministic_and_golden(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    argv = ["compile", ".", "--policy", "policies/default.yaml"]
    code1, first = _out(capsys, argv)
    code2, second = _out(capsys, argv)
    assert code1 == code2 == 0 and first == second
    _golden("ir-default.json", first)
    doc = json.loads(first)
    assert doc["content_hash"].startswith("sha256:")
    assert {p["key"] for p in doc["plans"]} >= {"general@balanced", "fixed", "baseline", "fanout"}


def test_content_hash_changes_with_the_pipeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(ROOT / "pipelines", tmp_path / "pipelines")
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    pol = str(tmp_path / "policies" / "default.yaml")
    _, before = _out(capsys, ["compile", str(tmp_path), "--policy", pol])
    f = tmp_path / "pipelines" / "baseline.loom"
    f.write_text(f.read_text().replace("max_tokens 900", "max_tokens 800"))
    _, after = _out(capsys, ["compile", str(tmp_path), "--policy", pol])
    assert json.loads(before)["content_hash"] != json.loads(after)["content_hash"]


def test_plan_table_golden(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    code, text = _out(capsys, ["plan", ".", "--policy", "policies/default.yaml"])
    assert code == 0
    _golden("plan-default.txt", text)
    code, js = _out(capsys, ["plan", ".", "--policy", "policies/default.yaml", "--json"])
    rows = {(r["pipeline"], r["tier"]): r for r in json.loads(js)}
    assert rows[("general", "strict")]["calls"] == {"worst": 3, "ceiling": 3, "ok": True}
    assert rows[("fanout", None)]["latency"]["worst"] == 40000  # branches counted once
    _golden("plan-default.json", js)


def test_import_reference_configs(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = sorted((shared_dir / "reference" / "seed-configs").glob("*.json"))
    assert configs
    for cfg in configs:
        out = tmp_path / (cfg.stem + ".yaml")
        assert main(["import", str(cfg), "--output", str(out)]) == 0
        source, diags = load_policy(out)
        assert source is not None and not diags, (cfg, diags)
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {"providers": {"x": {"type": "openai", "apiKey": "sk-live-123456789"}}, "models": {}}
        )
    )
    assert main(["import", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "literal API key" in err and "sk-live" not in err


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    )


def test_against_ref_reports_moves_and_fails_past_a_ceiling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "proj"
    (repo / "pipelines").mkdir(parents=True)
    shutil.copytree(ROOT / "policies", repo / "policies")
    policy = repo / "policies" / "default.yaml"  # a worker's max_tokens caps its steps: lift it
    policy.write_text(policy.read_text().replace("max_tokens: 900", "max_tokens: 4000"))
    src = 'pipeline p {\n  budget { tokens <= 6_000 }\n  step a : writer(drafter) { task "t" max_tokens 900 }\n  answer a\n}\n'
    (repo / "pipelines" / "p.loom").write_text(src)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    pol = str(repo / "policies" / "default.yaml")
    # a move within the ceiling is a note
    (repo / "pipelines" / "p.loom").write_text(src.replace("900", "1000"))
    code = main(["check", str(repo), "--policy", pol, "--against", "HEAD", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    codes = [d["code"] for d in doc["diagnostics"]]
    assert code == 0 and "LOOM704" in codes and "LOOM703" not in codes
    # raising the ceiling together with the cost still fails against the ref's ceiling
    (repo / "pipelines" / "p.loom").write_text(src.replace("900", "3000").replace("6_000", "9_000"))
    code = main(["check", str(repo), "--policy", pol, "--against", "HEAD", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and "LOOM703" in [d["code"] for d in doc["diagnostics"]]
    # an unknown ref is a clear error, not a traceback
    code = main(["check", str(repo), "--policy", pol, "--against", "no-such-ref"])
    assert code == 1 and "LOOM702" in capsys.readouterr().err
