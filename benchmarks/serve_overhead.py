"""`loomc serve`'s cost over a direct run, and the ledger's cost per reservation (issue 14).

    python benchmarks/serve_overhead.py [N]     # from a checkout; mock policy, no network

Prints, for N runs of general@lean on the mock provider (zero latency): p50/p95 of a direct
``loomc.arun`` and of the same run through the server (a non-streaming request with httpx on a
keep-alive connection, a key and a per-key daily budget, so the ledger and the store are on the
path), their p50 difference; then the SQLite reservation cost alone, one caller and 128 threads.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import httpx
import uvicorn
import yaml

import loomc
from loomc.serve import create_app
from loomc.store import Scope, open_store
from loomc.units import Budget, Usage

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Explain DNS briefly."


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000


def main(n: int) -> None:
    tmp = Path(tempfile.mkdtemp())
    policy = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    policy["serve"] = {
        "keys": [{"name": "b", "key": "env:LOOMC_BENCH_KEY", "per_day": {"calls": 10**9}}]
    }
    (tmp / "p.yaml").write_text(yaml.safe_dump(policy))
    project = loomc.Project.load(ROOT, tmp / "p.yaml")

    async def direct() -> list[float]:
        times = []
        async with loomc.ProviderPool(project.policy) as pool:
            for _ in range(n):
                t = time.perf_counter()
                await loomc.arun(PROMPT, project=project, tier="lean", providers=pool, stream=False)
                times.append(time.perf_counter() - t)
        return times

    direct_s = anyio.run(direct)
    app = create_app(project, open_store(tmp / "store.db"), env={"LOOMC_BENCH_KEY": "bench-key"})
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    body = {"model": "general@lean", "messages": [{"role": "user", "content": PROMPT}]}
    served_s = []
    with httpx.Client(base_url=url, headers={"authorization": "Bearer bench-key"}) as c:
        for _ in range(n):
            t = time.perf_counter()
            c.post("/v1/chat/completions", json=body).raise_for_status()
            served_s.append(time.perf_counter() - t)
    server.should_exit = True
    print(f"direct arun     p50 {pct(direct_s, 0.5):7.2f} ms  p95 {pct(direct_s, 0.95):7.2f} ms")
    print(f"through serve   p50 {pct(served_s, 0.5):7.2f} ms  p95 {pct(served_s, 0.95):7.2f} ms")
    print(
        f"serve overhead  p50 {pct(served_s, 0.5) - pct(direct_s, 0.5):7.2f} ms "
        "(HTTP, JSON, auth, reservation + settle + stored run in SQLite)"
    )

    store = open_store(tmp / "ledger.db")
    scope = [Scope("key:b", Budget(calls=10**9))]
    one = []
    for _ in range(n):
        t = time.perf_counter()
        store.reserve(scope, Usage(calls=1), "d")
        one.append(time.perf_counter() - t)

    def timed(_: int) -> float:
        t = time.perf_counter()
        store.reserve(scope, Usage(calls=1), "d")
        return time.perf_counter() - t

    with ThreadPoolExecutor(128) as pool:
        many = list(pool.map(timed, range(max(n, 256))))
    wall = time.perf_counter()
    with ThreadPoolExecutor(128) as pool:
        list(pool.map(timed, range(max(n, 256))))
    wall = time.perf_counter() - wall
    print(
        f"SQLite reserve  1 caller p50 {pct(one, 0.5):.3f} ms; 128 threads p50 "
        f"{pct(many, 0.5):.3f} ms, {max(n, 256) / wall:,.0f} reservations/s"
    )
    print(f"(N={n}; statistics.mean direct {statistics.mean(direct_s) * 1000:.2f} ms)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
