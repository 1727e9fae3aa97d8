"""The lexical floor's own share of a prompt's profile: load time and CPU time per prompt.

    python benchmarks/bench_lexical.py [--rounds 3] [--suites hard-test test ...]

Why apart from ``bench_releases.py``: v25 is v22's profile plus this floor, so the release
benchmark gives the sum; round 39's rule asks for the floor's share measured apart. Load: a
fresh process reads ``data/lexical-v25.npz`` and scores one prompt (median of ``--loads``).
Per prompt: ``LexicalModel.probability`` over every prompt of ``--suites`` (the floor's work
when it does not fire; the reason's words cost as much again, only on the prompts it
escalates), CPU time; each figure min / median / max over ``--rounds`` rounds of the per-round
figure, and the longest prompt's time.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_releases import SUITES  # noqa: E402  (the release benchmark's reference suites)

from loomc.risk.evaluate import load_rows  # noqa: E402
from loomc.risk.lexical import LexicalModel  # noqa: E402

LOAD = (
    "import time; t = time.process_time()\n"
    "from loomc.risk.lexical import shared_model\n"
    "shared_model().probability('How do I rotate the logs on this box?')\n"
    "print(time.process_time() - t)\n"
)


def spread(xs: list[float]) -> str:
    return f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--suites", nargs="+", default=list(SUITES))
    args = ap.parse_args()
    prompts = [
        str(r["prompt"])
        for s in args.suites
        for r in load_rows(ROOT / "evals" / "routing" / f"{s}.jsonl")
    ]
    loads = [
        float(
            subprocess.run(
                [sys.executable, "-c", LOAD], capture_output=True, text=True, check=True, cwd=ROOT
            ).stdout
        )
        for _ in range(args.loads)
    ]
    model = LexicalModel.load()
    means, medians, longest = [], [], []
    for _ in range(args.rounds):
        times = []
        for p in prompts:
            t = time.process_time()
            model.probability(p)
            times.append((time.process_time() - t) * 1000)
        means.append(statistics.fmean(times))
        medians.append(statistics.median(times))
        longest.append(max(times))
    print(
        f"{len(prompts)} prompts ({', '.join(args.suites)}), {args.rounds} rounds; "
        f"longest prompt {max(map(len, prompts)):,} characters"
    )
    print(
        f"load (a fresh process, import + read + one prompt): CPU s, median {statistics.median(loads):.3f}"
    )
    print(
        f"CPU ms per prompt, min / median / max over rounds: mean {spread(means)}, "
        f"median {spread(medians)}, slowest prompt {spread(longest)}"
    )


if __name__ == "__main__":
    main()
