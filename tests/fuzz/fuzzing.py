"""The fuzzing harness: seeds, mutation operators and the bounds every target must keep.

Seeds are the shipped files (pipelines/, policies/, evals/, the compiler fixtures and, where
present, the reference seed suites); Hypothesis picks a seed and a short chain of mutations
(truncation, duplication, deletion, splicing, deep nesting, huge numbers, alias bombs,
unclosed quotes, other encodings, control characters). The bounds, checked by `assert_bounds`
and the targets in test_fuzz.py: no exception escapes, no input under 64 KB takes longer than
2 s (CPU time of the process: what the input costs, not how busy the machine is), and every
diagnostic names file:line:col.

Profiles (environment ``HYPOTHESIS_PROFILE``): ``ci`` (the default) is short and derandomized,
so the suite is deterministic; ``long`` is for runs by hand (``scripts/fuzz``), random and as
many examples as ``FUZZ_EXAMPLES`` (default 20,000) per target.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("LOOMC_SHARED", "/work/shared"))
MAX_INPUT = 64 * 1024 - 1
TIME_LIMIT_S = 2.0

settings.register_profile(
    "ci",
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "20000")),
    derandomize=False,
    deadline=None,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in ("ci", "long"):
    PROFILE = "ci"
FUZZ = settings.get_profile(PROFILE)


# --- seeds ----------------------------------------------------------------------------------


def _read(paths: list[Path], max_lines: int | None = None) -> list[bytes]:
    out = []
    for path in sorted(paths):
        raw = path.read_bytes()
        if max_lines is not None:
            raw = b"\n".join(raw.split(b"\n")[:max_lines]) + b"\n"
        out.append(raw[:MAX_INPUT])
    return out


FIXTURES = ROOT / "tests" / "compiler" / "fixtures"
LOOM_SEEDS = _read([*ROOT.glob("pipelines/*.loom"), *FIXTURES.rglob("*.loom")])
POLICY_SEEDS = _read([*ROOT.glob("policies/*.yaml"), *FIXTURES.rglob("*.yaml")])
DATASET_SEEDS = _read(
    [
        *ROOT.glob("evals/*.jsonl"),
        *ROOT.glob("evals/*/*.jsonl"),
        *(SHARED / "reference" / "seed-evals").glob("*.jsonl"),
    ],
    max_lines=30,
)
REPLY_SEEDS = [
    b'{"score": 88, "passed": true, "reason": "correct"}',
    b'Sure!\n```json\n{"score": "7/10", "passed": "yes"}\n```',
    b'plan: {"policy": "lean", "writer": "drafter", "access": {"writer": []}} done',
    b"I would rather not grade this.",
]


# --- mutation operators ---------------------------------------------------------------------

NESTERS = [b"(", b"not ", b"[", b"{", b"{a: ", b"- ", b'{"a": ', b"((not ", b"  "]
NUMBERS = [
    b"9" * 5_000,
    b"1" + b"0" * 16,
    b"1e999999999",
    b"-1",
    b"0.0000000000000000000001",
    b"NaN",
    b"Infinity",
    b"1_000_000_000_000_000_000",
    b"$" + b"9" * 400,
]
CONTROLS = [
    b"\x00",
    b"\x1b]52;c;Ym9vbQ==\x07",
    b"\x1b[2J",
    b"\r",
    b"\x7f",
    b"\xc2\x9b",
    b"\xe2\x80\xae",
    b"\\ud800",
    b"\\u0000",
    b"\xff",
    b"\xed\xa0\x80",
    b"\t",
    b"\x0c",
]
QUOTES = [b'"""', b'"', b"'", b"`", b"#", b"//", b"\\", b"{", b"}", b"&a", b"*a", b"<<: *a"]


def _laughs(levels: int) -> bytes:
    block = b'lol0: &l0 ["lol"]\n'
    for i in range(1, levels):
        refs = b", ".join([b"*l%d" % (i - 1)] * 9)
        block += b"lol%d: &l%d [%s]\n" % (i, i, refs)
    return block


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed after one to four mutations, at most 64 KB."""
    data = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        n = len(data)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, n))
        op = draw(
            st.sampled_from(
                [
                    "truncate",
                    "duplicate",
                    "delete",
                    "splice",
                    "nest",
                    "number",
                    "laughs",
                    "quote",
                    "control",
                    "encoding",
                    "lines",
                ]
            )
        )
        if op == "truncate":
            data = data[:i]
        elif op == "duplicate":
            data = data[:j] + data[i:j] * draw(st.integers(1, 50)) + data[j:]
        elif op == "delete":
            data = data[:i] + data[j:]
        elif op == "splice":
            other = draw(st.sampled_from(seeds))
            k = draw(st.integers(0, len(other)))
            data = data[:i] + other[k:] + data[j:]
        elif op == "nest":
            unit = draw(st.sampled_from(NESTERS))
            depth = draw(st.sampled_from([10, 63, 64, 65, 100, 300, 1_000, 5_000]))
            closer = {
                b"(": b")",
                b"[": b"]",
                b"{": b"}",
                b"{a: ": b"}",
                b'{"a": ': b"}",
                b"((not ": b"))",
            }.get(unit, b"")
            data = data[:i] + unit * depth + b"x" + closer * depth + data[i:]
        elif op == "number":
            data = data[:i] + draw(st.sampled_from(NUMBERS)) + data[j:]
        elif op == "laughs":
            data = data + b"\n" + _laughs(draw(st.integers(2, 10)))
        elif op == "quote":
            data = data[:i] + draw(st.sampled_from(QUOTES)) + data[i:]
        elif op == "control":
            data = data[:i] + draw(st.sampled_from(CONTROLS)) + data[i:]
        elif op == "encoding":
            text = data.decode("utf-8", "replace")
            codec = draw(st.sampled_from(["utf-16", "utf-16-le", "latin-1", "cp1252", "bom"]))
            bom = b"\xef\xbb\xbf"
            data = bom + data if codec == "bom" else text.encode(codec, "replace")
        elif op == "lines":
            lines = data.split(b"\n")
            if len(lines) > 1:
                a = draw(st.integers(0, len(lines) - 1))
                b = draw(st.integers(0, len(lines) - 1))
                lines[a], lines[b] = lines[b], lines[a]
            data = b"\n".join(lines)
        data = data[:MAX_INPUT]
    return data


# --- bounds ---------------------------------------------------------------------------------


@contextmanager
def within_time_limit(what: str, data: bytes) -> Iterator[None]:
    """The body must finish in ``TIME_LIMIT_S`` CPU seconds for an input under 64 KB."""
    assert len(data) <= MAX_INPUT
    start = time.process_time()
    yield
    elapsed = time.process_time() - start
    assert elapsed < TIME_LIMIT_S, f"{what}: {elapsed:.2f}s on {len(data)} bytes"


def assert_placed(diagnostics: list[dict[str, object]], files: set[str]) -> None:
    """Every diagnostic names one of ``files`` (or the project) and a line and column >= 1."""
    for d in diagnostics:
        assert isinstance(d["file"], str) and d["file"], d
        assert isinstance(d["line"], int) and d["line"] >= 1, d
        assert isinstance(d["column"], int) and d["column"] >= 1, d
        assert any(d["file"].startswith(f) or f.startswith(d["file"]) for f in files), d


def run_target(target: Callable[[bytes], None], data: bytes, what: str) -> None:
    with within_time_limit(what, data):
        target(data)
