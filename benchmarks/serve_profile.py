"""Where ``loomc serve``'s CPU goes per streamed request at the ceiling load (issue 14).

    python benchmarks/serve_profile.py [SECONDS] [CLIENTS] [DELAY_MS]   # default 8 128 50

One upstream (``serve_upstream.py``), one ``loomc serve`` (``LOOMC_BENCH_TREE`` or this
checkout) started through ``serve_profiled.py``, and ``wrk`` posting streamed requests
(``stream_options.include_usage``, a keyed daily budget, as ``serve_ceiling.py``'s ``loomc``
arm). First a window without the profiler: the server's CPU per request. Then the same load
with cProfile on (CPU clock) over a second window: each phase's share of the profiled CPU,
and that share of the unprofiled CPU per request in µs. cProfile slows small Python functions
more than C, so read the shares as an attribution, not as exact costs. The raw profile is
kept for ``python -m pstats``.

``LOOMC_BENCH_PYSPY=/path/to/py-spy``: sample the second window with py-spy instead (100 Hz,
CPU samples only, no slowdown of small functions; py-spy is not in the project's venv: install
it in a venv of its own), the same phases counted over the samples' stacks.
"""

from __future__ import annotations

import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter

PYSPY = os.environ.get("LOOMC_BENCH_PYSPY")
OUT = tempfile.mktemp(suffix=".txt" if PYSPY else ".prof")
if not PYSPY:
    os.environ["LOOMC_BENCH_PROFILE"] = OUT

from serve_ceiling import upstream_pid, wrk_arm  # noqa: E402
from serve_kit import PIDS, loomc_serve, upstream  # noqa: E402
from serve_throughput import KEY  # noqa: E402

# (label, file ending, function): cumulative CPU of each, in the profiled window
PHASES = [
    ("uvicorn's protocol + the loop, outside the app", "", ""),
    ("the app (ServeApp.__call__)", "serve/app.py", "__call__"),
    ("  auth (Keys.authenticate)", "serve/auth.py", "authenticate"),
    ("  read the body", "serve/chat.py", "read_body"),
    ("  json.loads of the body", "serve/chat.py", "loads"),
    ("  parse_request (pydantic)", "serve/wire.py", "parse_request"),
    ("  admission (Service.admit)", "serve/service.py", "admit"),
    ("    of which the budget (Budgets.reserve)", "serve/leases.py", "reserve"),
    ("  the stream (chat.stream)", "serve/chat.py", "stream"),
    ("    the run and its stored run (Service.execute)", "serve/service.py", "execute"),
    ("      loomc.arun (the run machinery + sinks)", "api/running.py", "arun"),
    ("        the trace sink (TraceRecorder.emit)", "api/tracing.py", "emit"),
    ("        the answer sink (AnswerStream.emit)", "serve/answer.py", "emit"),
    ("          the delta encoder (chat.delta)", "serve/chat.py", "delta"),
    ("      stored_run (the row)", "api/tracing.py", "stored_run"),
    ("      Budgets.finish (lease book, queue)", "serve/leases.py", "finish"),
    ("      Metrics.run", "serve/metrics.py", "run"),
    ("the stream's writer task (chat.writer)", "serve/chat.py", "writer"),
    ("the stream's mid-run writes (chat.write, since serve13)", "serve/chat.py", "write"),
    ("the stream's watch task (chat.watch)", "serve/chat.py", "watch"),
    ("    the stream's task group (before serve11)", "anyio/_backends/_asyncio.py", "__aexit__"),
    ("    frames (chunk, sse, frame)", "serve/wire.py", "chunk"),
    ("    extension()", "serve/wire.py", "extension"),
    ("    usage()", "serve/wire.py", "usage"),
    ("    completion_id()", "serve/wire.py", "completion_id"),
    ("    SSE frame() (json.dumps)", "studio/sse.py", "frame"),
    ("    svc.release", "serve/service.py", "release"),
    ("  uvicorn send (all writes)", "uvicorn/protocols/http/httptools_impl.py", "send"),
    ("write-behind (WriteBehind.run)", "serve/behind.py", "run"),
    ("  the store's batch (settle_and_save_many)", "store/sqlite.py", "settle_and_save_many"),
    ("idle leases (Budgets.keep)", "serve/leases.py", "keep"),
]


def cumulative(stats: pstats.Stats, ending: str, name: str) -> float:
    """The cumulative time of every function matching, without double counting recursion
    (pstats' own cumulative already excludes recursive re-entries)."""
    total = 0.0
    for (file, _, func), (_, _, _, ct, _) in stats.stats.items():  # type: ignore[attr-defined]
        if func == name and file.endswith(ending):
            total += ct
    return total


def sampled(path: str) -> tuple[Counter[str], float]:
    """py-spy's collapsed stacks: each phase's samples (a stack counts once per phase it is
    in) and the total."""
    found: Counter[str] = Counter()
    total = 0.0
    with open(path) as f:
        lines = f.readlines()
    for line in lines:
        stack, _, count = line.rstrip().rpartition(" ")
        if stack.rpartition(";")[2].startswith("Condition.wait"):
            continue  # an idle worker thread that py-spy counts as active
        n = float(count)
        total += n
        frames = [(f.partition(" (")[0], f.partition(" (")[2]) for f in stack.split(";")]
        for label, ending, name in PHASES[1:]:
            if any(func.rpartition(".")[2] == name and ending in file for func, file in frames):
                found[label] += n
    return found, total


def behind_batches(url: str) -> tuple[float, float] | None:
    """The write-behind's transactions and the writes they carried so far (``/metrics``):
    how many runs one transaction stores at this load."""
    try:
        with urllib.request.urlopen(url.removesuffix("/v1") + "/metrics", timeout=10) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    got = {}
    for line in text.splitlines():
        for name in ("transactions", "writes"):
            if line.startswith(f'loomc_store_{name}_total{{kind="behind"}}'):
                got[name] = float(line.rpartition(" ")[2])
    return (got["transactions"], got["writes"]) if len(got) == 2 else None


def main(seconds: float, clients: int, delay_ms: int) -> None:
    serve = {"keys": [{"name": "b", "key": "env:LOOMC_BENCH_KEY", "per_day": {"calls": 10**9}}]}
    with upstream(delay_ms) as up, loomc_serve(up, serve, {"LOOMC_BENCH_KEY": KEY}) as url:
        pid, up_pid = PIDS[url], upstream_pid(up)
        load0 = os.getloadavg()[0]
        plain = wrk_arm(url, "general@lean", KEY, clients, seconds, up_pid)
        if PYSPY:
            spy = subprocess.Popen(
                [
                    PYSPY,
                    "record",
                    "-r",
                    "100",
                    "-d",
                    f"{seconds + 3:g}",
                    "-f",
                    "raw",
                    "-o",
                    OUT,
                    "--pid",
                    str(pid),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        else:
            os.kill(pid, signal.SIGUSR1)
            time.sleep(0.2)
        profiled = wrk_arm(url, "general@lean", KEY, clients, seconds, up_pid)
        if PYSPY:
            spy.wait()
        else:
            os.kill(pid, signal.SIGUSR2)
            for _ in range(100):
                time.sleep(0.1)
                if os.path.exists(OUT) and os.path.getsize(OUT) > 0:
                    break
            time.sleep(0.5)
        load1 = os.getloadavg()[0]
        batches = behind_batches(url)
    if PYSPY:
        found, total = sampled(OUT)
        stats = None
    else:
        stats = pstats.Stats(OUT)
        total = stats.total_tt  # type: ignore[attr-defined]
        found = Counter(
            {label: cumulative(stats, ending, name) for label, ending, name in PHASES[1:]}
        )
    per = plain["server"] * 1e6
    print(
        f"{clients} streaming clients, {delay_ms} ms upstream; load {load0:.1f} -> {load1:.1f}\n"
        f"unprofiled: {plain['rate']:.0f} req/s, server CPU {per:.0f} µs/request; profiled: "
        f"{profiled['rate']:.0f} req/s, {profiled['server'] * 1e6:.0f} µs/request; profile {OUT}"
    )
    if batches is not None:
        print(
            f"write-behind: {batches[1]:.0f} runs in {batches[0]:.0f} transactions "
            f"({batches[1] / max(batches[0], 1):.1f} a transaction)"
        )
    print(f"{'phase':55s} {'share':>6s} {'µs/req':>7s}")
    outside = total - sum(v for label, v in found.items() if not label.startswith(" "))
    for label, _, name in PHASES:
        value = outside if not name else found[label]
        print(f"{label:55s} {value / total:6.1%} {value / total * per:7.0f}")
    if stats is not None:
        print("\ntop functions by own time:")
        stats.sort_stats("tottime").print_stats(35)


if __name__ == "__main__":
    main(
        float(sys.argv[1]) if len(sys.argv) > 1 else 8,
        int(sys.argv[2]) if len(sys.argv) > 2 else 128,
        int(sys.argv[3]) if len(sys.argv) > 3 else 50,
    )
