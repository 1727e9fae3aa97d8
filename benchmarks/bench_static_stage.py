"""The semantic profiler's per-prompt CPU time, this tree against another, and the static
stage split into its parts (issue 17 item 3: a prompt in 5 ms on one core).

    taskset -c 1 python benchmarks/bench_static_stage.py --before /tmp/fast10-base \
        --releases v11:numpy v11:onnxruntime v8 --suites hard-test-9 seed --rounds 3
    taskset -c 1 python benchmarks/bench_static_stage.py --parts [--before DIR]

Why a script of its own: ``bench_releases.py`` compares releases inside one process; a change
to the code is compared across two trees (``git archive <base> | tar -x -C DIR``), so each
round runs one fresh process per tree, the trees alternating first, and each process
profiles every prompt of each suite one call at a time (``profile_many([p])``, the embedding
cache off) after a warm pass. Figures: CPU ms per prompt, median / mean / p95 of a round, each
given as min / median / max over the rounds. ``--parts``: each part of the static stage timed
alone on each prompt (outside a ``loomc.risk.memo`` pass: what each costs by itself), v11,
median / mean ms. ``seed`` is ``../shared/reference/seed-evals/adaptive-routing-v1.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT.parent / "shared" / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"


def prompts_of(root: Path, suite: str) -> list[str]:
    path = SEED if suite == "seed" else root / "evals" / "routing" / f"{suite}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(ln)["prompt"] for ln in lines if ln.strip()]


def profiler(release: str, **extra: Any) -> Any:
    import numpy  # noqa: F401  # the numpy path, as a process past its first prompts takes

    from loomc.policy.models import RiskSettings
    from loomc.risk.factory import make_profiler

    name, _, backend = release.partition(":")
    opts: dict[str, Any] = {"release": name, "cache": 0, **extra}
    if backend:
        opts["backend"] = backend
    prof = make_profiler(RiskSettings(profiler="semantic", options=opts))
    prof.load()
    return prof


def measure(root: Path, release: str, suites: list[str]) -> dict[str, dict[str, float]]:
    """One arm, one round (run in a fresh process with ``root`` first on the path)."""
    prof = profiler(release)
    out = {}
    for suite in suites:
        prompts = prompts_of(root, suite)
        prof.profile_many(prompts[:8])
        for p in prompts:  # warm: every pattern compiled, every word seen
            prof.profile_many([p])
        times = []
        for p in prompts:
            t = time.process_time()
            prof.profile_many([p])
            times.append((time.process_time() - t) * 1000)
        ranked = sorted(times)
        out[suite] = {
            "median": statistics.median(times),
            "mean": statistics.fmean(times),
            "p95": ranked[int(0.95 * len(ranked))],
        }
    return out


def parts(root: Path, suites: list[str]) -> dict[str, dict[str, tuple[float, float]]]:
    """Each part of v11's static stage alone, per prompt: (median, mean) CPU ms."""
    import numpy as np

    from loomc.risk import router as r
    from loomc.risk.features import router_features

    prof = profiler("v11", cascade=False)
    head, enc, kw = prof.router, prof.encoder, prof.keywords
    labels = np.array(head.train_labels, dtype=np.float64)
    found: dict[str, dict[str, tuple[float, float]]] = {}
    for suite in suites:
        prompts = prompts_of(root, suite)
        prof.profile_many(prompts)
        emb = {p: enc.encode([p]) for p in prompts}
        sims = {p: r.similarities(emb[p].astype(np.float32), head.train_emb)[0] for p in prompts}
        x = {
            p: prof._assemble(head, emb[p], np.array([router_features(kw, p)]), [p])
            for p in prompts
        }
        steps = _steps(prof, emb, sims, x, labels)
        row = {}
        for name, step in steps.items():
            times = []
            for _round in range(2):  # the second round kept: warm
                times = []
                for p in prompts:
                    t = time.process_time()
                    step(p)
                    times.append((time.process_time() - t) * 1000)
            row[name] = (statistics.median(times), statistics.fmean(times))
        found[suite] = row
    return found


def _steps(prof: Any, emb: Any, sims: Any, x: Any, labels: Any) -> dict[str, Any]:
    """The parts ``parts`` times, each a function of one prompt."""
    import numpy as np

    from loomc.risk import codehazards, cues, exposure, purpose, tasks
    from loomc.risk import router as r
    from loomc.risk.features import keyword_features

    head, enc, kw = prof.router, prof.encoder, prof.keywords
    return {
        "tokenise": lambda p: enc.token_ids(p),
        "static embedding (with tokenise)": lambda p: enc.encode([p]),
        "float32 product with the train prompts": lambda p: r.similarities(
            emb[p].astype(np.float32), head.train_emb
        ),
        "neighbour features (product, re-score, k nearest)": lambda p: r.knn_features(
            r.neighbour_similarities(emb[p], head.train_emb, labels), labels
        ),
        "keyword features": lambda p: keyword_features(kw, p),
        "cues": cues.cue_vector,
        "tasks": tasks.task_vector,
        "code hazards": codehazards.code_vector,
        "exposure": exposure.exposure_vector,
        "purpose": purpose.purpose_vector,
        "standardise + sigmoid": lambda p: head.probability(x[p]),
        "nearest 3 (explanation)": lambda p: prof.nearest(sims[p]),
        "decision + reasons": lambda p: prof._decide(p, None, 0.5, [], head),
        "whole profile (cascade off)": lambda p: prof.profile_many([p]),
    }


def run_arm(root: Path, args: list[str]) -> Any:
    out = subprocess.run(
        [sys.executable, __file__, "--arm", str(root), *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--before", type=Path, help="the other tree (git archive of the base)")
    ap.add_argument("--releases", nargs="+", default=["v11:numpy", "v11:onnxruntime", "v8"])
    ap.add_argument("--suites", nargs="+", default=["hard-test-9", "seed"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--parts", action="store_true")
    ap.add_argument("--arm", type=Path, help=argparse.SUPPRESS)  # a child process: one tree
    args = ap.parse_args(argv)
    if args.arm is not None:
        sys.path[:0] = [str(args.arm)]
        if args.parts:
            print(json.dumps(parts(args.arm, args.suites)))
        else:
            print(json.dumps(measure(args.arm, args.releases[0], args.suites)))
        return 0
    trees = [("after", ROOT)] + ([("before", args.before)] if args.before else [])
    if args.parts:
        got = {arm: run_arm(root, ["--parts", "--suites", *args.suites]) for arm, root in trees}
        for suite in args.suites:
            print(f"\n{suite}: CPU ms a prompt, median / mean ({' | '.join(a for a, _ in trees)})")
            for name in got["after"][suite]:
                cells = [
                    f"{got[a][suite][name][0]:.3f} / {got[a][suite][name][1]:.3f}" for a, _ in trees
                ]
                print(f"| {name} | " + " | ".join(cells) + " |")
        return 0
    for release in args.releases:
        res: dict[str, list[Any]] = {arm: [] for arm, _ in trees}
        loads = []
        for rnd in range(args.rounds):
            for arm, root in trees if rnd % 2 == 0 else trees[::-1]:
                res[arm].append(run_arm(root, ["--releases", release, "--suites", *args.suites]))
                loads.append(float(Path("/proc/loadavg").read_text().split()[0]))
        print(f"\n{release}, {args.rounds} rounds, load average {min(loads):.1f}-{max(loads):.1f}")
        print("| suite | tree | median (min / median / max) | mean | p95 |")
        print("|---|---|---:|---:|---:|")
        for suite in args.suites:
            for arm, _ in trees:
                cells = []
                for key in ("median", "mean", "p95"):
                    v = [r[suite][key] for r in res[arm]]
                    cells.append(f"{min(v):.2f} / {statistics.median(v):.2f} / {max(v):.2f}")
                print(f"| {suite} | {arm} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
