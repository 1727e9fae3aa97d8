"""Load CPU time of the LoRA-merged int8 MiniLM against the plain one, fresh processes.

    PYTHONPATH=. python benchmarks/bench_lora_load.py --delta DELTA.npz [--rounds 7]
        [--before /tmp/old-tree]

Why: a LoRA release (``loomc.risk.lora``) pays at load what the plain int8 MiniLM does not:
the base file's sha256 and the merge of 36 weights before quantising. Each round runs, in
fresh processes, the encoder's construction, load and one prompt: ``MiniLMQ8Lora`` of this
tree, the same of ``--before`` (another tree, e.g. ``git archive <base> | tar -x -C DIR``),
and ``MiniLMQ8``, interleaved so machine load hits each alike. Prints min / median / max CPU
seconds (process time) as a markdown table. The merged numbers are the tests' business
(tests/risk/test_lora.py), not this script's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LORA = (
    "import time,sys;t=time.process_time();from pathlib import Path;"
    "from loomc.risk.lora import MiniLMQ8Lora;e=MiniLMQ8Lora(Path(sys.argv[1]));"
    "e.encode(['warm up']);print(time.process_time()-t)"
)
PLAIN = (
    "import time;t=time.process_time();from loomc.risk.minilm_q8 import MiniLMQ8;"
    "e=MiniLMQ8();e.encode(['warm up']);print(time.process_time()-t)"
)


def cpu_seconds(tree: Path, code: str, *args: str) -> float:
    env = os.environ | {"PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--delta", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--before", type=Path, help="another tree's MiniLMQ8Lora, interleaved")
    args = ap.parse_args()
    delta = str(args.delta.resolve())
    arms: dict[str, tuple[Path, str, tuple[str, ...]]] = {}
    if args.before:
        arms["MiniLMQ8Lora, before"] = (args.before, LORA, (delta,))
    arms["MiniLMQ8Lora, this tree"] = (ROOT, LORA, (delta,))
    arms["MiniLMQ8 (plain int8)"] = (ROOT, PLAIN, ())
    times: dict[str, list[float]] = {name: [] for name in arms}
    for _ in range(args.rounds):
        for name, (tree, code, extra) in arms.items():
            times[name].append(cpu_seconds(tree, code, *extra))
    print("| encoder load, CPU s | min | median | max |\n|---|---:|---:|---:|")
    for name, ts in times.items():
        print(f"| `{name}` | {min(ts):.3f} | {statistics.median(ts):.3f} | {max(ts):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
