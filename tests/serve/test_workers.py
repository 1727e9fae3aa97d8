"""``loomc serve --workers N``: worker processes on one port share one store, so a key's daily
budget holds across them exactly as in one process; SIGTERM stops every worker."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import httpx
from servekit import KEY_VAR, SECRET, ServeProcess, write_policy
from test_serve_cli import serve as serve_cli

from loomc.store import open_store, today

AUTH = {"authorization": f"Bearer {SECRET}"}


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        text = Path(f"/proc/{pid}/task/{task}/children").read_text()
        found += [int(p) for p in text.split()]
    return found


async def _fire(url: str, n: int) -> list[httpx.Response]:
    body: dict[str, Any] = {
        "model": "general@lean",
        "messages": [{"role": "user", "content": "Explain DNS briefly."}],
    }
    limits = httpx.Limits(max_connections=n)
    async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=60, limits=limits) as c:
        return list(
            await asyncio.gather(*(c.post("/v1/chat/completions", json=body) for _ in range(n)))
        )


def test_two_workers_share_one_key_budget_without_overshoot(tmp_path: Path) -> None:
    serve = {"keys": [{"name": "ci", "key": f"env:{KEY_VAR}", "per_day": {"calls": 5}}]}
    policy = write_policy(tmp_path / "policy.yaml", serve, {"latency_ms": 20})
    store = tmp_path / "store.db"
    server = ServeProcess(policy, store, env={KEY_VAR: SECRET}, args=("--workers", "2"))
    try:
        workers = _children(server.proc.pid)
        assert len(workers) == 2
        deadline = time.monotonic() + 30
        while server.log.read_text().count("Application startup complete") < 2:
            assert time.monotonic() < deadline, server.log.read_text()
            time.sleep(0.05)
        replies = asyncio.run(_fire(server.url, 64))
    finally:
        log = server.stop()
    assert server.proc.returncode == 0, log
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)  # every worker stopped
    statuses = [r.status_code for r in replies]
    assert statuses.count(200) == 5 and statuses.count(402) == 59
    opened = open_store(store)
    assert opened.spent("key:ci", today()).calls == 5
    assert len(opened.runs()) == 5
    opened.close()
    assert "Traceback" not in log


def test_workers_below_one_are_refused_before_listening(tmp_path: Path) -> None:
    done = serve_cli(write_policy(tmp_path / "p.yaml"), "--workers", "0")
    assert done.returncode == 2
    assert "--workers must be at least 1, not 0" in done.stderr
    assert "Traceback" not in done.stderr
