"""Where a streamed ``loomc.arun`` spends its CPU: the ``direct`` arm of ``serve_ceiling.py``
(CLIENTS tasks of ``arun`` on ``general@lean`` against the 50 ms, 16-frame upstream), in this
process, under cProfile for a window.

    python benchmarks/profile_arun.py [SECONDS] [CLIENTS] [DELAY_MS] [TOP]   # 6 128 50 40

Prints the CPU per run (without the profiler: a first window; then the profiled one) and the
TOP functions by their own time and by cumulative time. Why a script and not the benchmark: the
benchmark runs ``arun`` in a child process (its tree on the path); a profile needs the loop in
this one. Run it from the tree to profile (``PYTHONPATH=$PWD:$PWD/research``).
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

import anyio
from serve_kit import ROOT, upstream, upstream_policy

import loomc


async def window(project: loomc.Project, seconds: float, clients: int, profile: bool) -> None:
    pipeline = project.compile("general", "lean")
    profiler = loomc.make_profiler(project.policy.risk)
    state = {"open": False, "closed": False}
    done = [0]
    async with loomc.ProviderPool(project.policy) as pool:

        async def loop_once() -> None:
            await loomc.arun(
                "Explain DNS briefly.",
                project=project,
                pipeline=pipeline,
                providers=pool,
                profiler=profiler,
                stream=True,
            )

        async def loop() -> None:
            while not state["closed"]:
                await loop_once()
                if state["open"] and not state["closed"]:
                    done[0] += 1

        for _ in range(2):  # the router's first two prompts change its table (loomc.risk.pure):
            await loop_once()  # not from 128 threads at once
        prof = cProfile.Profile()
        async with anyio.create_task_group() as tg:
            for _ in range(clients):
                tg.start_soon(loop)
            await anyio.sleep(2)
            state["open"] = True
            cpu = time.process_time()
            if profile:
                prof.enable()
            await anyio.sleep(seconds)
            if profile:
                prof.disable()
            state["closed"] = True
            cpu = time.process_time() - cpu
    label = "profiled" if profile else "plain"
    print(f"{label}: {done[0]} runs, {cpu / max(1, done[0]) * 1000:.3f} ms CPU a run")
    if profile:
        top = int(sys.argv[4]) if len(sys.argv) > 4 else 40
        stats = pstats.Stats(prof)
        stats.sort_stats("tottime").print_stats(top)
        stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 6
    clients = int(sys.argv[2]) if len(sys.argv) > 2 else 128
    delay = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    with upstream(delay) as up:
        project = loomc.Project.load(ROOT, upstream_policy(up, Path(tempfile.mkdtemp())))
        anyio.run(window, project, seconds, clients, False)
        anyio.run(window, project, seconds, clients, True)


if __name__ == "__main__":
    main()
