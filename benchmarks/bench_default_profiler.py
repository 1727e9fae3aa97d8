"""What the packaged default ``risk.profiler: auto`` costs a cold ``loomc run`` (a new process,
the mock provider), against the same command on a tree whose policy pins ``keywords``.

    python benchmarks/bench_default_profiler.py [--before DIR] [--repeats 7] [--json FILE]

Arms, each a fresh process in a project made by ``loomc init`` (so the scaffolded policy is
what is measured), alternated in a new shuffled order on every repeat so that a machine getting
busier or quieter moves every arm alike; figures are medians, of wall time and of the process's
CPU time (user + system, steadier on a shared machine):

- ``python -c pass``: the interpreter alone;
- ``before`` (``--before DIR``, a checkout whose ``policies/default.yaml`` pins ``keywords``;
  default: this tree with the scaffold's policy rewritten to ``keywords``): ``loomc run``;
- ``auto, balanced``: the default tier, whose ``verify`` guard reads the risk, so the semantic
  weights are read and one forward pass runs;
- ``auto, strict``: a tier no guard of which reads the risk: the weights are not loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Delete all user rows in prod"


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(tree / "research")])
    env["NO_COLOR"] = "1"
    return env


def _time(cmd: list[str], cwd: Path, tree: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child: user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        cmd, cwd=cwd, env=_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.decode()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def _scaffold(tree: Path, folder: Path, pin_keywords: bool) -> Path:
    subprocess.run(
        [sys.executable, "-m", "loomc", "init", str(folder)],
        env=_env(tree),
        check=True,
        capture_output=True,
    )
    policy = folder / "policies" / "default.yaml"
    if pin_keywords:
        text = policy.read_text(encoding="utf-8")
        policy.write_text(text.replace("profiler: auto", "profiler: keywords"), encoding="utf-8")
    return folder


def measure(before: Path | None, repeats: int) -> dict[str, list[tuple[float, float]]]:
    py = sys.executable
    run = [py, "-m", "loomc", "run", "--no-stream", PROMPT]
    with tempfile.TemporaryDirectory() as tmp:
        old_tree = before or ROOT
        old = _scaffold(old_tree, Path(tmp) / "before", pin_keywords=before is None)
        new = _scaffold(ROOT, Path(tmp) / "after", pin_keywords=False)
        arms: dict[str, tuple[list[str], Path, Path]] = {
            "python -c pass": ([py, "-c", "pass"], new, ROOT),
            "before (keywords)": (run, old, old_tree),
            "auto, balanced": (run, new, ROOT),
            "auto, strict": ([*run, "--tier", "strict"], new, ROOT),
        }
        for cmd, cwd, tree in arms.values():  # warm the OS cache and the parser tables once
            _time(cmd, cwd, tree)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in arms}
        for _ in range(repeats):
            order = list(arms)
            random.shuffle(order)
            for name in order:
                times[name].append(_time(*arms[name]))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a checkout whose default pins keywords")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()
    times = measure(args.before, args.repeats)
    wall = {name: statistics.median(w for w, _ in v) for name, v in times.items()}
    cpu = {name: statistics.median(c for _, c in v) for name, v in times.items()}
    print(f"{'arm':22} {'min ms':>9} {'median ms':>10} {'max ms':>9} {'CPU ms':>9}", end="")
    print(f"   ({args.repeats} repeats; CPU: median user+system of the process)")
    for name, values in times.items():
        w = [x for x, _ in values]
        print(
            f"{name:22} {min(w) * 1e3:9.1f} {wall[name] * 1e3:10.1f} {max(w) * 1e3:9.1f}"
            f" {cpu[name] * 1e3:9.1f}"
        )
    print()
    for name in ("auto, balanced", "auto, strict"):
        for label, med in (("wall", wall), ("CPU", cpu)):
            base = med["before (keywords)"]
            print(
                f"{name} / before, {label}: {med[name] / base:5.2f}x"
                f"  ({(med[name] - base) * 1e3:+.0f} ms)"
            )
    if args.json:
        args.json.write_text(json.dumps({"times_s": times}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
