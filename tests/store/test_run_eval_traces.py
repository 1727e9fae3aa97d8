"""`loomc run` and `loomc eval` record every run in the trace store, like `loomc serve`: through
the public API (``store=``), by default in the project's ``.loomc/store.db`` from the CLI, with
``--no-store`` / ``LOOMC_STORE=off`` to opt out; `loomc traces list` filters them by source."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import loomc
from loomc.store import RunFilter, open_store, store_url

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "evals" / "mixed-routing.jsonl"


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'research'}"}
    full.pop("LOOMC_STORE", None)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "loomc", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env=full,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the repository's project (pipelines + default mock policy)."""
    dest = tmp_path / "proj"
    dest.mkdir()
    shutil.copytree(ROOT / "pipelines", dest / "pipelines")
    shutil.copytree(ROOT / "policies", dest / "policies")
    return dest


def test_api_run_stores_the_run_with_its_events_and_receipt(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    result = loomc.run("Explain DNS briefly.", project=ROOT, tier="lean", store=db, stream=False)
    store = open_store(db)
    (row,) = store.runs()
    assert (row.source, row.pipeline, row.tier, row.key) == ("run", "general", "lean", None)
    assert row.receipt_hash == result.receipt_hash and row.calls == result.calls
    assert row.tokens == result.tokens and row.elapsed_ms == result.elapsed_ms
    full = store.run(row.run_id)
    assert full is not None
    kinds = [e["kind"] for e in full.events]
    assert kinds[0] == "run-started" and kinds[-1] == "run-finished"
    assert "token" not in kinds  # deltas are on the answer, not stored twice
    assert all(e["run_id"] == row.run_id for e in full.events)
    assert full.result["answer"] == result.answer
    assert full.result["receipt_hash"] == result.receipt_hash
    store.close()


def test_api_run_without_a_store_writes_nothing(tmp_path: Path) -> None:
    loomc.run("Explain DNS briefly.", project=ROOT, tier="lean", stream=False)
    assert not (tmp_path / ".loomc").exists()


def test_api_eval_stores_one_trace_per_executed_run_in_batches(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    ev = loomc.prepare_eval(DATASET, "baseline,lean", project=ROOT, limit=3, iterations=2)
    receipt = ev.run(store=db)
    store = open_store(db)
    rows = store.runs(RunFilter(source="eval"))
    assert len(rows) == len(ev.jobs) == 12 == len(receipt.runs)
    cells = sorted(
        (r["eval"]["case"], r["eval"]["strategy"], r["eval"]["iteration"])
        for r in (full.result for full in map(store.run, (x.run_id for x in rows)) if full)
    )
    assert cells == sorted((j.case.id, j.strategy.name, j.iteration) for j in ev.jobs)
    hashes = sorted(r.result.receipt_hash for r in receipt.runs if r.result)
    assert sorted(r.receipt_hash for r in rows) == hashes
    assert {r.source for r in store.runs()} == {"eval"}
    store.close()
    # a resumed eval stores only what it runs again: nothing here
    journal = tmp_path / "j.jsonl"
    ev.run(store=db, journal=journal)
    ev.run(store=db, journal=journal, resume=True)
    store = open_store(db)
    assert len(store.runs()) == 24
    store.close()


def test_store_url_convention(tmp_path: Path) -> None:
    assert store_url(None, tmp_path, env={}) == str(tmp_path / ".loomc" / "store.db")
    assert store_url("x.db", tmp_path, env={"LOOMC_STORE": "y.db"}) == "x.db"
    assert store_url(None, tmp_path, env={"LOOMC_STORE": "postgresql://h/db"}) == (
        "postgresql://h/db"
    )
    assert store_url(None, tmp_path, env={"LOOMC_STORE": "off"}) is None
    # the server's ledger cannot be turned off: it falls back to the project's file
    assert store_url(None, tmp_path, env={"LOOMC_STORE": "off"}, required=True) == str(
        tmp_path / ".loomc" / "store.db"
    )


def test_cli_run_and_eval_record_by_default_and_traces_filter_by_source(project: Path) -> None:
    ran = cli("run", "Explain DNS briefly.", "--tier", "lean", "--json", cwd=project)
    assert ran.returncode == 0, ran.stderr
    receipt = json.loads(ran.stdout)["receipt_hash"]
    assert (project / ".loomc" / "store.db").is_file()
    out = project / "out" / "r.json"
    evaluated = cli(
        "eval", "--dataset", str(DATASET), "--strategies", "lean", "--limit", "2",
        "--output", str(out), cwd=project,
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    listed = cli("traces", "list", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted(r["source"] for r in rows) == ["eval", "eval", "run"]
    only_run = cli("traces", "list", "--json", "--source", "run", cwd=project)
    (row,) = [json.loads(line) for line in only_run.stdout.splitlines()]
    assert row["receipt_hash"] == receipt and row["tier"] == "lean"
    assert cli("traces", "list", "--json", "--until", "2000-01-01", cwd=project).stdout == ""
    table = cli("traces", "list", "--source", "eval", cwd=project)
    assert table.returncode == 0 and table.stdout.count(" eval ") == 2
    assert rows[0]["run_id"][:12] in table.stdout or rows[1]["run_id"][:12] in table.stdout
    # piped, every row stays whole on one line (no terminal width to fit into)
    piped = cli("traces", "list", "--source", "run", cwd=project, env={"COLUMNS": "60"})
    (line,) = [x for x in piped.stdout.splitlines() if row["run_id"][:12] in x]
    assert "general@lean" in line and row["stop_reason"] in line and "…" not in piped.stdout


def test_cli_opt_out_and_explicit_store(project: Path, tmp_path: Path) -> None:
    off = cli("run", "Explain DNS briefly.", "--tier", "lean", "--no-store", cwd=project)
    assert off.returncode == 0, off.stderr
    env_off = cli("run", "hi there", "--tier", "lean", cwd=project, env={"LOOMC_STORE": "off"})
    assert env_off.returncode == 0, env_off.stderr
    assert not (project / ".loomc").exists()
    elsewhere = tmp_path / "elsewhere.db"
    by_env = cli(
        "run", "hi there", "--tier", "lean", cwd=project, env={"LOOMC_STORE": str(elsewhere)}
    )
    assert by_env.returncode == 0, by_env.stderr
    listed = cli("traces", "list", "--json", cwd=project, env={"LOOMC_STORE": str(elsewhere)})
    assert len(listed.stdout.splitlines()) == 1
    assert not (project / ".loomc").exists()
    bad = cli("run", "hi there", "--store", "mysql://nowhere/x", cwd=project)
    assert bad.returncode == 2 and "unknown store URL" in bad.stderr
    assert "Traceback" not in bad.stderr and "no model was called" in bad.stderr
    clash = cli("run", "hi", "--store", "a.db", "--no-store", cwd=project)
    assert clash.returncode == 2 and "not allowed with" in clash.stderr


def test_an_unreachable_postgresql_store_is_one_line_without_the_password(project: Path) -> None:
    """psycopg's connection error carries a hint on a line of its own; the CLI's error is one
    line, exit 1, and the URL's password is never shown."""
    secret = "Zq8vNw3kTr"
    url = f"postgresql://loomc:{secret}@127.0.0.1:1/traces"
    done = cli("traces", "list", cwd=project, env={"LOOMC_STORE": url})
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("loomc traces: cannot open store postgresql://")
    assert "Connection refused" in lines[0] or "connection failed" in lines[0]
    assert secret not in done.stderr + done.stdout
