"""`loomc serve`'s CPU per request as concurrency grows, and how much of it is the collector.

    python benchmarks/serve_concurrency.py [SECONDS] [LEVELS] [DELAY_MS] [--json]
    # default 5 1,8,32,128 50, streamed

One upstream (``serve_upstream.py``, DELAY_MS before a 12-chunk SSE stream) and one `loomc serve`
(``general@lean``, a keyed daily budget so leases and write-behind are on the path), started
through a launcher that counts CPython's cyclic collections and their CPU time
(``gc.callbacks``, ``time.thread_time``) and reports them on SIGUSR1. For each number of
streaming clients in LEVELS, in turn, on the one server: the server's CPU per request over a
steady window (``serve_throughput.drive``: every thread of its process, the client's and the
upstream's excluded), the share of it spent collecting and the collections per generation, the
objects the collector still walks and those frozen out of it; then ``direct``, the same run with
``loomc.arun`` in a process of its own (no server), so "server - direct" is what serving adds at
that concurrency. ``--json``: JSON requests and replies (the upstream answers JSON too), and a
direct run that does not stream. ``LOOMC_BENCH_TREE`` measures another checkout.
CPU per request holds on a busy machine where rates do not; the rates are printed for scale.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import serve_throughput as st
from serve_kit import (
    PIDS,
    TREE,
    _process,
    cpu_seconds,
    free_port,
    tree_env,
    upstream,
    upstream_policy,
)

# `python -c LAUNCHER serve ...`: loomc's CLI with the collector counted (SIGUSR1: to $GC_DUMP)
LAUNCHER = """
import gc, json, os, signal, sys, time
from loomc.cli.main import main
stats = {"n": [0, 0, 0], "t": [0.0, 0.0, 0.0]}
began = [0.0]
def count(phase, info):
    if phase == "start":
        began[0] = time.thread_time()
    else:
        stats["n"][info["generation"]] += 1
        stats["t"][info["generation"]] += time.thread_time() - began[0]
gc.callbacks.append(count)
def dump(*_):
    with open(os.environ["GC_DUMP"] + ".tmp", "w") as f:
        json.dump({**stats, "walked": len(gc.get_objects()), "frozen": gc.get_freeze_count()}, f)
    os.replace(os.environ["GC_DUMP"] + ".tmp", os.environ["GC_DUMP"])
signal.signal(signal.SIGUSR1, dump)
sys.exit(main(sys.argv[1:]))
"""


@contextmanager
def counted_serve(up: str, dump: Path) -> Iterator[tuple[str, int]]:
    folder = Path(tempfile.mkdtemp(prefix="loomc-bench-"))
    serve = {"keys": [{"name": "b", "key": "env:LOOMC_BENCH_KEY", "per_day": {"calls": 10**9}}]}
    policy = upstream_policy(up, folder, serve)
    port = free_port()
    args = [sys.executable, "-c", LAUNCHER, "serve", str(TREE), "--policy", str(policy)]
    args += ["--port", str(port), "--store", str(folder / "store.db"), "--log-level", "error"]
    env = {**tree_env(TREE), "LOOMC_BENCH_KEY": st.KEY, "GC_DUMP": str(dump)}
    with _process(args, f"http://127.0.0.1:{port}/healthz", env, cwd=TREE) as proc:
        url = f"http://127.0.0.1:{port}/v1"
        PIDS[url] = proc.pid
        yield url, proc.pid


def collector(pid: int, dump: Path) -> dict[str, list[float]]:
    dump.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not dump.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the server did not report its collector")
        time.sleep(0.01)
    found: dict[str, list[float]] = json.loads(dump.read_text())
    return found


def main(seconds: float, levels: list[int], delay_ms: int, stream: bool = True) -> None:
    dump = Path(tempfile.mkdtemp(prefix="loomc-bench-")) / "gc.json"
    what = "streamed" if stream else "JSON"
    print(f"tree {TREE}; {what} requests, {delay_ms} ms upstream, {seconds:g} s a level")
    print(
        "clients   req/s  server CPU ms/req  of which GC  collections/1000 req (gen 0/1/2)"
        "  walked  frozen  |  direct CPU ms/run  server - direct"
    )
    with upstream(delay_ms) as up, counted_serve(up, dump) as (url, pid):
        for clients in levels:
            before, cpu_before = collector(pid, dump), cpu_seconds(pid)
            rate, _, errors, cpu = asyncio.run(
                st.drive(url, "general@lean", st.KEY, clients, seconds, pid, stream)
            )
            after, cpu_after = collector(pid, dump), cpu_seconds(pid)
            # the collector's share of the server's CPU over the whole drive (warm-up included)
            share = (sum(after["t"]) - sum(before["t"])) / (cpu_after - cpu_before)
            served = (cpu_after - cpu_before) / cpu if cpu else 0  # requests, estimated
            per = [
                1000 * (a - b) / max(1, served)
                for a, b in zip(after["n"], before["n"], strict=True)
            ]
            direct = st.direct_arm(up, clients, seconds, TREE, stream)[3]
            assert cpu is not None
            print(
                f"{clients:7d} {rate:7.1f} {cpu * 1000:18.3f} {share * cpu * 1000:8.3f} ms"
                f" ({share:4.0%}) {per[0]:8.1f} / {per[1]:5.1f} / {per[2]:4.1f}"
                f" {int(after['walked']):9d} {int(after['frozen']):7d}  | {direct * 1000:17.3f}"
                f" {(cpu - direct) * 1000:15.3f}" + (f"  errors {errors}" if errors else ""),
                flush=True,
            )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    main(
        float(args[0]) if args else 5,
        [int(n) for n in (args[1] if len(args) > 1 else "1,8,32,128").split(",")],
        int(args[2]) if len(args) > 2 else 50,
        stream="--json" not in sys.argv,
    )
