"""CPU of the risk profiler's cold stage in a fresh process, for several checkouts side by side.

    python benchmarks/bench_risk_stage.py [--repeats 9] [--prompt TEXT] TREE [TREE ...]

What a cold ``loomc run`` spends on the policy's profiler once the run path is imported and the
project loaded (``loomc init``'s scaffold, its default ``auto`` profiler; with ``--keywords``
pinned to ``risk.profiler: keywords``): building it, and profiling one prompt. Each repeat runs
every tree once, in a new shuffled order (a machine getting busier moves all alike); CPU medians
(min / max) per tree. The trees are checkouts (``git archive REV | tar -x -C DIR``), each put
first on ``PYTHONPATH``; their bytecode kept in a temporary ``PYTHONPYCACHEPREFIX``, written by
an uncounted first round, as an installed wheel has it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HIGH = (
    "Customers are sometimes charged twice when they double-click Pay. Review the checkout handler."
)

CHILD = """
import json, sys, time
from pathlib import Path
import loomc, loomc.api.running
project = loomc.Project.load(Path(sys.argv[1]), None)
from loomc.api.profiling import policy_profiler
start = time.process_time()
profiler = policy_profiler(project.policy.risk)
built = time.process_time()
profiler.profile(sys.argv[2])
done = time.process_time()
print(json.dumps([(built - start) * 1e3, (done - built) * 1e3]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--prompt", default="Say hello.", help=f"or 'high': {HIGH!r}")
    parser.add_argument("--keywords", action="store_true", help="risk.profiler: keywords")
    args = parser.parse_args()
    prompt = HIGH if args.prompt == "high" else args.prompt
    with tempfile.TemporaryDirectory() as tmp:
        scaffold = Path(tmp) / "starter"
        env = dict(os.environ, PYTHONPYCACHEPREFIX=str(Path(tmp) / "pyc"), NO_COLOR="1")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        first = str(args.trees[0].resolve())
        subprocess.run(
            [sys.executable, "-P", "-m", "loomc", "init", str(scaffold)],
            env=dict(env, PYTHONPATH=first),
            stdout=subprocess.DEVNULL,
            check=True,
        )
        if args.keywords:
            for policy in (scaffold / "policies").glob("*.y*ml"):
                text = policy.read_text(encoding="utf-8")
                policy.write_text(text.replace("profiler: auto", "profiler: keywords"), "utf-8")
        runs: dict[Path, list[list[float]]] = {t: [] for t in args.trees}
        for i in range(args.repeats + 1):  # the first round writes the bytecode
            order = list(args.trees)
            random.shuffle(order)
            for tree in order:
                out = subprocess.run(
                    [sys.executable, "-P", "-c", CHILD, str(scaffold), prompt],
                    env=dict(env, PYTHONPATH=str(tree.resolve())),
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=scaffold,
                )
                if i:
                    runs[tree].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"CPU ms, median (min-max) of {args.repeats}; prompt {prompt!r}")
    print(f"{'tree':40} {'build':>20} {'first profile':>20} {'both':>20}")
    for tree, rs in runs.items():
        cols = [[r[0] for r in rs], [r[1] for r in rs], [r[0] + r[1] for r in rs]]
        cells = [f"{statistics.median(c):6.1f} ({min(c):5.1f}-{max(c):5.1f})" for c in cols]
        print(f"{tree!s:40} {cells[0]:>20} {cells[1]:>20} {cells[2]:>20}")


if __name__ == "__main__":
    main()
