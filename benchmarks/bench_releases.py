"""The semantic profiler's releases side by side: load time and per-prompt CPU time.

    python benchmarks/bench_releases.py [--rounds 3] [--releases v4 v6 v7] [--suites test ...]
    python benchmarks/bench_releases.py --releases v8 v8:onnxruntime v10 --suites hard-test-7

Why a script of its own: v7 adds a signal (``loomc.risk.signals``: task patterns and code-hazard
patterns, run on every prompt) to v4's work, and issue 17's budget is 5 ms per prompt and 1 s
to load. Load: a fresh process builds the release's profiler and profiles one prompt (reading
the static stage's files and, for a cascade, MiniLM's weights: ``load()``), median of
``--loads``. Latency: CPU time per prompt after load, the embedding cache off
(``risk.options.cache: 0``), over the hard-test, hard-test-2, hard-test-3 and test prompts, the
releases interleaved prompt by prompt so machine load hits each alike; each figure is
min / median / max over ``--rounds`` rounds of per-round medians (and the p95 of the last
round; the mean and p95 are the last round's), and the share of prompts the cascade sent to
MiniLM (the reasons say "decided by MiniLM"). ``--suites`` names other routing files (route10:
a spent split none of v7/v8 trained on). A release may name MiniLM's backend after a colon
(``v8:onnxruntime``: ``risk.options.backend``; v10 takes ONNX Runtime by default where it is
installed), and set numeric options after a ``+`` (``v13:numpy+band_high=0.51``). The load
also reports the process's peak RSS. The semantic extra (MiniLM's weights) is needed for the
cascade.
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
sys.path.insert(0, str(ROOT))

from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.base import RiskSettingsError  # noqa: E402
from loomc.risk.evaluate import load_rows  # noqa: E402
from loomc.risk.factory import make_profiler  # noqa: E402

SUITES = ("hard-test", "hard-test-2", "hard-test-3", "test")
LOAD = (
    "import time,json,sys;t=time.process_time();w=time.perf_counter();"
    "from loomc.policy.models import RiskSettings;from loomc.risk.factory import make_profiler;"
    "o=json.loads(sys.argv[1]);"
    "p=make_profiler(RiskSettings(profiler='semantic',options=o));"
    "p.load();p.profile('warm up');c,v=time.process_time()-t,time.perf_counter()-w;"
    "h=[int(x.split()[1])/1024 for x in open('/proc/self/status') if x.startswith('VmHWM')][0];"
    "print(json.dumps({'cpu':c,'wall':v,'peak':h}))"
)


def options_of(spec: str) -> dict[str, Any]:
    """``risk.options`` for a release as named on the command line: ``REL[:BACKEND]`` then any
    ``+KEY=NUMBER`` (``v13:numpy+band_high=0.51``: the release with a narrower band)."""
    head, *sets = spec.split("+")
    name, _, backend = head.partition(":")
    opts: dict[str, Any] = {"release": name, **({"backend": backend} if backend else {})}
    for item in sets:
        key, _, value = item.partition("=")
        try:
            opts[key] = float(value)
        except ValueError:
            raise SystemExit(f"{spec}: +{item} is not KEY=NUMBER") from None
    return opts


def load_seconds(release: str, loads: int) -> dict[str, float]:
    runs = []
    for _ in range(loads):
        out = subprocess.run(
            [sys.executable, "-c", LOAD, json.dumps(options_of(release))],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in ("cpu", "wall", "peak")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--releases", nargs="+", default=["v4", "v6", "v7"])
    ap.add_argument("--suites", nargs="+", default=list(SUITES), help="routing files, no .jsonl")
    args = ap.parse_args(argv)
    prompts = [
        str(r["prompt"])
        for s in args.suites
        for r in load_rows(ROOT / "evals" / "routing" / f"{s}.jsonl")
    ]
    profs: dict[str, Any] = {}
    for rel in args.releases:
        opts = {**options_of(rel), "cache": 0}
        try:
            profs[rel] = make_profiler(RiskSettings(profiler="semantic", options=opts))
        except RiskSettingsError as exc:  # a bad +KEY=NUMBER: one line, as loomc run says it
            raise SystemExit(f"{rel}: {exc}") from None
        profs[rel].load()
        profs[rel].profile_many(prompts[:8])  # numpy path warm
    deferred = {
        rel: sum(
            any("decided by MiniLM" in x for x in r.reasons) for r in prof.profile_many(prompts)
        )
        / len(prompts)
        for rel, prof in profs.items()
    }
    medians: dict[str, list[float]] = {rel: [] for rel in args.releases}
    last: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        times: dict[str, list[float]] = {rel: [] for rel in args.releases}
        for p in prompts:
            for rel, prof in profs.items():
                t = time.process_time()
                prof.profile_many([p])
                times[rel].append(time.process_time() - t)
        for rel in args.releases:
            medians[rel].append(statistics.median(times[rel]) * 1000)
        last = times
    print(f"{len(prompts)} prompts ({', '.join(args.suites)}), {args.rounds} rounds\n")
    print(
        "| release | load CPU s | load wall s | load peak RSS MiB | CPU ms/prompt median "
        "(min / median / max) | mean ms | p95 ms | to MiniLM |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for rel in args.releases:
        ld = load_seconds(rel, args.loads)
        m = medians[rel]
        p95 = sorted(last[rel])[int(0.95 * len(last[rel]))] * 1000
        mean = statistics.fmean(last[rel]) * 1000
        print(
            f"| {rel} | {ld['cpu']:.2f} | {ld['wall']:.2f} | {ld['peak']:.0f} | "
            f"{min(m):.2f} / {statistics.median(m):.2f} / {max(m):.2f} | {mean:.2f} | {p95:.2f} | "
            f"{100 * deferred[rel]:.1f}% |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
