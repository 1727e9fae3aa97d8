"""Compiling and checking grow linearly with a pipeline's size: 4x the steps costs about 4x the
time, not 16x (a set of step names rebuilt per reference, and a path copied per step in the
latency analysis, made 10,000 steps take minutes)."""

from __future__ import annotations

import gc
import time
from pathlib import Path

from loomc.checker.rules import check_pipeline
from loomc.ir.compile import compile_modules
from loomc.policy.load import load_policy
from loomc.syntax import ast
from loomc.syntax.parser import parse_text

ROOT = Path(__file__).resolve().parents[2]


def _pipeline(n: int) -> ast.Module:
    """A chain of ``n`` steps, each reading the one before and running after the first."""
    steps = ['  step s0 : writer(drafter) { task "t" max_tokens 10 }']
    steps += [
        f'  step s{i} : writer(drafter) sees s{i - 1} after s0 {{ task "t" max_tokens 10 }}'
        for i in range(1, n)
    ]
    text = "pipeline big {\n" + "\n".join(steps) + f"\n  answer s{n - 1}\n}}\n"
    module, diags = parse_text(text, "big.loom")
    assert module is not None, diags
    return module


def _cost(module: ast.Module) -> float:
    """CPU seconds to compile and check ``module`` (best of three: robust to a busy machine)."""
    source, _ = load_policy(ROOT / "policies" / "default.yaml")
    assert source is not None
    best = float("inf")
    for _ in range(3):
        gc.collect()
        gc.disable()  # the collector's passes grow with every live object, not with our work
        try:
            start = time.process_time()
            pipelines, diags = compile_modules([module], source)
            findings = [d for p in pipelines for d in check_pipeline(p)]
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
        assert not [d for d in diags + findings if d.is_error]
    return best


def test_compile_and_check_time_grow_linearly() -> None:
    small, large = _pipeline(2_000), _pipeline(8_000)
    ratio = _cost(large) / _cost(small)
    assert ratio < 6, f"4x the steps took {ratio:.1f}x the time (quadratic would be ~16x)"
