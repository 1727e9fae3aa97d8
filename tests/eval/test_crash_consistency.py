"""SIGKILL `loomc eval` at random points against a real server (its own process) that counts
the requests it sees, resuming after each kill: the server never sees more requests than the
eval-wide ceiling, every request was journaled before it was sent, no finished cell is paid
again and no finished result is lost.

The normal suite (and CI) kills 3 times; the soak run kills 20 times (``pytest -m soak``)."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
KEY = "sk-cc-9Rz3Lq7Wf2Ny8Tb5Jx1Gd4"
CALL_S = 0.15  # the server's delay per call: kills land within one call of the eval's progress  # random-looking: any 8 characters of a key are redacted


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def counting_server() -> Iterator[str]:
    """The lying server's honest model, delayed so kills land mid-call, in its own process."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "lying_server.py"), str(port), str(CALL_S)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"{url}/count", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the counting server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _seen(url: str) -> int:
    return int(httpx.get(f"{url}/count", timeout=5).json()["total"])


def _rows(journal: Path) -> list[dict[str, Any]]:
    """The journal's rows; none where there is no journal yet. Read, not checked then read: a
    starting eval's writability probe (``loomc.cli.eval``) creates the file and removes it
    again, and a poll that saw it could then fail to open it."""
    try:
        text = journal.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn last line (the next run cuts it)
    return out


def _setup(tmp_path: Path, url: str, cases: int) -> list[str]:
    policy: dict[str, Any] = yaml.safe_load((ROOT / "policies/default.yaml").read_text())
    policy["providers"] = {
        "gw": {
            "type": "openai-compatible",
            "base_url": f"{url}/v1",
            "api_key": "env:LOOMC_CRASH_KEY",
        }
    }
    for spec in policy["workers"].values():
        spec["model"] = "gw/honest"
    policy.pop("pricing", None)
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(policy), encoding="utf-8")
    prompts = [
        "Audit the refund flow for double-spend.",
        "Name three colours.",
        "Review OAuth token storage for leaks.",
        "Convert 3 miles to kilometres.",
    ]
    (tmp_path / "d.jsonl").write_text(
        "".join(
            json.dumps({"id": f"c{i}", "prompt": f"{prompts[i % 4]} (case {i})"}) + "\n"
            for i in range(cases)
        )
    )
    return [
        "-m",
        "loomc",
        "eval",
        "--dataset",
        str(tmp_path / "d.jsonl"),
        "--policy",
        str(tmp_path / "policy.yaml"),
        "--project",
        str(ROOT),
        "--strategies",
        "lean,balanced,strict",
        "--concurrency",
        "4",
        "--run-until-budget",
        "--output",
        str(tmp_path / "out.json"),
    ]


def _kill_and_resume(
    tmp_path: Path, url: str, kills: int, cases: int, ceiling: int, seed: int
) -> None:
    rng = random.Random(seed)
    args = [*_setup(tmp_path, url, cases), "--max-total-calls", str(ceiling)]
    journal = tmp_path / "out.json.journal.jsonl"
    env = {
        **os.environ,
        "LOOMC_CRASH_KEY": KEY,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "research")]),
    }
    finished: dict[tuple[str, str, int], str] = {}  # cell -> receipt hash, once ok
    killed = 0
    for attempt in range(kills * 3):
        if killed >= kills:
            break
        before = len(_rows(journal))
        child = subprocess.Popen(
            [sys.executable, *args, *(["--resume"] if attempt else [])],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            # wait for some progress (or the end), then kill at a random point within one call
            # of it: the first new line is a reservation, written before its request leaves, so
            # the kill lands mid-call while the eval has work left, however slow the machine
            # (a delay longer than a call let a busy machine's resumes finish before the kill)
            deadline = time.monotonic() + 60
            while (
                child.poll() is None
                and len(_rows(journal)) <= before
                and time.monotonic() < deadline
            ):
                time.sleep(0.01)
            time.sleep(rng.uniform(0, CALL_S))
            if child.poll() is None:
                os.kill(child.pid, signal.SIGKILL)
                killed += 1
        finally:
            child.wait(timeout=60)
        assert _seen(url) <= ceiling
        for row in _rows(journal):  # a finished cell is never replaced by a second payment
            if "ledger" not in row and row["status"] == "ok":
                cell = (row["case_id"], row["strategy"], row["iteration"])
                digest = row["result"]["receipt_hash"]
                assert finished.setdefault(cell, digest) == digest, cell
    assert killed >= min(kills, 3), "the eval kept finishing before it could be killed"

    final = subprocess.run(
        [sys.executable, *args, "--resume"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert final.returncode == 0, final.stderr[-2000:]
    assert "Traceback" not in final.stderr
    seen = _seen(url)
    assert seen <= ceiling
    rows = _rows(journal)
    reserved = {r["id"]: r for r in rows if r.get("ledger") == "reserve"}
    settled = {r["id"] for r in rows if r.get("ledger") == "settle"}
    # every request the server saw was journaled before it was sent
    assert len(settled) <= seen <= sum(r["amount"]["calls"] for r in reserved.values())
    receipt = json.loads((tmp_path / "out.json").read_text())
    assert len(receipt["runs"]) == cases * 3  # no result lost: every cell is in the receipt
    by_cell = {(r["case_id"], r["strategy"], r["iteration"]): r for r in receipt["runs"]}
    for cell, digest in finished.items():  # finished before a kill: kept, not re-run
        assert by_cell[cell]["status"] == "ok"
        assert by_cell[cell]["result"]["receipt_hash"] == digest
    ok = [r for r in rows if "ledger" not in r and r["status"] == "ok"]
    keys = [(r["case_id"], r["strategy"], r["iteration"]) for r in ok]
    assert len(keys) == len(set(keys))  # each finished cell journaled (paid) exactly once
    assert KEY not in journal.read_text()


def test_kills_never_overshoot_the_eval_wide_ceiling(tmp_path: Path, counting_server: str) -> None:
    _kill_and_resume(tmp_path, counting_server, kills=3, cases=8, ceiling=20, seed=13)


@pytest.mark.soak
def test_twenty_kills_never_overshoot_the_eval_wide_ceiling(
    tmp_path: Path, counting_server: str
) -> None:
    seed = int(os.environ.get("LOOMC_CRASH_SEED", "1"))  # vary it by hand for more trials
    _kill_and_resume(tmp_path, counting_server, kills=20, cases=24, ceiling=70, seed=seed)
