"""The seeded `loom-conductor-v2` corpus generator (§2.3–§2.6, §2.12).

One `random.Random(seed)` drives all three splits in order train → validation → test, and
every draw happens in the reference's order, so the default run reproduces the published
files byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loomc.conductor.outcome import clip
from loomc.conductor.plan import POLICIES, Constraints, TaskProfile, WorkerProfile, canonical_json
from loomc.conductor.prompt_format import build_prompt
from loomc.conductor.search import select
from loomc_research.corpus_io import iter_lines
from loomc_research.v2.families import (
    ANCHORS,
    COUNTS,
    PROVIDERS,
    TASK_FIELDS,
    TOPICS,
    WORKER_IDS,
    Anchor,
    Family,
    category_strength,
    families_for,
)

SCHEMA_VERSION = "loom-conductor-v2"
SOURCE = "synthetic-empirical-v1"
DEFAULT_SEED = 20260716
SPLITS: tuple[tuple[str, int], ...] = (("train", 9000), ("validation", 900), ("test", 1200))


class GenerationError(RuntimeError):
    """The generator cannot meet its quotas (e.g. anchors that make a policy impossible)."""


def uniform(rng: random.Random, bounds: tuple[float, float]) -> float:
    a, b = bounds
    return a + (b - a) * rng.random()


def sample_task(rng: random.Random, family: Family, index: int) -> TaskProfile:
    topic = rng.choice(TOPICS)
    count = rng.choice(COUNTS)
    template = rng.choice(family.templates)
    summary = template.replace("{topic}", topic).replace("{count}", str(count))
    values = {name: round(uniform(rng, getattr(family, name)), 4) for name in TASK_FIELDS}
    return TaskProfile(
        family=family.name,
        category=family.category,
        summary=summary,
        input_tokens=rng.randrange(120, 8001, 40),
        request_id=f"synthetic-{family.name}-{index:06d}",
        **values,
    )


def sample_workers(
    rng: random.Random, category: str, anchors: Sequence[Anchor]
) -> list[WorkerProfile]:
    shuffled = list(anchors)
    rng.shuffle(shuffled)
    providers = list(PROVIDERS)
    rng.shuffle(providers)
    wanted = category_strength(category)
    workers = []
    for worker_id, provider, anchor in zip(WORKER_IDS, providers, shuffled, strict=True):
        fit = 0.04 if wanted in anchor.strengths else -0.025
        quality = clip(anchor.quality + fit + uniform(rng, (-0.065, 0.065)), 0.35, 0.995)
        pass_rate = clip(anchor.pass_rate + fit + uniform(rng, (-0.09, 0.08)), 0.2, 0.995)
        credits = max(0.25, anchor.credits * uniform(rng, (0.78, 1.22)))
        latency = max(4000, int(anchor.latency_ms * uniform(rng, (0.68, 1.28))))
        strengths = list(anchor.strengths)
        if rng.random() < 0.32 and wanted not in strengths:
            strengths.append(wanted)
        workers.append(
            WorkerProfile(
                id=worker_id,
                provider_group=provider,
                quality=round(quality, 4),
                pass_rate=round(pass_rate, 4),
                credits_per_call=round(credits, 3),
                p95_latency_ms=latency,
                strengths=tuple(sorted(set(strengths))),
            )
        )
    return workers


def sample_constraints(
    rng: random.Random, workers: Sequence[WorkerProfile], desired: str
) -> Constraints:
    credits = [w.credits_per_call for w in workers]
    latencies = [w.p95_latency_ms for w in workers]
    c_up, l_up = sorted(credits), sorted(latencies)
    if desired == "lean":
        max_calls = rng.choices((1, 2, 3), weights=(0.72, 0.22, 0.06))[0]
        cheapest, fastest = min(credits), min(latencies)
        credit = uniform(rng, (1.05 * cheapest, max(2.4 * cheapest, 4.0)))
        latency = uniform(rng, (1.05 * fastest, 2.0 * fastest))
        minq = uniform(rng, (0.48, 0.78))
    elif desired == "balanced":
        max_calls = rng.choices((2, 3), weights=(0.72, 0.28))[0]
        credit = uniform(rng, (1.05 * (c_up[0] + c_up[1]), 1.25 * sum(c_up)))
        latency = uniform(rng, (1.05 * (l_up[0] + l_up[1]), 1.55 * sum(l_up)))
        minq = uniform(rng, (0.68, 0.90))
    else:
        max_calls = 3
        credit = sum(credits) * uniform(rng, (1.02, 1.40))
        latency = sum(latencies) * uniform(rng, (1.02, 1.45))
        minq = uniform(rng, (0.78, 0.96))
    return Constraints(
        max_calls=max_calls,
        max_credits=round(credit, 3),
        max_latency_ms=int(latency),
        minimum_quality=round(minq, 4),
    )


def make_row(
    split: str,
    task: TaskProfile,
    constraints: Constraints,
    workers: Sequence[WorkerProfile],
    label: dict[str, Any],
    oracle: dict[str, Any],
    *,
    schema_version: str = SCHEMA_VERSION,
    source: str = SOURCE,
) -> dict[str, Any]:
    return {
        "constraints": constraints.to_dict(),
        "family": task.family,
        "id": task.request_id,
        "label": label,
        "oracle": oracle,
        "prompt": build_prompt(task, constraints, workers),
        "schema_version": schema_version,
        "source": source,
        "split": split,
        "target": canonical_json(label),
        "task": task.to_dict(),
        "workers": [w.to_dict() for w in workers],
    }


def quotas(size: int) -> dict[str, int]:
    base, extra = divmod(size, len(POLICIES))
    return {p: base + (1 if i < extra else 0) for i, p in enumerate(POLICIES)}


def generate_split(
    rng: random.Random, split: str, size: int, anchors: Sequence[Anchor]
) -> list[dict[str, Any]]:
    """Rejection-sample `size` rows with balanced policy labels, then shuffle them."""
    families = families_for(split)
    remaining = quotas(size)
    rows: list[dict[str, Any]] = []
    attempt = 0
    while any(remaining.values()):
        attempt += 1
        if attempt > 500 * size:
            raise GenerationError(f"{split}: quotas {remaining} unmet after {attempt - 1} attempts")
        desired = rng.choice([p for p in POLICIES if remaining[p] > 0])
        family = families[(attempt - 1) % len(families)]
        task = sample_task(rng, family, attempt)
        workers = sample_workers(rng, family.category, anchors)
        constraints = sample_constraints(rng, workers, desired)
        try:
            chosen = select(task, constraints, workers)
        except ValueError as exc:
            raise GenerationError(f"{split}: attempt {attempt}: {exc}") from None
        if chosen.label["policy"] == desired and remaining[desired] > 0:
            remaining[desired] -= 1
            rows.append(make_row(split, task, constraints, workers, chosen.label, chosen.oracle))
    rng.shuffle(rows)
    return rows


@dataclass(frozen=True)
class Corpus:
    seed: int
    anchors: tuple[Anchor, ...]
    splits: dict[str, list[dict[str, Any]]]


def generate(
    seed: int = DEFAULT_SEED,
    anchors: Sequence[Anchor] = ANCHORS,
    sizes: Sequence[tuple[str, int]] = SPLITS,
) -> Corpus:
    if len(anchors) != len(WORKER_IDS):
        raise GenerationError(f"need exactly {len(WORKER_IDS)} anchors, got {len(anchors)}")
    rng = random.Random(seed)
    splits = {name: generate_split(rng, name, size, anchors) for name, size in sizes}
    return Corpus(seed, tuple(anchors), splits)


def _split_entry(path: str, text: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "families": dict(sorted(Counter(r["family"] for r in rows).items())),
        "path": path,
        "policies": dict(sorted(Counter(r["label"]["policy"] for r in rows).items())),
        "rows": len(rows),
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }


def _overlap(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> list[str]:
    return sorted({r["family"] for r in a} & {r["family"] for r in b})


def build_manifest(corpus: Corpus, texts: dict[str, str]) -> dict[str, Any]:
    s = corpus.splits
    files = {name: _split_entry(f"{name}.jsonl", texts[name], s[name]) for name in s}
    leakage = {}
    for left, right in (("train", "validation"), ("train", "test"), ("validation", "test")):
        if left in s and right in s:
            leakage[f"{left}_{right}_overlap"] = _overlap(s[left], s[right])
    return {
        "created_by": "src/generate_dataset.py",
        "empirical_anchor": {
            "anchors": [a.to_manifest() for a in corpus.anchors],
            "case_count": 6,
            "models_anonymized": True,
            "receipt": "dot-loom/docs/benchmarks/cross-model-baselines-v1.json",
        },
        "family_leakage": leakage,
        "files": files,
        "label_method": {
            "finalizer_model": "evidence synthesis blended with finalizer capability",
            "hard_constraints": ["max_calls", "max_credits", "max_latency_ms"],
            "name": "exhaustive constrained plan search",
            "quality_target": "minimum_quality",
            "review_model": "reliability-weighted correction with regression risk",
            "role_fitness": [
                "review reliability",
                "finalizer output quality",
                "capability strengths",
            ],
        },
        "license": "Apache-2.0 compatible synthetic corpus",
        "no_user_prompts": True,
        "schema_version": SCHEMA_VERSION,
        "seed": corpus.seed,
        "split_method": "disjoint task families plus balanced policy labels",
    }


def write_corpus(
    out_dir: str | Path, corpus: Corpus, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Write `<split>.jsonl` files and `manifest.json`; returns the manifest."""
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    texts = {name: "".join(iter_lines(rows)) for name, rows in corpus.splits.items()}
    for name, text in texts.items():
        (root / f"{name}.jsonl").write_bytes(text.encode("utf-8"))
    manifest = build_manifest(corpus, texts)
    manifest.update(extra or {})
    body = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    (root / "manifest.json").write_bytes(body.encode("utf-8"))
    return manifest
