"""Check time per pipeline and its growth with size, against yaml.safe_load of an equally large
YAML document measured in the same run. Run: pytest benchmarks/bench_check.py --benchmark-only"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from loomc.checker.rules import check_pipeline
from loomc.ir.compile import compile_modules
from loomc.policy.load import load_policy
from loomc.syntax.parser import parse_text

ROOT = Path(__file__).resolve().parents[1]
SIZES = (10, 100, 1000)


def chain(n: int) -> str:
    steps = ['  step s0 : writer(drafter) { task "t" max_tokens 10 }']
    steps += [
        f'  step s{i} : writer(drafter) sees s{i - 1} {{ task "t" max_tokens 10 }}'
        for i in range(1, n)
    ]
    return "pipeline big {\n" + "\n".join(steps) + f"\n  answer s{n - 1}\n}}\n"


def yaml_doc(n: int) -> str:
    return "steps:\n" + "".join(
        f"  - {{id: s{i}, role: writer, worker: drafter, task: t, max_tokens: 10, sees: [s{max(i - 1, 0)}]}}\n"
        for i in range(n)
    )


def check_text(text: str) -> int:
    module, diags = parse_text(text, "big.loom")
    assert module is not None, diags
    source, _ = load_policy(ROOT / "policies" / "default.yaml")
    assert source is not None
    pipelines, _ = compile_modules([module], source)
    return sum(len(check_pipeline(p)) for p in pipelines)


@pytest.mark.parametrize("n", SIZES)
def test_check_chain(benchmark, n: int) -> None:  # type: ignore[no-untyped-def]
    text = chain(n)
    benchmark.group = f"size {n}"
    benchmark.extra_info["steps"] = n
    benchmark(check_text, text)


@pytest.mark.parametrize("n", SIZES)
def test_yaml_baseline(benchmark, n: int) -> None:  # type: ignore[no-untyped-def]
    text = yaml_doc(n)
    benchmark.group = f"size {n}"
    benchmark.extra_info["steps"] = n
    benchmark(yaml.safe_load, text)
