"""The held-out report of ``train_router.py --report``: route accuracy, high misses,
over-escalation and ECE per profiler and suite, load time and per-prompt latency (spliced into
docs/routing.md by ``--docs``). Apart from the fitting so a report never retrains anything.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loomc.policy.models import RiskSettings
from loomc.risk.evaluate import evaluate_profiler, load_rows
from loomc.risk.factory import make_keywords
from loomc.risk.reference import ReferenceProfiler
from loomc.risk.semantic import SECOND_FILE, SemanticProfiler

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "evals" / "routing"
HARD_TEST = CORPUS / "hard-test.jsonl"
HARD_TEST_2 = CORPUS / "hard-test-2.jsonl"  # sealed before v4, measured once
RELEASE = "semantic-v4"  # recorded in both files' meta: which training run made them

LOAD_SNIPPET = (
    "import time,json;t=time.perf_counter();"
    "from loomc.policy.models import RiskSettings;from loomc.risk.factory import make_profiler;"
    "p=make_profiler(RiskSettings(profiler='semantic'));p.load();p.profile('warm');"
    "print(json.dumps({'load_seconds':p.load_seconds,'total':time.perf_counter()-t,'name':p.name}))"
)


def measure_load() -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", LOAD_SNIPPET],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def latency_ms(profiler: Any, prompts: Sequence[str], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        for p in prompts:
            t = time.perf_counter()
            profiler.profile(p)
            times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def pct(v: float) -> str:
    return f"{100 * v:.1f}%"


OLD_DATA = ROOT / "research" / "data" / "semantic-v1.npz"  # trained on train.jsonl, no cues


def suite_rows(name: str, test: Path, hard_test: Path, seed: Path) -> tuple[list[Any], bool]:
    if name == "hard-test-2":
        return load_rows(HARD_TEST_2), False
    if name == "hard-test":
        return load_rows(hard_test), False
    if name == "test":
        return load_rows(test), False
    return load_rows(seed), name == "seed (hints)"


def report(test_path: Path, seed_path: Path, data: Path, hard_test: Path = HARD_TEST) -> str:
    settings = RiskSettings(profiler="semantic", options={"data": str(data)})
    semantic = SemanticProfiler(settings, make_keywords(settings))
    semantic.name = f"{RELEASE} (new)"
    profilers: list[Any] = [ReferenceProfiler(), make_keywords(settings)]
    older = [
        (OLD_DATA, "semantic-v1 (old)", {}),
        (SECOND_FILE, f"{RELEASE}'s MiniLM stage alone", {}),
    ]
    older.append((data, f"{RELEASE} static stage", {"cascade": False}))
    for path, name, opts in older:
        if path.exists():
            old = SemanticProfiler(
                RiskSettings(profiler="semantic", options={"data": str(path), **opts}),
                make_keywords(settings),
            )
            old.name = name
            profilers.append(old)
    profilers.append(semantic)
    suites = ["hard-test-2", "hard-test", "test", "seed (hints)", "seed (no hints)"]
    lines = [
        f"{RELEASE} (5-fold CV on train + hard-train): static stage threshold "
        f"{semantic.threshold:.2f}, signal_threshold {semantic.signal_threshold:.2f}; prompts "
        f"with {semantic.router.cascade_low:.2f} < P < {semantic.router.cascade_high:.2f} go on "
        f"to {semantic.router.cascade} (MiniLM).",
        "",
        "Route accuracy; high-risk prompts left unescalated; low-risk prompts escalated.",
        "",
        "| profiler | suite | n | accuracy | high missed | over-escalated | ECE |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for prof in profilers:
        for suite in suites:
            if suite.startswith("seed") and not seed_path.exists():
                continue
            rows, hints = suite_rows(suite, test_path, hard_test, seed_path)
            r = evaluate_profiler(prof, rows, use_hints=hints)
            high_missed = round(r["high_risk_under_escalation"] * r["high_n"])
            neg = sum(not row["expectedEscalation"] for row in rows)
            over = round(r["over_escalation"] * neg)
            ece = f"{r['ece']:.3f}" if "ece" in r else "–"
            lines.append(
                f"| {r['profiler']} | {suite} | {r['n']} | {pct(r['accuracy'])} | "
                f"{high_missed} / {r['high_n']} | {over} / {neg} | {ece} |"
            )
    load = measure_load()
    prompts = [str(r["prompt"]) for r in load_rows(hard_test)]
    kw_ms = latency_ms(profilers[1], prompts)
    semantic.cache_size = 0
    sem_ms = latency_ms(semantic, prompts)
    lines += [
        "",
        f"Load (fresh process: the token table, the vocabulary and MiniLM's weights, "
        f"memory-mapped): {load['load_seconds']:.2f} s. Per-prompt wall latency after load, "
        f"median over the hard-test prompts, uncached, 1 BLAS thread for MiniLM, on "
        f"{os.cpu_count()} CPUs: keywords {kw_ms:.3f} ms, {RELEASE} {sem_ms:.2f} ms "
        f"(CPU time per prompt: benchmarks/bench_profiler.py).",
    ]
    return "\n".join(lines)


def splice(doc: Path, text: str) -> None:
    start, end = "<!-- report:start -->", "<!-- report:end -->"
    src = doc.read_text(encoding="utf-8")
    head, rest = src.split(start, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{start}\n{text}\n{end}{tail}", encoding="utf-8")
