"""The ceiling of one uvicorn + httpx process at 128 streaming clients (issue 14).

    python benchmarks/serve_ceiling.py [SECONDS] [CLIENTS] [DELAY_MS]   # default 8 128 50
    LOOMC_BENCH_LOADGEN=python|wrk|both   # default: both when `wrk` is on PATH, else python

Is 0.9 of ideal (CLIENTS / delay: 2,560 req/s at 128 and 50 ms) reachable by *any* server on
the stack ``loomc serve`` is built on, on this machine? Arms, each server in its own process,
all against the one upstream (``serve_upstream.py``: 50 ms, then a 12-chunk SSE stream):

- ``upstream``: the load generator straight to the upstream, no server (the machine's ceiling);
- ``bare-raw`` / ``bare-starlette``: ``serve_bare.py``, uvicorn + an ASGI app that forwards
  each request with httpx (streamed) and relays the SSE bytes, nothing else; a raw ASGI
  callable and a Starlette ``StreamingResponse``, on httpx's own transport (httpcore);
- ``bare-raw-lt`` / ``bare-starl-lt``: the same two on loomc's lean transport (``--transport
  loomc``: the one ``loomc serve``'s providers use for ``http://``);
- ``loomc``: ``loomc serve`` on ``general@lean`` (one upstream call, a keyed daily budget);
  ``before`` too with ``LOOMC_BENCH_BEFORE=TREE``;
- ``litellm``: LiteLLM's proxy on the same upstream (when its venv is there, see ``serve_kit``);
- ``direct``: no server, CLIENTS tasks of ``loomc.arun`` in a process of their own (the run
  machinery's CPU per run, in the ``server`` column; upstream and client not metered);
  ``direct-before`` the same from the ``LOOMC_BENCH_BEFORE`` tree, when set.

``LOOMC_BENCH_ARMS=loomc,before`` runs those arms only (and the upstream);
``LOOMC_BENCH_PASSES=N`` (default 2) the passes.

Load generators: ``wrk`` (C, one thread, a Lua script posting the streamed request; it counts
responses and does not check their bodies) when it is on PATH, and this repository's asyncio
client (``serve_throughput.Conn``: checks every stream ends with ``[DONE]``). Per arm: req/s,
fraction of ideal, p50 latency, and CPU per request of the server, the upstream and the load
generator (the server's and the upstream's from /proc of their pids; wrk's from its rusage,
the asyncio client's from this process), over the measured window only. ``sum`` is the three
together: on a machine of N cores, N / sum is the most requests a second the whole setup could
complete; ``one core`` is 1 / the server's CPU, the server's capacity on a core of its own.
Two passes, each the upstream first then the others shuffled; each arm's better pass printed
first.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

import httpx
from serve_kit import (
    BEFORE,
    BODY,
    PIDS,
    ROOT,
    TREE,
    _process,
    cpu_seconds,
    free_port,
    litellm_proxy,
    loomc_serve,
    upstream,
)
from serve_throughput import FAILURES, KEY, direct_arm, drive

WRK = shutil.which("wrk")
LOADGEN = os.environ.get("LOOMC_BENCH_LOADGEN", "both" if WRK else "python")
# a subset of the arms (comma-separated names; the upstream always runs), and the passes
ARMS = set(filter(None, os.environ.get("LOOMC_BENCH_ARMS", "").split(",")))
PASSES = int(os.environ.get("LOOMC_BENCH_PASSES", "2"))
UPSTREAM_PIDS: dict[str, int] = {}


@contextmanager
def bare(up: str, mode: str, transport: str) -> Iterator[str]:
    port = free_port()
    script = str(ROOT / "benchmarks" / "serve_bare.py")
    args = [sys.executable, script, "--port", str(port), "--upstream", up, "--mode", mode]
    args += ["--transport", transport]
    with _process(args, f"http://127.0.0.1:{port}/healthz") as proc:
        url = f"http://127.0.0.1:{port}/v1"
        PIDS[url] = proc.pid
        yield url


def upstream_pid(up: str) -> int:
    """The upstream's process id, found by its listening port (``serve_kit`` keeps no pid)."""
    port = httpx.URL(up).port
    out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True)
    found = re.search(r"pid=(\d+)", out.stdout)
    return int(found.group(1)) if found else 0


Row = dict[str, float]


def wrk_arm(base: str, model: str, key: str | None, clients: int, seconds: float, up: int) -> Row:
    body = json.dumps(
        {**BODY, "model": model, "stream": True, "stream_options": {"include_usage": True}}
    )
    lua = f"wrk.method = 'POST'\nwrk.body = {json.dumps(body)}\n"
    lua += "wrk.headers['Content-Type'] = 'application/json'\n"
    if key:
        lua += f"wrk.headers['Authorization'] = 'Bearer {key}'\n"
    fd, script = tempfile.mkstemp(suffix=".lua")
    os.write(fd, lua.encode())
    os.close(fd)
    url = base.rstrip("/") + "/chat/completions"
    common = [WRK or "wrk", "-t1", f"-c{clients}", "-s", script, "--latency", "--timeout", "10s"]
    subprocess.run([*common, "-d3s", url], capture_output=True, check=True)  # warm-up
    pid = PIDS.get(base)
    server0, up0 = cpu_seconds(pid) if pid else 0.0, cpu_seconds(up) if up else 0.0
    proc = subprocess.Popen([*common, f"-d{seconds:g}s", url], stdout=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read() if proc.stdout else ""
    server1, up1 = cpu_seconds(pid) if pid else 0.0, cpu_seconds(up) if up else 0.0
    os.unlink(script)
    if status != 0:
        raise RuntimeError(out)
    count = float(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)\b", out)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    return {
        "rate": rate,
        "p50": float(p50.group(1)) * scale[p50.group(2)] if p50 else 0.0,
        "errors": (int(bad.group(1)) if bad else 0)
        + (sum(int(g) for g in sock.groups()) if sock else 0),
        "server": (server1 - server0) / count if pid else 0.0,
        "upstream": (up1 - up0) / count,
        "loadgen": (usage.ru_utime + usage.ru_stime) / count,
    }


def python_arm(
    base: str, model: str, key: str | None, clients: int, seconds: float, up: int
) -> Row:
    pid = PIDS.get(base)
    others: dict[str, float] = {"upstream": up, "loadgen": 0}
    rate, lat, errors, cpu = asyncio.run(
        drive(base, model, key, clients, seconds, pid, True, others)
    )
    lat.sort()
    return {
        "rate": rate,
        "p50": lat[len(lat) // 2] * 1000 if lat else 0.0,
        "errors": errors,
        "server": cpu or 0.0,
        "upstream": others["upstream"],
        "loadgen": others["loadgen"],
    }


def show(name: str, gen: str, row: Row, ideal: float, cores: int) -> str:
    total = row["server"] + row["upstream"] + row["loadgen"]
    server = row["server"] * 1000
    core = f"{1 / row['server']:6.0f} ({1 / row['server'] / ideal:4.2f})" if server else "     -"
    return (
        f"{name:15s} {gen:6s} {row['rate']:7.0f} {row['rate'] / ideal:5.2f} {row['p50']:7.1f}"
        f" {server:6.3f} {row['upstream'] * 1000:6.3f} {row['loadgen'] * 1000:6.3f}"
        f" {total * 1000:6.3f} {cores / total if total else 0:6.0f}  {core}"
        f" {int(row['errors']):5d}"
    )


def main(seconds: float, clients: int, delay_ms: int) -> None:
    ideal = clients / (delay_ms / 1000)
    gens = ["wrk", "python"] if LOADGEN == "both" else [LOADGEN]
    if "wrk" in gens and not WRK:
        print("wrk is not on PATH: the asyncio client only")
        gens = ["python"]
    serve = {"keys": [{"name": "b", "key": "env:LOOMC_BENCH_KEY", "per_day": {"calls": 10**9}}]}
    env = {"LOOMC_BENCH_KEY": KEY}
    cores = os.cpu_count() or 1
    results: dict[tuple[str, str], list[Row]] = {}
    with (
        upstream(delay_ms) as up,
        bare(up, "raw", "httpx") as raw,
        bare(up, "starlette", "httpx") as star,
        bare(up, "raw", "loomc") as raw_lt,
        bare(up, "starlette", "loomc") as star_lt,
        loomc_serve(up, serve, env) as served,
        loomc_serve(up, serve, env, BEFORE) if BEFORE else nullcontext() as before,
        litellm_proxy(up) if not ARMS or "litellm" in ARMS else nullcontext() as proxy,
    ):
        up_pid = upstream_pid(up)
        arms = [
            ("upstream", up, "worker-small", None),
            ("bare-raw", raw, "general@lean", None),
            ("bare-starlette", star, "general@lean", None),
            ("bare-raw-lt", raw_lt, "general@lean", None),
            ("bare-starl-lt", star_lt, "general@lean", None),
            ("loomc", served, "general@lean", KEY),
        ]
        if before is not None:
            arms.append(("before", before, "general@lean", KEY))
        if proxy is not None:
            arms.append(("litellm", proxy, "general@lean", "sk-bench"))
        arms.append(("direct", up, "", None))
        if BEFORE is not None:
            arms.append(("direct-before", up, "", None))
        arms = [a for a in arms if not ARMS or a[0] in ARMS or a[0] == "upstream"]
        rng = random.Random(9)
        load0 = os.getloadavg()[0]
        for _ in range(PASSES):
            rest = arms[1:]
            rng.shuffle(rest)
            for name, base, model, key in [arms[0], *rest]:
                if name.startswith("direct"):  # no server: loomc.arun x CLIENTS, a process
                    tree = BEFORE if name == "direct-before" and BEFORE else TREE
                    rate, lat, _, cpu = direct_arm(up, clients, seconds, tree)
                    lat.sort()
                    got = {"rate": rate, "p50": lat[len(lat) // 2] * 1000 if lat else 0.0}
                    got |= {"errors": 0, "server": cpu or 0.0, "upstream": 0.0, "loadgen": 0.0}
                    results.setdefault((name, "-"), []).append(got)
                    continue
                for gen in gens:
                    arm = wrk_arm if gen == "wrk" else python_arm
                    got = arm(base, model, key, clients, seconds, up_pid)
                    results.setdefault((name, gen), []).append(got)
                    time.sleep(0.5)
        load1 = os.getloadavg()[0]
    print(
        f"{clients} streaming clients, {delay_ms} ms upstream, {seconds:g} s a window; ideal "
        f"{ideal:.0f} req/s; {cores} cores; load average {load0:.1f} -> {load1:.1f}"
    )
    print(
        f"{'arm':15s} {'loadgen':6s} {'req/s':>7s} {'ideal':>5s} {'p50 ms':>7s}"
        f" {'CPU ms/req: server':>6s} {'upstr':>6s} {'loadgen':>6s} {'sum':>6s}"
        f" {'cores/sum':>6s}  {'one core (ideal)':>13s} {'errors':>5s}"
    )
    for (name, gen), runs in results.items():
        ordered = sorted(runs, key=lambda r: -r["rate"])
        print(show(name, gen, ordered[0], ideal, cores))
        for other in ordered[1:]:
            print(show(f"  {name}'", gen, other, ideal, cores))
    for failure in FAILURES[:3]:
        print(f"a failed request: {failure}")


if __name__ == "__main__":
    main(
        float(sys.argv[1]) if len(sys.argv) > 1 else 8,
        int(sys.argv[2]) if len(sys.argv) > 2 else 128,
        int(sys.argv[3]) if len(sys.argv) > 3 else 50,
    )
