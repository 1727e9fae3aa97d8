"""Eval throughput and memory, in one run. Run: python benchmarks/bench_eval.py [--quick]

Throughput: evals of the `lean` strategy (one call per run) through the public API
(`loomc.prepare_eval(...).run()`) against the policy's mock provider answering after 50 ms, at
concurrency 128. The ideal is fixed by the sleep (ceil(runs / 128) x 50 ms), so the eval can run
in-process; the fraction is ideal / achieved wall time, and the CPU the process spent per run
(time.process_time) is reported beside it: at 50 ms and 128 in flight, anything above 0.39 ms of
CPU per run cannot keep the provider busy on one core.

Each throughput child warms up (one eval of 256 other prompts), then times evals of one wave
(128 runs), of the default size (2,560 runs) and, without ``--quick``, of a larger one (12,800),
one after another in the same process. An eval's CPU divided by its runs carries the eval's
set-up (pool, journal, the matrix's start, the receipt built at the end) spread over however
many runs were timed, so a per-run figure from a short eval overstates the cost of a run.
The goal figure is therefore the *marginal* CPU per run, (CPU of the largest eval - CPU of the
one-wave eval) / (difference in runs), both measured in the same warm process, with the *fixed*
CPU of an eval (the one-wave eval's CPU - 128 x the marginal) printed beside it. The fraction of
ideal is printed per size: the first wave's calls start one after another and the last wave's
answers are handled one after another, so a short eval cannot reach the steady state's fraction.

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
from typing import Any

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


def child_throughput(sizes: list[int], profiler: str = "policy") -> list[dict[str, float]]:
    """Evals of each of ``sizes`` runs at 50 ms and concurrency 128, one after another in this
    process after one warm-up eval, each of its own prompts."""
    import time

    import loomc

    out = []
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
        for k, runs in enumerate(sizes):
            ev = loomc.prepare_eval(
                _dataset(tmp, runs, f"cases{k}"),
                "lean",
                project=ROOT,
                policy=policy,
                concurrency=CONCURRENCY,
            )
            wall, cpu = time.perf_counter(), time.process_time()
            receipt = ev.run(journal=tmp / f"journal{k}.jsonl")
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert len(receipt.runs) == runs and all(r.status == "ok" for r in receipt.runs)
            del receipt
            ideal = math.ceil(runs / CONCURRENCY) * LATENCY_MS / 1000
            out.append({"runs": runs, "fraction": ideal / wall, "cpu_s": cpu, "wall_s": wall})
    return out


def steady(rows: list[dict[str, float]]) -> dict[str, float]:
    """The marginal CPU per run and the fixed CPU of an eval, from one child's evals of the
    smallest and the largest size (same warm process)."""
    small = min(rows, key=lambda r: r["runs"])
    large = max(rows, key=lambda r: r["runs"])
    marginal = (large["cpu_s"] - small["cpu_s"]) / (large["runs"] - small["runs"])
    return {
        "marginal_ms": 1000 * marginal,
        "fixed_ms": 1000 * (small["cpu_s"] - marginal * small["runs"]),
    }


def child_memory(runs: int, profiler: str = "policy", loaded: bool = False) -> dict[str, float]:
    """Plan, run and write the JSON receipt of a ``runs``-run eval; peak RSS in MiB.

    ``loaded``: every weight the policy's profilers may need is read before the run
    (``SemanticProfiler.load``, MiniLM too), the profilers passed in through ``prepare_eval``'s
    ``profilers``. Why: this benchmark's prompts are all alike ("Name N colours of cases i."),
    and whether any reaches a release's MiniLM band is luck of the release (v12 sends 26 there,
    v13 none), so without it a release can pass the 150 MiB gate without its MiniLM in memory;
    a real eval of varied prompts reads it."""
    import loomc

    iterations = runs // (2 * CASES)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        policy = _policy(tmp, 0, profiler)
        profilers = _loaded_profilers(policy) if loaded else None
        ev = loomc.prepare_eval(
            _dataset(tmp, CASES),
            "baseline,lean",
            project=ROOT,
            policy=policy,
            iterations=iterations,
            concurrency=CONCURRENCY,
            profilers=profilers,
        )
        before = _vm("VmRSS")
        receipt = ev.run(journal=tmp / "journal.jsonl")
        loomc.render(receipt, tmp / "receipt.json")
        assert len(receipt.runs) == runs
    return {"peak_mib": _vm("VmHWM"), "before_run_mib": before}


def _loaded_profilers(policy: Path) -> dict[bool, Any]:
    """The profilers ``prepare_eval`` builds for ``policy`` (``eval_profilers``), every weight
    read."""
    import loomc
    from loomc.api.evaluating import eval_profilers

    profilers = eval_profilers(loomc.load_project(ROOT, policy).policy.risk)
    for prof in profilers.values():
        load = getattr(prof, "load", None)
        if load is not None:
            load()
    return profilers


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


def _spawn(kind: str, runs: str, tree: Path = ROOT, profiler: str = "policy") -> Any:
    """One child process, importing loomc from ``tree``; ``runs`` is one size or several,
    comma-separated (throughput)."""
    here = str(Path(__file__).resolve())
    out = subprocess.run(
        [sys.executable, here, "--child", kind, runs, "--profiler", profiler],
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]),
        },
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _report(label: str, children: list[list[dict[str, float]]]) -> None:
    """Per size the fraction of ideal and the CPU per run (set-up included), then the
    marginal CPU per run and the fixed CPU of an eval, over the children."""
    sizes = [int(r["runs"]) for r in children[0]]
    for i, runs in enumerate(sizes):
        if runs == min(sizes):
            continue  # the small eval is there for the difference
        got = [child[i] for child in children]
        print(
            f"  {label}  {runs:>6,} runs: fraction of ideal "
            f"{_spread([r['fraction'] for r in got], 2)}   CPU ms per run "
            f"{_spread([1000 * r['cpu_s'] / runs for r in got], 3)}"
        )
    fit = [steady(child) for child in children]
    print(
        f"  {label}  marginal CPU ms per run ({max(sizes):,} - {min(sizes)} runs) "
        f"{_spread([f['marginal_ms'] for f in fit], 3)}   (goal <= 0.3)   fixed CPU ms per eval "
        f"{_spread([f['fixed_ms'] for f in fit], 1)}"
    )


def before_after(baseline: Path, sizes: str, repeats: int, profilers: tuple[str, ...]) -> None:
    """Throughput children of ``baseline`` and of this tree, per profiler, interleaved (a fresh
    shuffled order of every tree x profiler each repeat), side by side."""
    import random

    trees = {"before": baseline.resolve(), "after": ROOT}
    arms = [(label, prof) for prof in profilers for label in trees]
    rows: dict[tuple[str, str], list[list[dict[str, float]]]] = {arm: [] for arm in arms}
    rng = random.Random(0)
    for _ in range(repeats):
        rng.shuffle(arms)
        for label, prof in arms:
            rows[label, prof].append(_spawn("throughput", sizes, trees[label], prof))
    print(f"before = {trees['before']}, after = {trees['after']} (min / median / max)")
    for prof in profilers:
        for label in trees:
            _report(f"{label:6} profiler {prof:8}", rows[label, prof])


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
        "--minilm-loaded",
        action="store_true",
        help="memory: read every weight the profilers may need before the run (MiniLM too)",
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
        kind, runs = args.child
        if kind == "throughput":
            print(json.dumps(child_throughput([int(n) for n in runs.split(",")], profilers[0])))
        else:
            print(json.dumps(child_memory(int(runs), profilers[0], args.minilm_loaded)))
        return
    steps = (1, 20) if args.quick else (1, 20, 100)  # waves of 128: one, the default, a larger
    sizes = ",".join(str(CONCURRENCY * n) for n in steps)
    repeats = args.repeats or (3 if args.quick else 5)
    mem_sizes = (10_000,) if args.quick else (10_000, 100_000)
    mem_repeats = 1 if args.quick else 3
    print(
        f"eval at concurrency {CONCURRENCY}, mock provider {LATENCY_MS} ms, evals of {sizes} "
        f"runs in each child, {repeats} children (min / median / max); goals: fraction >= 0.9, "
        "CPU per run <= 0.3 ms"
    )
    if args.baseline is not None:
        return before_after(args.baseline, sizes, repeats, profilers)
    for prof in profilers:
        _report(
            f"profiler {prof:8}",
            [_spawn("throughput", sizes, profiler=prof) for _ in range(repeats)],
        )
    for size in mem_sizes:
        mem = [_spawn("memory", str(size)) for _ in range(mem_repeats)]
        print(
            f"  peak RSS at {size:>7,} runs {_spread([m['peak_mib'] for m in mem], 0)} MiB"
            f"   (before the run {_spread([m['before_run_mib'] for m in mem], 0)} MiB; goal <= 150)"
        )


if __name__ == "__main__":
    main()
