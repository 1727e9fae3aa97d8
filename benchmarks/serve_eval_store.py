"""What recording every eval run in the trace store costs an eval (issue 14).

    python benchmarks/serve_eval_store.py [ROUNDS] [CASES]      # default 7 rounds, 40 cases

One eval (mock policy, strategies ``lean,fixed``, CASES cases: 2 x CASES runs) run again and
again, alternating in a new shuffled order each round between no store and a fresh SQLite
store (runs with their events, written in batches of 64 in one transaction each). Printed:
min / median / max of each arm's wall time and of the per-round ratio store / none (goal: no
measurable slowdown, a ratio within the rounds' noise of 1.00).
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import loomc
from loomc.store import open_store

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT / "evals" / "mixed-routing.jsonl"


def main(rounds: int, cases: int) -> None:
    ev = loomc.prepare_eval(DATASET, "lean,fixed", project=ROOT, limit=cases, concurrency=8)
    folder = Path(tempfile.mkdtemp(prefix="loomc-eval-store-"))
    walls: dict[str, list[float]] = {"none": [], "store": []}
    rng = random.Random(14)
    ev.run()  # warm: imports, compiled pipelines
    for i in range(rounds):
        order = ["none", "store"]
        rng.shuffle(order)
        for arm in order:
            db = folder / f"r{i}.db"
            t = time.perf_counter()
            ev.run(store=db if arm == "store" else None)
            walls[arm].append(time.perf_counter() - t)
            if arm == "store":
                store = open_store(db)
                assert len(store.runs()) == len(ev.jobs)
                store.close()
    ratios = [s / n for s, n in zip(walls["store"], walls["none"], strict=True)]

    def spread(values: list[float], fmt: str) -> str:
        ordered = sorted(values)
        mid = statistics.median(ordered)
        return " / ".join(format(v, fmt) for v in (ordered[0], mid, ordered[-1]))

    print(f"{len(ev.jobs)} runs per eval, {rounds} rounds; min / median / max")
    print(f"no store        {spread(walls['none'], '.3f')} s")
    print(f"trace store     {spread(walls['store'], '.3f')} s")
    print(f"ratio           {spread(ratios, '.3f')}")


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 7,
        int(sys.argv[2]) if len(sys.argv) > 2 else 40,
    )
