"""`loomc serve`'s overhead per request over a direct run against the same upstream (issue 14).

    python benchmarks/serve_overhead.py [ROUNDS] [PER_ROUND]    # default 15 x 40

Three processes: a zero-latency OpenAI-compatible upstream, `loomc serve` on a policy whose
workers are that upstream (``general@lean``: one upstream call per request; a bearer key with a
daily budget, so auth, the ledger's reservation and settlement and the stored run are all on
the path), and this client. Arms, alternated in a new shuffled order every round: ``upstream``
posts the chat request to the upstream itself (for scale), ``direct`` runs the same
``general@lean`` with ``loomc.arun`` in this process against the same upstream (the direct
call; compiled once and with one profiler, as the server does), ``serve`` posts the request
to loomc serve on a keep-alive connection. Printed: min / median / max over rounds of each
arm's per-round median, and of the per-round difference
serve - direct (the server's overhead; goal <= 1 ms at the median). Set LOOMC_BENCH_BEFORE to
another checkout to add its server as a ``before`` arm, interleaved with the others in the same
rounds (LOOMC_BENCH_TREE measures another checkout's server in place of this one's).

CPU per request, which holds on a busy machine where wall times do not: ``direct`` is this
process's CPU time around the call (the run machinery and its httpx call to the upstream);
``serve`` is the server process's CPU time (every thread) plus this process's around the call
(the client's httpx request to the server). The upstream's CPU is in neither. The CPU overhead
is their difference, the same subtraction as the wall one; "server side" leaves out the
client's own request (the server process's CPU minus the direct run's).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
from anyio.from_thread import start_blocking_portal
from serve_kit import (
    BEFORE,
    BODY,
    PIDS,
    ROOT,
    cpu_seconds,
    interleaved,
    loomc_serve,
    spread,
    upstream,
    upstream_policy,
)

import loomc

KEY = "bench-key-0123456789"
TMP = Path(tempfile.mkdtemp(prefix="loomc-overhead-"))


def main(rounds: int, per_round: int) -> None:
    serve_settings = {
        "keys": [{"name": "bench", "key": "env:LOOMC_BENCH_KEY", "per_day": {"calls": 10**9}}]
    }
    with (
        upstream() as up,
        loomc_serve(up, serve_settings, {"LOOMC_BENCH_KEY": KEY}) as served,
        httpx.Client(base_url=up) as direct_client,
        httpx.Client(base_url=served, headers={"authorization": f"Bearer {KEY}"}) as serve_client,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(
            loomc.ProviderPool(loomc.Project.load(ROOT, upstream_policy(up, TMP)).policy)
        ) as pool,
        ExitStack() as more,
    ):
        upstream_body = {**BODY, "model": "worker-small"}
        project = loomc.Project.load(ROOT, TMP / "policy.yaml")
        prompt = BODY["messages"][0]["content"]  # type: ignore[index]

        def raw() -> float:
            t = time.perf_counter()
            direct_client.post("/chat/completions", json=upstream_body).raise_for_status()
            return time.perf_counter() - t

        # as the server runs it, and as a careful direct caller would: compiled and checked
        # once, one profiler (per call, these cost ~2 ms and flattered the server before)
        pipeline = project.compile("general", "lean")
        profiler = loomc.make_profiler(project.policy.risk)

        async def run_once() -> None:
            await loomc.arun(
                prompt,
                project=project,
                pipeline=pipeline,
                profiler=profiler,
                providers=pool,
                stream=False,
            )

        server = PIDS[served]
        cpu: dict[str, list[float]] = {"direct": [], "serve": [], "server": []}

        def direct() -> float:
            c = time.process_time()
            t = time.perf_counter()
            portal.call(run_once)
            wall = time.perf_counter() - t
            cpu["direct"].append(time.process_time() - c)
            return wall

        def serve() -> float:
            s, c = cpu_seconds(server), time.process_time()
            t = time.perf_counter()
            got = serve_client.post("/chat/completions", json=BODY)
            wall = time.perf_counter() - t
            on_server = cpu_seconds(server) - s
            cpu["serve"].append(time.process_time() - c + on_server)
            cpu["server"].append(on_server)
            got.raise_for_status()
            return wall

        arms = {"upstream": raw, "direct": direct, "serve": serve}
        if BEFORE is not None:  # the other checkout's server, same harness, same rounds
            old = more.enter_context(
                loomc_serve(up, serve_settings, {"LOOMC_BENCH_KEY": KEY}, BEFORE)
            )
            old_client = more.enter_context(
                httpx.Client(base_url=old, headers={"authorization": f"Bearer {KEY}"})
            )
            cpu["before"] = []

            def before() -> float:
                s = cpu_seconds(PIDS[old])
                t = time.perf_counter()
                got = old_client.post("/chat/completions", json=BODY)
                wall = time.perf_counter() - t
                cpu["before"].append(cpu_seconds(PIDS[old]) - s)
                got.raise_for_status()
                return wall

            arms["before"] = before
        medians = interleaved(arms, rounds, per_round)
    overhead = [s - d for s, d in zip(medians["serve"], medians["direct"], strict=True)]
    # per round: the median CPU of the round's calls (warm-up calls dropped)
    warm = len(cpu["direct"]) - rounds * per_round
    cpu_rounds = {
        arm: [
            statistics.median(values[warm + i * per_round : warm + (i + 1) * per_round])
            for i in range(rounds)
        ]
        for arm, values in cpu.items()
    }
    cpu_overhead = [s - d for s, d in zip(cpu_rounds["serve"], cpu_rounds["direct"], strict=True)]
    server_side = [s - d for s, d in zip(cpu_rounds["server"], cpu_rounds["direct"], strict=True)]
    print(f"{rounds} rounds x {per_round} requests per arm; min / median / max of round medians")
    print(f"upstream alone (httpx)   {spread(medians['upstream'])} ms")
    print(f"direct loomc.arun        {spread(medians['direct'])} ms")
    print(f"through loomc serve      {spread(medians['serve'])} ms")
    print(f"serve overhead           {spread(overhead)} ms   (goal <= 1 ms at the median)")
    print(f"CPU, direct              {spread(cpu_rounds['direct'])} ms per request")
    print(f"CPU, serve (both sides)  {spread(cpu_rounds['serve'])} ms per request")
    print(f"CPU overhead             {spread(cpu_overhead)} ms per request")
    print(f"  of which server side   {spread(server_side)} ms per request (the rest: the client)")
    if "before" in medians:
        old_overhead = [b - d for b, d in zip(medians["before"], medians["direct"], strict=True)]
        old_side = [b - d for b, d in zip(cpu_rounds["before"], cpu_rounds["direct"], strict=True)]
        print(f"before: through serve    {spread(medians['before'])} ms  ({BEFORE})")
        print(f"before: serve overhead   {spread(old_overhead)} ms")
        print(f"before: server side CPU  {spread(old_side)} ms per request")


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 15,
        int(sys.argv[2]) if len(sys.argv) > 2 else 40,
    )
