"""``loomc serve`` under cProfile over a window the caller chooses (benchmark-only launcher).

    LOOMC_BENCH_PROFILE=OUT.prof python benchmarks/serve_profiled.py serve PROJECT [options]

The arguments are ``loomc``'s. SIGUSR1 starts the profiler, SIGUSR2 stops it and writes
``OUT.prof`` (pstats), so the profile covers a measured window under load and not start-up or
warm-up (``serve_profile.py`` drives it). The clock is the process's CPU time, not wall time:
on a shared machine a wall clock would count the time the server waited for a core.
"""

from __future__ import annotations

import cProfile
import os
import signal
import sys
import time
from types import FrameType

PROFILE = cProfile.Profile(time.process_time)


def _start(signum: int, frame: FrameType | None) -> None:
    PROFILE.enable()


def _stop(signum: int, frame: FrameType | None) -> None:
    PROFILE.disable()
    PROFILE.dump_stats(os.environ["LOOMC_BENCH_PROFILE"])


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
    from loomc.cli.main import main

    sys.argv = ["loomc", *sys.argv[1:]]
    raise SystemExit(main())
