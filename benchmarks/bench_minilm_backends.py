"""MiniLM's forward pass on numpy versus ONNX Runtime (float32, int8): time, load and agreement.

    PYTHONPATH=. python benchmarks/bench_minilm_backends.py [--rounds 3]
        [--skip-agreement] [--skip-latency] [--with-int8] [--q8-only]

Why: issue 17 item 3 asks for 5 ms a prompt on one core; the cascade's MiniLM stage (numpy,
``loomc.risk.minilm``) costs 12-48 ms on the prompts it decides. This script answers whether
ONNX Runtime (``loomc.risk.minilm_ort``: the same graph built in memory, one thread) gets there,
and at what cost in agreement.

Backends: ``numpy`` (float32, the served default), ``ort-fp32``, ``ort-q8`` and ``numpy-q8`` (the
defined int8 MiniLM, ``loomc.risk.minilm_q8``: ONNX Runtime's graph and the numpy reference);
with ``--with-int8`` also ``ort-int8`` (the MatMul weights dynamically quantised to signed int8
per tensor by ``onnxruntime.quantization.quantize_dynamic``, the attention products left in
float) and ``ort-int8-pc`` (per channel), ort11's kernel-dependent variants.

1. Forward pass at 16/32/64/128 tokens: CPU time (``time.process_time``) of the pass and
   pooling only (tokenising is the same for all), the backends interleaved call by call; each
   figure is min / median / max over ``--rounds`` of per-round medians of 30 calls.
2. hard-test-7 per prompt: the v8 profiler (cache off), its MiniLM stage served by each backend
   in turn, prompt by prompt interleaved; CPU ms per prompt, the last round's median, mean, p95.
3. Load: a fresh process builds and loads each encoder (imports included) and encodes one
   prompt; median of 3; with its peak RSS (``ru_maxrss``) and its RSS after the prompt.
4. Agreement over every ``evals/routing/*.jsonl`` prompt and the seed suite: max |delta| of the
   embedding against numpy float64, and how many v7/v8/v9 decisions (the level) change when the
   MiniLM stage's embedding comes from each float backend instead of numpy float32; for the
   int8 pair, ORT-q8 against the numpy-q8 reference: max |delta|, how many prompts differ by
   more than 1e-5 (a code rounded differently somewhere in the pass), and how many v10 and v11
   decisions change.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.evaluate import load_rows  # noqa: E402
from loomc.risk.factory import make_profiler  # noqa: E402
from loomc.risk.minilm import MiniLM  # noqa: E402
from loomc.risk.minilm_ort import OrtMiniLM  # noqa: E402
from loomc.risk.minilm_q8 import MiniLMQ8, OrtMiniLMQ8  # noqa: E402
from loomc.risk.releases import MINILM_KINDS, RELEASES  # noqa: E402

SEED = ROOT.parent / "shared" / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"
LENGTHS = (16, 32, 64, 128)
LOAD = (
    "import time,json,sys;t=time.process_time();w=time.perf_counter();"
    "sys.path[:0]=['.'];import benchmarks.bench_minilm_backends as b;"
    "e=b.backends(True)[sys.argv[1]];e.encode(['warm up']);"
    "c,v=time.process_time()-t,time.perf_counter()-w;import os;"
    "rss=int(open('/proc/self/statm').read().split()[1])*os.sysconf('SC_PAGE_SIZE')/2**20;"
    "peak=[int(x.split()[1])/1024 for x in open('/proc/self/status') if x.startswith('VmHWM')][0];"
    "print(json.dumps({'cpu':c,'wall':v,'rss':rss,'peak':peak}))"
)


def int8(per_channel: bool) -> Callable[[Any], Any]:
    """A ModelProto -> ModelProto quantiser (MatMul weights to int8; attention kept float)."""

    def quantize(model: Any) -> Any:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        skip = [f"l{i}.{n}" for i in range(6) for n in ("qk", "pv")]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "q.onnx"
            quantize_dynamic(
                model,
                out,
                op_types_to_quantize=["MatMul"],
                weight_type=QuantType.QInt8,
                per_channel=per_channel,
                nodes_to_exclude=skip,
            )
            return onnx.load(out)

    return quantize


def backends(with_int8: bool = False, q8_only: bool = False) -> dict[str, Any]:
    encs: dict[str, Any] = {"ort-q8": OrtMiniLMQ8(), "numpy-q8": MiniLMQ8()}
    if q8_only:
        return encs
    encs = {"numpy": MiniLM("float32"), "ort-fp32": OrtMiniLM(), **encs}
    if with_int8:
        encs["ort-int8"] = OrtMiniLM(quantize=int8(False))
        encs["ort-int8-pc"] = OrtMiniLM(quantize=int8(True))
    return encs


def spread(values: Sequence[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def forward(enc: Any) -> Callable[[list[int]], Any]:
    def run(ids: list[int]) -> Any:
        with enc._blas_limit():  # the cap encode() applies (none on ONNX Runtime)
            return enc.pooled(ids)

    return run


def lengths(encs: dict[str, Any], rounds: int, text: str) -> None:
    ids = encs["numpy"].token_ids(text)
    print("\n| tokens | " + " | ".join(f"{k} ms" for k in encs) + " | numpy / ort-fp32 |")
    print("|---" * (len(encs) + 2) + "|")
    for n in LENGTHS:
        seq = [*ids[: n - 1], ids[-1]]
        runs = {k: forward(e) for k, e in encs.items()}
        per: dict[str, list[float]] = {k: [] for k in encs}
        for _ in range(rounds):
            calls: dict[str, list[float]] = {k: [] for k in encs}
            for _ in range(30):
                for k, f in runs.items():
                    t = time.process_time()
                    f(seq)
                    calls[k].append(1000 * (time.process_time() - t))
            for k in encs:
                per[k].append(statistics.median(calls[k]))
        ratio = statistics.median(per["numpy"]) / statistics.median(per["ort-fp32"])
        print(f"| {n} | " + " | ".join(spread(per[k]) for k in encs) + f" | {ratio:.2f}x |")


def profiled(encs: dict[str, Any], rounds: int) -> None:
    prompts = [str(r["prompt"]) for r in load_rows(ROOT / "evals/routing/hard-test-7.jsonl")]
    prof = make_profiler(RiskSettings(profiler="semantic", options={"release": "v8", "cache": 0}))
    prof.load()
    ms: dict[str, list[float]] = {}
    for _ in range(rounds):
        ms = {k: [] for k in encs}
        for p in prompts:
            for k, e in encs.items():
                prof._second_encoder = e  # the MiniLM stage on this backend
                t = time.process_time()
                prof.profile(p)
                ms[k].append(1000 * (time.process_time() - t))
    print(f"\nhard-test-7, v8 profiler, {len(prompts)} prompts, last round, CPU ms a prompt")
    print("| backend | median | mean | p95 |\n|---|---|---|---|")
    for k, v in ms.items():
        p95 = sorted(v)[int(0.95 * len(v))]
        print(f"| {k} | {statistics.median(v):.2f} | {statistics.mean(v):.2f} | {p95:.2f} |")


def loads(names: Sequence[str]) -> None:
    print("\n| backend | load CPU s | load wall s | peak RSS MiB | RSS after MiB |")
    print("|---|---|---|---|---|")
    for k in names:
        runs = []
        for _ in range(3):
            out = subprocess.run(
                [sys.executable, "-c", LOAD, k],
                cwd=ROOT,
                check=True,
                capture_output=True,
                text=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        cpu, wall, peak, rss = (
            statistics.median(r[key] for r in runs) for key in ("cpu", "wall", "peak", "rss")
        )
        print(f"| {k} | {cpu:.2f} | {wall:.2f} | {peak:.0f} | {rss:.0f} |")


class Served:
    """An encoder that serves precomputed embeddings (one backend's), for the decision count."""

    dtype = np.dtype(np.float32)
    load_seconds = 0.0

    def __init__(self, table: dict[str, Any]) -> None:
        self.table = table

    def load(self) -> None:
        pass

    def encode(self, texts: Sequence[str]) -> Any:
        return np.stack([self.table[t] for t in texts])


def agreement(encs: dict[str, Any]) -> None:
    files = [*sorted((ROOT / "evals/routing").glob("*.jsonl")), SEED]
    prompts = list(dict.fromkeys(str(r["prompt"]) for f in files for r in load_rows(f)))
    floats = [k for k in encs if not k.endswith("-q8")]
    ref = MiniLM("float64").encode(prompts) if floats else None  # --q8-only: not needed
    tables: dict[str, dict[str, Any]] = {}
    print(f"\nagreement: {len(prompts)} distinct prompts ({len(files)} files)")
    print("| backend | max abs delta vs float64 | encode CPU s |\n|---|---|---|")
    for k, e in encs.items():
        t = time.process_time()
        emb = e.encode(prompts)
        cpu = time.process_time() - t
        tables[k] = dict(zip(prompts, emb, strict=True))
        gap = "-" if ref is None else f"{float(np.abs(emb - ref).max()):.2e}"
        print(f"| {k} | {gap} | {cpu:.1f} |")
    q8_agreement(prompts, tables)
    if not floats:
        return
    print("\n| release | MiniLM-decided | " + " | ".join(f"{k} changed" for k in floats) + " |")
    print("|---" * (len(floats) + 2) + "|")
    for rel in ("v7", "v8", "v9"):
        prof = make_profiler(
            RiskSettings(profiler="semantic", options={"release": rel, "cache": 0})
        )
        levels: dict[str, list[str]] = {}
        band = 0
        for k in floats:
            prof._second_encoder = Served(tables[k])
            out = prof.profile_many(prompts)
            levels[k] = [p.level for p in out]
            if k == "numpy":
                band = sum(any("decided by MiniLM" in r for r in p.reasons) for p in out)
        base = levels["numpy"]
        changed = [sum(a != b for a, b in zip(base, levels[k], strict=True)) for k in floats]
        print(f"| {rel} | {band} | " + " | ".join(str(c) for c in changed) + " |")


def q8_agreement(prompts: list[str], tables: dict[str, dict[str, Any]]) -> None:
    """ORT-q8 against the numpy-q8 reference: embeddings, and each int8 release's decisions
    (v10, v11) from each."""
    ref = np.stack([tables["numpy-q8"][p] for p in prompts])
    got = np.stack([tables["ort-q8"][p] for p in prompts])
    gap = np.abs(got - ref).max(axis=1)
    print(
        f"\nort-q8 vs numpy-q8: max abs delta {float(gap.max()):.2e}, median {float(np.median(gap)):.1e}"
    )
    for edge in (1e-6, 1e-5, 1e-3, 1e-2):
        print(f"  prompts above {edge:g}: {int(np.sum(gap > edge))} of {len(prompts)}")
    for rel in [r for r, kind in MINILM_KINDS.items() if kind == "minilm-q8" and r in RELEASES]:
        opts = {"release": rel, "cache": 0}
        prof = make_profiler(RiskSettings(profiler="semantic", options=opts))
        levels = {}
        for k in ("numpy-q8", "ort-q8"):
            prof._second_encoder = Served(tables[k])
            out = prof.profile_many(prompts)
            levels[k] = [p.level for p in out]
            if k == "numpy-q8":
                band = sum(any("decided by MiniLM" in r for r in p.reasons) for p in out)
        changed = sum(a != b for a, b in zip(levels["numpy-q8"], levels["ort-q8"], strict=True))
        print(
            f"  {rel} decisions: {band} MiniLM-decided; {changed} differ between numpy-q8 and ort-q8"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument("--skip-agreement", action="store_true")
    ap.add_argument("--with-int8", action="store_true", help="also ort11's quantize_dynamic arms")
    ap.add_argument(
        "--q8-only", action="store_true", help="only the int8 pair (the int8 releases' count)"
    )
    args = ap.parse_args(argv)
    encs = backends(args.with_int8, args.q8_only)
    for e in encs.values():
        e.load()
    if not args.skip_latency:
        text = " ".join(str(r["prompt"]) for r in load_rows(ROOT / "evals/routing/test.jsonl"))
        lengths(encs, args.rounds, text)
        profiled(encs, args.rounds)
        loads(list(encs))
    if not args.skip_agreement:
        agreement(encs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
