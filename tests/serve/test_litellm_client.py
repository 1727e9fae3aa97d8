"""LiteLLM's Python SDK as a client of `loomc serve`, unchanged: it runs in LiteLLM's own venv
(a subprocess with that interpreter), streaming and not, and the usage it reports is the sum of
the run's calls in the stored receipt; a wrong key is LiteLLM's AuthenticationError."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from servekit import KEY_VAR, SECRET, ServeProcess, eventually

from loomc.store import RunFilter, StoredRun, open_store

LITELLM_PY = Path(os.environ.get("LOOMC_LITELLM_VENV", "/work/main/.venv-litellm")) / "bin/python"
HERE = Path(__file__).resolve().parent


def usage_of(run: StoredRun) -> dict[str, int]:
    steps = run.result["steps"]
    prompt = sum(s["usage"]["prompt_tokens"] for s in steps)
    completion = sum(s["usage"]["completion_tokens"] for s in steps)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total": run.tokens}


def test_litellm_sdk_streaming_and_not_reports_the_receipts_usage(
    keyed_server: ServeProcess,
) -> None:
    if not LITELLM_PY.exists():
        if os.environ.get("CI"):
            pytest.fail(f"LiteLLM's venv missing at {LITELLM_PY} (scripts/setup --all)")
        pytest.skip(f"LiteLLM's venv not found at {LITELLM_PY}")
    before = {r.run_id for r in _runs(keyed_server)}
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        KEY_VAR: SECRET,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no network at import
        "LITELLM_TELEMETRY": "False",
    }
    done = subprocess.run(
        [
            str(LITELLM_PY),
            str(HERE / "litellm_client.py"),
            keyed_server.url + "/v1",
            "general@strict",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            got = json.loads(line)
            out[got["mode"]] = got
    # written behind the responses: within milliseconds
    fresh = eventually(
        lambda: [r for r in _runs(keyed_server) if r.run_id not in before],
        lambda runs: len(runs) >= 2,
    )
    new = sorted(fresh, key=lambda r: r.ts)
    assert len(new) == 2, [r.run_id for r in new]  # the refused call ran nothing
    plain_run, stream_run = new
    for mode, run in (("plain", plain_run), ("stream", stream_run)):
        reply, want = out[mode], usage_of(run)
        assert reply["content"] == run.result["answer"]
        assert reply["usage"]["prompt_tokens"] == want["prompt_tokens"]
        assert reply["usage"]["completion_tokens"] == want["completion_tokens"]
        assert reply["usage"]["total_tokens"] == want["total"] == run.tokens
        assert run.calls == 3 and run.key == "ci"
    plain = out["plain"]
    assert plain["finish_reason"] == "stop"
    if plain["loomc"] is not None:  # LiteLLM keeps unknown fields on its response
        assert plain["loomc"]["receipt_hash"] == plain_run.receipt_hash
    assert out["auth"]["status"] == 401 and SECRET not in out["auth"]["message"]
    assert SECRET not in done.stdout and SECRET not in done.stderr


def _runs(server: ServeProcess) -> list[StoredRun]:
    store = open_store(server.store)
    try:
        return store.runs(RunFilter(key="ci"))
    finally:
        store.close()
