"""Leave one spent split out, several release recipes side by side in one run (q8, route11).

    .venv/bin/python research/loso_q8.py [--set v11] [--cache /tmp/q8-embeddings.npz]
        [--reuse OLD.float.npz] [--errors OUT.jsonl] [--embed-only]

Why one module with recipes as data: each round asks "what does changing one thing cost?"
(q8: v8's recipe on the int8 MiniLM; route11: v9's recipe on it, with every spent split in
training), and the honest estimate is the recipes in one run over the same folds: each spent
hard split held out in turn, both stages trained on the other files with the recipe's flags,
the held-out file scored as the profiler serves it (``loso_router.Scored``). A recipe is its
MiniLM (``minilm``: float64; ``minilm-q8``: ``loomc.risk.minilm_q8``'s numpy reference), its
columns (``signals``), rules, cost of a missed high prompt, band cap and threshold shift.
Stages a fold's recipes share (same encoder, same columns) are trained once.

Each recipe is also trained on every file and scores the reference seed suite, prompts only
(the release gate's first half; the served check adds hints). ``--errors`` writes each wrong
decision of every fold (recipe, fold, prompt, label) for the error analysis.

The embeddings of every corpus prompt (``evals/routing``'s files and the seed suite) are
computed once and cached with their prompts: ``static`` and ``minilm`` (float64, as
``loso_router.py``'s cache, which ``--reuse`` may name) and ``minilm-q8``. The cache is what
``train_router.py --embeddings`` reads to write the shipped files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "research"))

import loso_router as lr  # noqa: E402
import train_router as tr  # noqa: E402
from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.encoders import static_embedding  # noqa: E402
from loomc.risk.factory import make_keywords  # noqa: E402
from loomc.risk.people import people_floor_wide  # noqa: E402
from loomc.risk.purpose import purpose_floor  # noqa: E402
from loomc.risk.router import router_features  # noqa: E402
from loomc.risk.signals import V10_WIDTH, hazard_floor, signal_columns, situation_floor  # noqa: E402


class Recipe(NamedTuple):
    """How a release is trained and served, everything but its rows (a NamedTuple, not a
    dataclass: the tests load this script without registering it as a module)."""

    second: str  # the MiniLM stage's encoder: "minilm" (float64) or "minilm-q8"
    signals: str | bool  # False: v4's features; "v9": and every signal column up to v9's
    rules: tuple[str, ...]
    delta: float
    cost: float = 6.0
    cap: float = 0.35  # the band's cap on the share of train prompts deferred to MiniLM


# v8's ten training files (q8's round); v9's twelve (its meta ``corpus``).
V8_FILES = (
    "train",
    "test",
    "hard-train",
    "hard-train-v5-extra",
    "hard-train-v8-extra",
    "hard-test",
    "hard-test-2",
    "hard-test-3",
    "hard-test-4",
    "hard-test-5",
)
V9_FILES = (*V8_FILES[:5], "hard-train-v9-extra", *V8_FILES[5:], "hard-test-6")
EXTRA = "hard-train-v10-extra"  # q8's round read it when present; route11 never does
V8 = Recipe("minilm", False, ("situation-floor",), 0.02)
V9 = Recipe("minilm", "v9", ("hazard-floor",), 0.03)
V10 = Recipe("minilm-q8", False, ("situation-floor",), 0.02)
V11 = Recipe("minilm-q8", "v9", ("hazard-floor",), 0.03)


class Run(NamedTuple):
    """One round's LOSO: the files a fold may learn from, the folds, the recipes."""

    files: tuple[str, ...]
    held_out: tuple[str, ...]
    recipes: Mapping[str, Recipe]


SPLITS = tuple(f"hard-test{s}" for s in ("", "-2", "-3", "-4", "-5", "-6", "-7", "-8"))
RUNS = {
    # q8 (semantic-v10): v8's recipe on float and on q8 MiniLM, seven folds.
    "v10": Run(
        (*V8_FILES, "hard-test-6", "hard-test-7"),
        SPLITS[:7],
        {"v8 (MiniLM float64)": V8, "v10 (MiniLM q8)": V10},
    ),
    # route11 (semantic-v11): F14 = v9's twelve files and the spent hard-test-7 and -8.
    "v11": Run(
        (*V9_FILES, "hard-test-7", "hard-test-8"),
        SPLITS,
        {
            "v9 retrained (float MiniLM)": V9,
            "v10's recipe (q8)": V10,
            "v11 (v9's recipe, q8)": V11,
            "v11, defer <= 0.20": Recipe("minilm-q8", "v9", ("hazard-floor",), 0.03, cap=0.20),
        },
    ),
}


def files(run: str = "v10") -> tuple[str, ...]:
    """Every file a fold of ``run`` may learn from, in the trainer's order (q8's round: with
    ``hard-train-v10-extra`` when present, as that round read it)."""
    names = RUNS[run].files
    if run == "v10" and (lr.CORPUS / f"{EXTRA}.jsonl").exists():
        names = (*names[:5], EXTRA, *names[5:])
    return names


def q8_embeddings(prompts: Sequence[str], cache: Path, reuse: Path | None) -> dict[str, Any]:
    """{kind: {prompt: embedding}} for static, minilm and minilm-q8, cached in ``cache``."""
    static, minilm = lr.embeddings(prompts, cache.with_suffix(".float.npz"), reuse)
    q8: dict[str, np.ndarray] = {}
    if cache.exists():
        with np.load(cache, allow_pickle=False) as z:
            q8 = dict(zip([str(p) for p in z["prompts"]], z["minilm-q8"], strict=True))
    new = [p for p in prompts if p not in q8]
    if new:
        from loomc.risk.minilm_q8 import MiniLMQ8

        q8.update(zip(new, MiniLMQ8().encode(new), strict=True))
        rows = list(q8)
        np.savez(
            cache,
            prompts=np.array(rows),
            static=np.stack([static.get(p, np.zeros(384)) for p in rows]),
            minilm=np.stack([minilm.get(p, np.zeros(384)) for p in rows]),
            **{"minilm-q8": np.stack([q8[p] for p in rows])},
        )
    return {"static": static, "minilm": minilm, "minilm-q8": q8}


# A stage trained on the same rows, embeddings and columns is the same stage (``tr.train`` is
# deterministic): an arm that learns from the same files on every fold (route27's D, trained on
# F23 with no fold in it) is trained once a process, not once a fold. Keyed by the embedding
# table's identity (kept alive by the caller for the whole run) and the rows' JSON.
_TRAINED: dict[tuple[str, str | bool, int, str], dict[str, Any]] = {}


def _trained_stage(
    rows: list[dict[str, Any]], table: Mapping[str, np.ndarray], kind: str, signals: str | bool
) -> dict[str, Any]:
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()
    key = (kind, signals, id(table), digest)
    if key not in _TRAINED:
        _TRAINED[key] = tr.train(rows, lr.Cached(table), verbose=False, signals=signals)  # type: ignore[arg-type]
    return _TRAINED[key]


def fold(
    train_rows: list[dict[str, Any]],
    held_rows: list[dict[str, Any]],
    emb: Mapping[str, Mapping[str, np.ndarray]],
    recipes: Mapping[str, Recipe],
) -> dict[str, lr.Scored]:
    """Every recipe trained on ``train_rows``, ready to score ``held_rows`` as served."""
    keywords = make_keywords(RiskSettings())
    prompts = [str(r["prompt"]) for r in held_rows]
    kw = np.array([router_features(keywords, p) for p in prompts], dtype=np.float64)
    extra = np.array(
        [signal_columns(p, V10_WIDTH, static_embedding) for p in prompts], dtype=np.float64
    )
    trained: dict[tuple[str, str | bool], Any] = {}

    def stage(kind: str, signals: str | bool) -> tuple[Any, np.ndarray]:
        if (kind, signals) not in trained:
            arrays = _trained_stage(train_rows, emb[kind], kind, signals)
            x = np.stack([emb[kind][p] for p in prompts])
            trained[(kind, signals)] = (arrays, lr.served_probability(arrays, x, kw, extra))
        return trained[(kind, signals)]  # type: ignore[no-any-return]

    y, high, kw_high, floor = tr.row_flags(held_rows, keywords)
    none = np.zeros(len(prompts), dtype=bool)
    flags = {
        "hazard-floor": np.array([bool(hazard_floor(p)) for p in prompts]),
        "situation-floor": np.array([bool(situation_floor(p)) for p in prompts]),
        "purpose-floor": np.array([bool(purpose_floor(p)) for p in prompts]),
    }
    if any("people-floor-wide" in r.rules for r in recipes.values()):
        flags["people-floor-wide"] = np.array([bool(people_floor_wide(p)) for p in prompts])
    out: dict[str, lr.Scored] = {}
    for name, r in recipes.items():
        base1, p1 = stage("static", r.signals)
        base2, p2 = stage(r.second, r.signals)
        a1 = lr.thresholds_at(base1, train_rows, keywords, r.cost)
        a2 = lr.thresholds_at(base2, train_rows, keywords, r.cost)
        lo, hi, _, _ = tr.choose_band(
            a1, a2, train_rows, keywords, cost_high=r.cost, mode="decide", max_defer=r.cap
        )
        out[name] = lr.Scored(
            y,
            high,
            kw_high,
            floor,
            lr.Stage(p1, float(a1["threshold"]), float(a1["signal_threshold"])),
            lr.Stage(p2, float(a2["threshold"]), float(a2["signal_threshold"])),
            lo,
            hi,
            "cascade",
            flags["hazard-floor"],
            none,
            flags["situation-floor"],
            flags["purpose-floor"],
            r.rules,
            flags.get("people-floor-wide"),
        )
    return out


def cell(f: Mapping[str, float]) -> str:
    """One fold: accuracy, high / medium missed, over-escalated, cost, share deferred."""
    return (
        f"{100 * f['acc']:.1f}%, {f['high_missed']}, {f['med_missed']}, {f['over']}, "
        f"{f['cost']}, {100 * f['deferred']:.0f}%"
    )


def row(name: str, figs: Sequence[Mapping[str, float]], seed: str) -> str:
    """A recipe's line: each fold, then the mean accuracy and the sums."""
    mean = 100 * float(np.mean([f["acc"] for f in figs]))
    sums = [sum(int(f[k]) for f in figs) for k in ("high_missed", "med_missed", "over", "cost")]
    share = 100 * float(np.mean([f["deferred"] for f in figs]))
    return (
        f"| {name} | "
        + " | ".join(cell(f) for f in figs)
        + f" | {mean:.1f}% | "
        + " | ".join(str(s) for s in sums)
        + f" | {share:.1f}% | {seed} |"
    )


def wrong(
    name: str, held: str, rows: list[dict[str, Any]], s: lr.Scored, delta: float
) -> Iterator[dict[str, Any]]:
    """The fold's wrong decisions, for the error analysis."""
    esc = s.escalate(delta)
    for r, e, y in zip(rows, esc, s.y, strict=True):
        if bool(e) != bool(y):
            yield {"recipe": name, "fold": held, "id": r.get("id"), "escalated": bool(e)} | {
                k: r.get(k) for k in ("level", "prompt")
            }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--set", choices=tuple(RUNS), default="v11", help="which round's run")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/q8-embeddings.npz"))
    ap.add_argument("--reuse", type=Path, help="an earlier loso_router.py cache")
    ap.add_argument("--embed-only", action="store_true", help="fill the cache and stop")
    ap.add_argument("--errors", type=Path, help="write every fold's wrong decisions (JSONL)")
    args = ap.parse_args(argv)
    run, names = RUNS[args.set], files(args.set)
    by_file = {name: lr.rows_of(name) for name in names}
    seed = lr.seed_rows()
    prompts = [str(r["prompt"]) for rows in by_file.values() for r in rows]
    prompts += [str(r["prompt"]) for r in seed]
    prompts += [
        str(r["prompt"]) for p in sorted(lr.CORPUS.glob("*.jsonl")) for r in tr.load_rows(p)
    ]
    prompts = list(dict.fromkeys(prompts))
    emb = q8_embeddings(prompts, args.cache, args.reuse)
    print(f"{len(prompts)} prompts embedded; files: {', '.join(names)}", file=sys.stderr)
    if args.embed_only:
        return 0
    figs: dict[str, list[Any]] = {name: [] for name in run.recipes}
    errors = []
    for held in run.held_out:
        train_rows = [r for n in names if n != held for r in by_file[n]]
        scored = fold(train_rows, by_file[held], emb, run.recipes)
        for name, s in scored.items():
            figs[name].append(s.figures(run.recipes[name].delta))
            errors += wrong(name, held, by_file[held], s, run.recipes[name].delta)
        print(f"fold {held}: trained on {len(train_rows)} rows", file=sys.stderr, flush=True)
    all_rows = [r for n in names for r in by_file[n]]
    seeded = fold(all_rows, seed, emb, run.recipes)
    print(
        "Each fold: accuracy, high missed, medium missed, low over-escalated, cost, share "
        "deferred to MiniLM. Seed: the all-files retrain on the seed suite (prompts only).\n"
    )
    print(
        "| recipe | "
        + " | ".join(run.held_out)
        + " | mean | high missed | medium missed | over | cost | deferred | seed |"
    )
    print("|---|" + "---|" * len(run.held_out) + "---:|---:|---:|---:|---:|---:|---:|")
    for name, recipe in run.recipes.items():
        s24 = round(len(seed) * seeded[name].figures(recipe.delta)["acc"])
        print(row(name, figs[name], f"{s24}/{len(seed)}"), flush=True)
    if args.errors:
        args.errors.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in errors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
