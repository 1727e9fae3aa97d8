"""Eval throughput and memory, in one run. Run: python benchmarks/bench_eval.py [--quick]

Throughput: an eval of the `lean` strategy (one call per run) through the public API
(`loomc.prepare_eval(...).run()`) against the policy's mock provider answering after 50 ms, at
concurrency 128. The ideal is fixed by the sleep (ceil(runs / 128) x 50 ms), so the eval can run
in-process; the fraction is ideal / achieved wall time, and the CPU the process spent per run
(time.process_time) is reported beside it: at 50 ms and 128 in flight, anything above 0.39 ms of
CPU per run cannot keep the provider busy on one core.

Memory: peak RSS (VmHWM) of a fresh process that plans, runs and writes the JSON receipt of an
eval of 10,000 and of 100,000 runs (1,000 cases x `baseline,lean` x 5 or 50 iterations, a mock
answering at once, concurrency 128), each size in its own subprocess.

Every figure is the min / median / max over repeats, each repeat its own process; on a busy
machine read the median, the lead re-measures on a quiet one.

The policy is the repository's default, whose ``risk.profiler: auto`` is the semantic profiler
where its extra is installed (~1.5 ms per new prompt, issue #17's figure, not the eval's);
throughput is measured with it (``policy``) and with ``risk.profiler: keywords`` (the eval's
own machinery), each labelled (``--profiler`` picks one). The warm-up eval runs other prompts
than the timed one, so no profile the timed eval needs is cached from the warm-up: each timed
run profiles its own prompt once, as in an eval of distinct cases.

``--baseline OLD_CHECKOUT`` measures throughput before and after in one run: the throughput
children of the old tree and of this one alternate, in a fresh shuffled order each repeat, and
the figures are printed side by side (memory is left out of that mode)."""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LATENCY_MS = 50
CONCURRENCY = 128
CASES = 1000


PROFILERS = ("policy", "keywords")  # the policy's own risk profiler, or the keyword rules


def _policy(tmp: Path, latency_ms: int, profiler: str = "policy") -> Path:
    import yaml

    policy = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    policy["providers"]["mock"]["mock"] = {"latency_ms": latency_ms, "rules": []}
    if profiler != "policy":
        policy.setdefault("risk", {})["profiler"] = profiler
    path = tmp / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path


def _dataset(tmp: Path, cases: int, name: str = "cases") -> Path:
    path = tmp / f"{name}.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "prompt": f"Name {i % 97 + 2} colours of {name} {i}."})
            + "\n"
            for i in range(cases)
        )
    )
    return path


def child_throughput(runs: int, profiler: str = "policy") -> dict[str, float]:
    """One eval of ``runs`` runs at 50 ms and concurrency 128, in this process."""
    import time

    import loomc

    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        policy = _policy(tmp, LATENCY_MS, profiler)
        warm = loomc.prepare_eval(
            _dataset(tmp, CONCURRENCY * 2, "warm-up"),
            "lean",
            project=ROOT,
            policy=policy,
            concurrency=CONCURRENCY,
        )
        warm.run(journal=tmp / "warm.journal.jsonl")  # imports, pools, first-call costs
        ev = loomc.prepare_eval(
            _dataset(tmp, runs), "lean", project=ROOT, policy=policy, concurrency=CONCURRENCY
        )
        wall, cpu = time.perf_counter(), time.process_time()
        receipt = ev.run(journal=tmp / "journal.jsonl")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert len(receipt.runs) == runs and all(r.status == "ok" for r in receipt.runs)
    ideal = math.ceil(runs / CONCURRENCY) * LATENCY_MS / 1000
    return {"fraction": ideal / wall, "cpu_ms_per_run": 1000 * cpu / runs, "wall_s": wall}


def child_memory(runs: int) -> dict[str, float]:
    """Plan, run and write the JSON receipt of a ``runs``-run eval; peak RSS in MiB."""
    import loomc

    iterations = runs // (2 * CASES)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        ev = loomc.prepare_eval(
            _dataset(tmp, CASES),
            "baseline,lean",
            project=ROOT,
            policy=_policy(tmp, 0),
            iterations=iterations,
            concurrency=CONCURRENCY,
        )
        before = _vm("VmRSS")
        receipt = ev.run(journal=tmp / "journal.jsonl")
        loomc.render(receipt, tmp / "receipt.json")
        assert len(receipt.runs) == runs
    return {"peak_mib": _vm("VmHWM"), "before_run_mib": before}


def _vm(field: str) -> float:
    """A VmRSS/VmHWM line of /proc/self/status in MiB (ru_maxrss where there is no /proc)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _spawn(kind: str, runs: int, tree: Path = ROOT, profiler: str = "policy") -> dict[str, float]:
    """One child process, importing loomc from ``tree``."""
    here = str(Path(__file__).resolve())
    out = subprocess.run(
        [sys.executable, here, "--child", kind, str(runs), "--profiler", profiler],
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]),
        },
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def before_after(baseline: Path, runs: int, repeats: int, profilers: tuple[str, ...]) -> None:
    """Throughput children of ``baseline`` and of this tree, per profiler, interleaved (a fresh
    shuffled order of every tree x profiler each repeat), side by side."""
    import random

    trees = {"before": baseline.resolve(), "after": ROOT}
    arms = [(label, prof) for prof in profilers for label in trees]
    rows: dict[tuple[str, str], list[dict[str, float]]] = {arm: [] for arm in arms}
    rng = random.Random(0)
    for _ in range(repeats):
        rng.shuffle(arms)
        for label, prof in arms:
            rows[label, prof].append(_spawn("throughput", runs, trees[label], prof))
    print(f"before = {trees['before']}, after = {trees['after']} (min / median / max)")
    for prof in profilers:
        for label in trees:
            got = rows[label, prof]
            print(
                f"  {label:6} profiler {prof:8}  fraction of ideal "
                f"{_spread([r['fraction'] for r in got], 2)}   "
                f"CPU ms per run {_spread([r['cpu_ms_per_run'] for r in got], 3)}"
            )


def _spread(values: list[float], digits: int) -> str:
    return " / ".join(
        f"{v:.{digits}f}" for v in (min(values), statistics.median(values), max(values))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and repeats")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "RUNS"), help=argparse.SUPPRESS)
    parser.add_argument("--baseline", type=Path, metavar="OLD_CHECKOUT")
    parser.add_argument(
        "--repeats", type=int, help="throughput children per tree x profiler (default 3/5)"
    )
    parser.add_argument(
        "--profiler",
        choices=(*PROFILERS, "both"),
        default="both",
        help="throughput with the policy's risk profiler, with keywords, or both (default)",
    )
    args = parser.parse_args()
    profilers = PROFILERS if args.profiler == "both" else (args.profiler,)
    if args.child:
        kind, runs = args.child[0], int(args.child[1])
        if kind == "throughput":
            print(json.dumps(child_throughput(runs, profilers[0])))
        else:
            print(json.dumps(child_memory(runs)))
        return
    runs = CONCURRENCY * (5 if args.quick else 20)
    repeats = args.repeats or (3 if args.quick else 5)
    sizes = (10_000,) if args.quick else (10_000, 100_000)
    mem_repeats = 1 if args.quick else 3
    if args.baseline is not None:
        print(f"eval at concurrency {CONCURRENCY}, mock provider {LATENCY_MS} ms, {runs} runs")
        return before_after(args.baseline, runs, repeats, profilers)
    print(
        f"eval at concurrency {CONCURRENCY}, mock provider {LATENCY_MS} ms, {runs} runs, "
        f"{repeats} repeats (min / median / max)"
    )
    for prof in profilers:
        rows = [_spawn("throughput", runs, profiler=prof) for _ in range(repeats)]
        print(
            f"  profiler {prof:8}  fraction of ideal {_spread([r['fraction'] for r in rows], 2)}"
            f"   (goal >= 0.9)   CPU ms per run {_spread([r['cpu_ms_per_run'] for r in rows], 3)}"
            "   (goal <= 0.3)"
        )
    for size in sizes:
        mem = [_spawn("memory", size) for _ in range(mem_repeats)]
        print(
            f"  peak RSS at {size:>7,} runs {_spread([m['peak_mib'] for m in mem], 0)} MiB"
            f"   (before the run {_spread([m['before_run_mib'] for m in mem], 0)} MiB; goal <= 150)"
        )


if __name__ == "__main__":
    main()
