"""Throughput at 128 concurrent streaming clients with a 50 ms upstream (issue 14).

    python benchmarks/serve_throughput.py [SECONDS] [CLIENTS] [DELAY_MS]   # default 15 128 50

Processes: the upstream (50 ms before it answers, then a 12-chunk SSE stream), `loomc serve`
(one process, ``general@lean``: one upstream call per request, a keyed daily budget so the
ledger is on the path), LiteLLM's proxy on the same upstream (when its venv is there), and this
client: CLIENTS tasks, each streaming requests back to back (``stream_options.include_usage``).
Ideal = CLIENTS / delay (2560 requests/s at 128 and 50 ms); printed per arm: completed
requests/s, fraction of ideal (goal >= 0.9 for loomc on one process), fraction of the machine's
own ceiling measured in the same run (``upstream``: the same client straight to the upstream),
p50/p95 request latency, and the server's CPU time per request (every thread of its process;
the upstream's and the client's excluded), which holds on a busy machine where rates do not;
beside it ``one core N req/s (F)``: 1 / that CPU, the rate one core given to the server alone
could sustain, and its fraction of ideal: the server's capacity, which the measured rate hides
while the client and the upstream share the machine's cores with it (the goal on one process
needs F >= 0.9, i.e. <= 0.39 ms of CPU per request at 128 clients and 50 ms).
``direct`` is no server at all: CLIENTS tasks running the same ``general@lean`` with
``loomc.arun`` in a process of their own (streamed, compiled once), the ceiling of the run
machinery on one process; its CPU per run is the floor under loomc's CPU per request.
Arms run in two passes, each the upstream first and then the others in a shuffled order;
the better of each arm's runs is reported beside its other run. ``LOOMC_BENCH_BEFORE=TREE`` adds
the ``before`` arm: the server of another checkout (e.g. ``git archive`` of the base commit),
in its own process against the same upstream, measured in the same run, and ``direct-before``:
the ``direct`` arm with that checkout's loomc.

The window is a steady state: it opens once every client has finished a request (a server
slower than the warm-up still has all its clients busy) and lasts SECONDS, or longer until it
holds CLIENTS completions. A fixed short window would under-count a slow server: 128 requests
sharing one slow process all finish together, after the window closed (LiteLLM's proxy read
0.0 requests/s that way while it was doing ~15).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import httpx
from serve_kit import (
    BEFORE,
    BODY,
    PIDS,
    TREE,
    cpu_seconds,
    litellm_proxy,
    loomc_serve,
    tree_env,
    upstream,
)

KEY = "bench-key-0123456789"
# adds ``loomc-2w``: this checkout's server with ``--workers 2`` (unless LOOMC_BENCH_WORKERS=1)
WORKERS = os.environ.get("LOOMC_BENCH_WORKERS", "2") != "1"
WARMUP_S = 3.0  # at least; until every client has finished one request (at most MAX_WAIT_S)
MAX_WAIT_S = 120.0
FAILURES: list[str] = []  # what each failed request got (the first few are printed)


class Conn:
    """One keep-alive HTTP/1.1 connection speaking just enough of the protocol to post a
    request and read a (chunked or sized) reply: a client this cheap is not the bottleneck at
    thousands of requests a second, where httpx would be."""

    def __init__(self, host: str, port: int, request: bytes, stream: bool = True) -> None:
        self.host, self.port, self.request, self.stream = host, port, request, stream
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self) -> bool:
        if self.writer is None or self.reader is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.reader, self.writer
        writer.write(self.request)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        lower = head.lower()
        body = b""
        if b"transfer-encoding: chunked" in lower:
            while True:
                size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
                body += await reader.readexactly(size + 2)
                if size == 0:
                    break
        else:
            length = int(lower.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
            body = await reader.readexactly(length)
        if b"connection: close" in lower:
            writer.close()
            self.reader = self.writer = None
        # an upstream failure still ends its stream with [DONE], after an error event
        whole = b"[DONE]" in body if self.stream else b'"chat.completion"' in body
        ok = status == 200 and whole and b'data: {"error"' not in body
        if not ok:
            FAILURES.append(f"HTTP {status}: {body[-300:]!r}")
        return ok


async def drive(
    base: str,
    model: str,
    key: str | None,
    clients: int,
    seconds: float,
    pid: int | None = None,
    stream: bool = True,
    others: dict[str, float] | None = None,
) -> tuple[float, list[float], int, float | None]:
    """(requests/s, latencies, errors, server CPU seconds per request) of ``clients``
    back-to-back streaming loops (JSON requests when not ``stream``) over a steady-state window
    (see the module's docstring). ``others``: more processes (name -> pid, 0 for this client)
    whose CPU seconds per request over the same window replace their pids in the dict."""
    url = httpx.URL(base)
    streamed = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
    body = json.dumps({**BODY, "model": model, **streamed}).encode()
    auth = f"authorization: Bearer {key}\r\n" if key else ""
    request = (
        f"POST {url.path.rstrip('/')}/chat/completions HTTP/1.1\r\nhost: {url.host}\r\n"
        f"content-type: application/json\r\n{auth}content-length: {len(body)}\r\n\r\n"
    ).encode() + body
    latencies: list[float] = []
    errors = 0
    conns = [Conn(url.host, url.port or 80, request, stream) for _ in range(clients)]
    warm = [False] * clients
    opened = asyncio.Event()  # the window is open
    closed = asyncio.Event()
    began = time.perf_counter()
    window: list[float] = []  # [start, end, cpu at start, cpu at end]
    watched = dict(others or {})
    at_open: dict[str, float] = {}

    def used(p: int) -> float:
        return time.process_time() if p == 0 else cpu_seconds(p)

    def check() -> None:
        now = time.perf_counter()
        if not opened.is_set():
            if (all(warm) and now - began >= WARMUP_S) or now - began >= MAX_WAIT_S:
                window[:] = [now, 0.0, cpu_seconds(pid) if pid else 0.0]
                at_open.update({name: used(int(p)) for name, p in watched.items()})
                opened.set()
            return
        enough = len(latencies) + errors >= clients or now - window[0] >= MAX_WAIT_S
        if not closed.is_set() and now - window[0] >= seconds and enough:
            window[1] = now
            window.append(cpu_seconds(pid) if pid else 0.0)
            if others is not None:
                done = max(1, len(latencies))
                others.update({n: (used(int(p)) - at_open[n]) / done for n, p in watched.items()})
            closed.set()

    async def ticker() -> None:
        while not closed.is_set():
            check()
            await asyncio.sleep(0.05)

    async def loop(i: int, conn: Conn) -> None:
        nonlocal errors
        while not closed.is_set():
            t = time.perf_counter()
            try:
                ok = await conn.post()
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
                ok, conn.reader, conn.writer = False, None, None
                FAILURES.append(f"client: {exc!r}")
            warm[i] = True
            if opened.is_set() and not closed.is_set() and t >= window[0]:
                if ok:
                    latencies.append(time.perf_counter() - t)
                else:
                    errors += 1

    await asyncio.gather(ticker(), *(loop(i, c) for i, c in enumerate(conns)))
    for c in conns:
        if c.writer is not None:
            c.writer.close()
    span = window[1] - window[0]
    done = len(latencies)
    cpu = (window[3] - window[2]) / done if pid and done else None
    return done / span, latencies, errors, cpu


Got = tuple[float, list[float], int, float | None]


def row(name: str, got: Got, ideal: float, ceiling: float | None = None) -> str:
    rate, lat, errors, cpu = got
    ordered = sorted(lat) or [0.0]
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    machine = f"  {rate / ceiling:5.2f} of machine" if ceiling else ""
    # what one core could serve at this CPU per request, were the client and the upstream
    # elsewhere: the server's capacity, which the measured rate on shared cores hides
    per = (
        f"  CPU {cpu * 1000:6.2f} ms/req = one core {1 / cpu:6.0f} req/s ({1 / cpu / ideal:4.2f})"
        if cpu
        else ""
    )
    return (
        f"{name:10s} {rate:8.1f} req/s  {rate / ideal:5.2f} of ideal{machine}  p50 "
        f"{statistics.median(ordered) * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms{per}"
        f"  errors {errors}"
    )


def direct_arm(
    base: str, clients: int, seconds: float, tree: Path = TREE, stream: bool = True
) -> Got:
    """The run machinery alone, as the server's ceiling: ``clients`` tasks running
    ``general@lean`` back to back with ``loomc.arun`` (streamed, compiled once, one profiler,
    one provider pool) in a child process of its own; its CPU per run is what a server could
    not go below on one process. (requests/s, latencies, errors, CPU seconds per run)"""
    script = f"""
import json, sys, tempfile, time
from pathlib import Path
import anyio
sys.path.insert(0, {str(Path(__file__).parent)!r})
from serve_kit import ROOT, upstream_policy
import loomc

async def main():
    project = loomc.Project.load(ROOT, upstream_policy({base!r}, Path(tempfile.mkdtemp())))
    pipeline = project.compile("general", "lean")
    profiler = loomc.make_profiler(project.policy.risk)
    lat, state = [], {{"open": False, "closed": False}}
    async with loomc.ProviderPool(project.policy) as pool:
        async def loop():
            while not state["closed"]:
                t = time.perf_counter()
                await loomc.arun("Explain DNS briefly.", project=project, pipeline=pipeline,
                                 providers=pool, profiler=profiler, stream={stream!r})
                if state["open"] and not state["closed"]:
                    lat.append(time.perf_counter() - t)
        async with anyio.create_task_group() as tg:
            for _ in range({clients}):
                tg.start_soon(loop)
            await anyio.sleep(3)
            state["open"], c, t = True, time.process_time(), time.perf_counter()
            await anyio.sleep({seconds})
            state["closed"] = True
            span, cpu = time.perf_counter() - t, time.process_time() - c
    print(json.dumps([len(lat) / span, lat, 0, cpu / max(1, len(lat))]))

anyio.run(main)
"""
    # run from the tree: `python -c` puts the working directory first on sys.path
    out = subprocess.run(
        [sys.executable, "-c", script], env=tree_env(tree), cwd=tree, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    rate, lat, errors, cpu = json.loads(out.stdout.strip().splitlines()[-1])
    return rate, lat, errors, cpu


def main(seconds: float, clients: int, delay_ms: int) -> None:
    ideal = clients / (delay_ms / 1000)
    serve = {"keys": [{"name": "b", "key": "env:LOOMC_BENCH_KEY", "per_day": {"calls": 10**9}}]}
    results: dict[str, list[Got]] = {}
    env = {"LOOMC_BENCH_KEY": KEY}
    with (
        upstream(delay_ms) as up,
        loomc_serve(up, serve, env) as served,
        loomc_serve(up, serve, env, BEFORE) if BEFORE else nullcontext() as before,
        loomc_serve(up, serve, env, extra=("--workers", "2")) if WORKERS else nullcontext() as two,
        litellm_proxy(up) as proxy,
    ):
        arms: list[tuple[str, str, str, str | None]] = [
            ("upstream", up, "worker-small", None),
            ("loomc", served, "general@lean", KEY),
        ]
        if before is not None:
            arms.append(("before", before, "general@lean", KEY))
        if two is not None:
            arms.append(("loomc-2w", two, "general@lean", KEY))
        if proxy is not None:
            arms.append(("litellm", proxy, "general@lean", "sk-bench"))
        arms.append(("direct", up, "", None))
        if BEFORE is not None:
            arms.append(("direct-before", up, "", None))
        rng = random.Random(14)
        passes = []
        for _ in range(2):  # each pass in its own shuffled order, the ceiling first
            rest = arms[1:]
            rng.shuffle(rest)
            passes += [arms[0], *rest]
        for name, base, model, key in passes:
            if name.startswith("direct"):  # loomc.arun alone, no server: the run machinery
                tree = BEFORE if name == "direct-before" and BEFORE else TREE
                results.setdefault(name, []).append(direct_arm(up, clients, seconds, tree))
                continue
            pid = PIDS.get(base)  # the upstream's CPU is not counted (no pid)
            got = asyncio.run(drive(base, model, key, clients, seconds, pid))
            results.setdefault(name, []).append(got)
        batches = httpx.get(served.removesuffix("/v1") + "/metrics").text
    found = dict(re.findall(r'loomc_store_(\w+_total\{kind="\w+"\}) (\d+)', batches))
    print(
        f"{clients} streaming clients, {delay_ms} ms upstream, {seconds:g} s; ideal {ideal:.0f}/s"
    )
    ceiling = max(r[0] for r in results["upstream"])
    for name, runs in results.items():
        best = max(runs, key=lambda r: r[0])
        print(row(name, best, ideal, ceiling))
        for other in runs:
            if other is not best:
                print(row(f"  {name}'", other, ideal, ceiling))
    # reserve / settle: exact reservations, group-committed; lease: leases taken; behind: runs
    # (and leases' settlements) written behind their responses
    for kind in sorted({k for k in re.findall(r'kind="(\w+)"', " ".join(found))}):
        writes = int(found.get(f'writes_total{{kind="{kind}"}}', 0))
        txs = int(found.get(f'transactions_total{{kind="{kind}"}}', 0)) or 1
        print(f"loomc {kind}: {writes} writes in {txs} transactions ({writes / txs:.1f} per)")
    for failure in FAILURES[:3]:
        print(f"a failed request: {failure}")
    if "litellm" not in results:
        print("litellm    (not run: no LiteLLM venv at LOOMC_LITELLM_VENV)")


if __name__ == "__main__":
    main(
        float(sys.argv[1]) if len(sys.argv) > 1 else 15,
        int(sys.argv[2]) if len(sys.argv) > 2 else 128,
        int(sys.argv[3]) if len(sys.argv) > 3 else 50,
    )
