"""A plain-q8 arm beside a LoRA-q8 arm of one recipe, leaving spent splits out (lora12, lora13).

    .venv/bin/python research/loso_lora.py --deltas DIR [--set v12|lora12|...] [--cache DIR]
        [--only plain|final|<held-out>] [--arm PREFIX] [--folds HELD ...]

Why: semantic-v12 changes one thing against a recipe, the encoder of the MiniLM stage (the
packaged MiniLM with a LoRA delta fine-tuned on the corpus, merged and quantised by
``loomc.risk.lora``). Each round is data (``ROUNDS``): the files a fold may learn from, the
held-out splits, and the recipe both arms share (``loso_q8.Recipe``). Its rule was written
before it ran (evals/routing/README.md): each held-out split in turn; a fold's training = the
round's files minus it; the fold's delta (``DIR/fold-<held>.npz``, made by
``research/finetune_minilm.py`` on exactly those files; the script refuses one trained on
others) fine-tuned on nothing else; the second stage on plain q8 embeddings or on the fold's
LoRA-q8 embeddings, the static stage shared, scored as served by ``loso_q8.fold``.

- ``lora12``: v10's recipe, F14 (v9's twelve files + hard-test-7, -8), folds hard-test-6 ... -8.
- ``v12`` (lora13): v11's recipe (its 0.20 band cap), F15 (F14 + hard-test-9), folds
  hard-test-7 ... -9; ``DIR/fold-final.npz`` (trained on all of F15), when present, gives each
  arm's seed-suite column (prompts only) and the ``--train-cache`` for ``train_router.py``.
- ``route12``: the same recipe and folds; A = plain q8 on F15 (lora13's plain arm, rerun as a
  check), B = plain q8 and C = LoRA q8 on F16 (F15 + ``hard-train-v12-extra``), and B and C
  with the band capped at 0.10 (the speed arm). Arms with other files than the round's
  (``Round.more``) are trained in their own pass over the same folds.
- ``route13``: v12's recipe (LoRA q8) alone, no plain arm, folds hard-test-7 ... -10; B on F17
  (F16 + the spent hard-test-10; its deltas in ``DIR/B``), A on F16 (route12's arm C; its
  deltas in ``DIR/A``: ``Arm.deltas`` names a LoRA arm's own folder when it learns from other
  files than the round's). Both arms' fold hard-test-10 is F16, the same delta.
- ``route14``: the same two arms with every spent split, folds hard-test-7 ... -13: B on F20
  (F16 + hard-test-10 ... -13; ``DIR/B``), A on F16 (``DIR/A``: route13's A deltas for -7 ... -10;
  for -11, -12, -13, trained on all of F16, v12's shipped delta).
- ``route15``: the same recipe, folds hard-test-7 ... -14; C on F22 (F20 + hard-test-14 +
  ``hard-train-v14-extra``; ``DIR/C``), A on F16 (``DIR/A``: route14's A deltas, v12's shipped
  delta for -14), B on F20 for information (``DIR/B``: route14's B deltas, its final for -14).
- ``route16``: one arm, D = the same recipe on F23 (F22 + ``hard-train-v16-extra``; ``DIR/D``),
  folds hard-test-7 ... -14; no A or B arm (their deltas are gone: A's and C's figures are
  route15's table's). Its table adds each fold's model's seed-suite score (prompts only;
  reported, not a condition of its rule; the same stages score the fold's split and the seed
  suite in one ``loso_q8.fold`` call, then ``split``), and ``--errors`` lists the seed prompts
  each fold's model and the final one get wrong (fold ``<held>:seed``, ``final:seed``).
- ``route17``: E = the same recipe on F25 (F23 + the spent hard-test-15 and -16; ``DIR/E``),
  folds hard-test-7 ... -16 (ten), each fold's model's seed column as route16; D = the same on
  F23 (``DIR/D``: route16's D deltas for -7 ... -14; for -15 and -16, whose fold learns all of
  F23, v13's shipped delta), rerun as the baseline; and E with the band capped at 0.15 (E's
  own deltas: an arm on the round's files with no ``deltas`` of its own shares the round's
  folder, and the same ``loso_q8.fold`` call scores it beside E; reported only).
- ``route27``: the heads alone. G = v12's recipe served with v15's rules (``hazard-floor``,
  ``people-floor-wide``), its two heads trained on F39 (F23 + the spent hard-test-15 ... -26 and
  the four targeted sets) minus the fold, on v13's shipped delta for every fold
  (``Round.delta_files``: the delta was tuned on F23, which holds no fold); D = v15 as shipped
  (the heads on F23, the same delta). Sixteen folds, the spent files; each fold's seed column.
- ``route28``: H = G with data28's rows for over-escalation in every fold's training (F40 = F39 +
  ``hard-train-v28-extra``, never a fold), D scored again beside it (G's cells are route27's);
  the same folds and delta.
- ``route29``: the same two heads on F41 (F40 + the spent ``lookalike-code-test``), seventeen
  folds (route28's and lookalike-code-test): H = v18's recipe, I = H with the context block
  (signals ``v10``: ``loomc.risk.context``), v13's delta for every fold.
- ``route30``: J = I (v19's recipe) with ``hard-train-v30-extra`` (the same code under fixture
  and production prose) in every fold's training (F42, never a fold), route29's folds; I is
  not rerun (its cells are route29's).
- ``route32``: K = I (v19's recipe) with ``hard-train-v32-extra`` (pairs of code around a safety
  function, in a real system and in a simulator, class, test or game) in every fold's training
  (F43, never a fold), route29's folds; I is not rerun.
- ``v22``: no folds, only ``--only final --train-cache``: the embeddings of F41's rows under
  the delta ``DIR/L/fold-final.npz``, checked as fine-tuned on F44 (F41 and every file spent
  since), for semantic-v22's heads (round 33's rule).
- ``v23``: the same for semantic-v23, the delta ``DIR/M/fold-final.npz`` checked as fine-tuned
  on F45 (F44 and every file spent in rounds 33-36; the plan before round 37's rule).
Every arm's embeddings are the numpy reference's, cached by the delta's sha256 (one delta that
two arms share is encoded once).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "research"))

import loso_q8 as lq  # noqa: E402
import loso_router as lr  # noqa: E402

F14 = (*lq.V9_FILES, "hard-test-7", "hard-test-8")  # route11's F14: v9's twelve, then -7, -8
F15 = (*F14, "hard-test-9")  # v11's fourteen (its meta corpus) + the spent hard-test-9
HELD_OUT = ("hard-test-6", "hard-test-7", "hard-test-8")  # lora12's folds
F16 = (*F15, "hard-train-v12-extra")  # route12: F15 + data12's rows for code-purpose hazards
F17 = (*F16, "hard-test-10")  # route13: F16 + the spent hard-test-10
F20 = (*F17, "hard-test-11", "hard-test-12", "hard-test-13")  # route14: F16 + every spent split
F22 = (*F20, "hard-test-14", "hard-train-v14-extra")  # route15: F20 + -14 + data14's rows
F23 = (*F22, "hard-train-v16-extra")  # route16: F22 + data16's plain everyday rows
F25 = (*F23, "hard-test-15", "hard-test-16")  # route17: F23 (v13's) + the two spent splits
# route27: every file spent since v13 was trained, the splits then the targeted sets
SPENT_27 = (
    *(f"hard-test-{i}" for i in range(15, 27)),
    "people-code-test",
    "people-code-test-2",
    "people-code-test-3",
    "purpose-code-test",
)
F39 = (*F23, *SPENT_27)
F40 = (*F39, "hard-train-v28-extra")  # route28: F39 + data28's rows for over-escalation
F41 = (*F40, "lookalike-code-test")  # route29: F40 + the spent targeted set of round 28
F42 = (*F41, "hard-train-v30-extra")  # route30: F41 + data30's contrast pairs
F43 = (*F41, "hard-train-v32-extra")  # route32: F41 + data32's safety-function pairs
# v22's delta: F41 + every file spent since (round 33's rule)
F44 = (
    *F41,
    *(f"hard-test-{i}" for i in range(27, 33)),
    "lookalike-code-test-2",
    "lookalike-code-test-3",
    "safety-code-test",
    "hard-train-v30-extra",
    "hard-train-v32-extra",
)
# v23's delta: F44 + every file spent in rounds 33-36 (the plan before round 37's rule)
F45 = (
    *F44,
    *(f"hard-test-{i}" for i in range(33, 42)),
    *(f"safety-code-test-{i}" for i in range(2, 7)),
)


class Arm(NamedTuple):
    """One more arm of a round: its name, the files a fold of it learns from, its recipe."""

    name: str
    files: tuple[str, ...]
    recipe: lq.Recipe
    deltas: str = ""  # a LoRA arm's fold deltas: this folder under --deltas ("": the round's)


class Round(NamedTuple):
    """One LoRA round: what a fold may learn from (and the LoRA deltas were tuned on), its
    folds, the recipe both main arms share, and any more arms."""

    files: tuple[str, ...]
    held_out: tuple[str, ...]
    recipe: lq.Recipe  # the plain arm; the LoRA arm is it with second = "minilm-q8-lora"
    arms: tuple[str | None, str]  # the table's names: plain (None: no plain arm), LoRA
    more: tuple[Arm, ...] = ()  # a LoRA arm here learns from ``files`` unless it has ``deltas``
    deltas: str = ""  # the main LoRA arm's fold deltas: this folder under --deltas
    fold_seeds: bool = False  # each fold's model also scores the seed suite (route16 on)
    # The files every fold's delta of every LoRA arm was fine-tuned on, when not the fold's own
    # (route27 on: v13's delta for every fold; the heads still learn from their files minus it).
    delta_files: tuple[str, ...] = ()


V11_SHIPPED = lq.V11._replace(cap=0.20)  # v11 as shipped: the band's cap 0.20
V12_SHIPPED = V11_SHIPPED._replace(second="minilm-q8-lora")  # v12: the same on LoRA q8
V15_SHIPPED = V12_SHIPPED._replace(rules=("hazard-floor", "people-floor-wide"))  # v13 + v15's
V19_SHIPPED = V15_SHIPPED._replace(signals="v10")  # v18's recipe with the context block
# route27: the two heads on F39 minus the fold, v13's delta (tuned on F23) for every fold
ROUTE27 = Round(
    F39,
    SPENT_27,
    V15_SHIPPED,
    (None, "G: heads on F39, v13's delta"),
    (Arm("D: v15 as shipped (heads and delta on F23)", F23, V15_SHIPPED, "D"),),
    "D",
    fold_seeds=True,
    delta_files=F23,
)
FOLDS_13 = ("hard-test-7", "hard-test-8", "hard-test-9", "hard-test-10")
FOLDS_14 = (*FOLDS_13, "hard-test-11", "hard-test-12", "hard-test-13")
FOLDS_15 = (*FOLDS_14, "hard-test-14")
FOLDS_17 = (*FOLDS_15, "hard-test-15", "hard-test-16")
ROUNDS = {
    "lora12": Round(
        F14, HELD_OUT, lq.V10, ("v10's recipe, plain q8", "v12: LoRA q8 (the fold's delta)")
    ),
    "v12": Round(
        F15,
        ("hard-test-7", "hard-test-8", "hard-test-9"),
        V11_SHIPPED,
        ("v11's recipe, plain q8", "v12: v11's recipe, LoRA q8 (the fold's delta)"),
    ),
    "route12": Round(
        F16,
        ("hard-test-7", "hard-test-8", "hard-test-9"),
        V11_SHIPPED,
        ("B: plain q8, F16", "C: LoRA q8 (the fold's delta), F16"),
        (
            Arm("A: plain q8, F15 (lora13's plain arm)", F15, V11_SHIPPED),
            Arm("B, band cap 0.10", F16, V11_SHIPPED._replace(cap=0.10)),
            Arm("C, band cap 0.10", F16, V11_SHIPPED._replace(cap=0.10, second="minilm-q8-lora")),
        ),
    ),
    "route13": Round(
        F17,
        FOLDS_13,
        V11_SHIPPED,
        (None, "B: v12's recipe, F17"),
        (Arm("A: v12's recipe, F16 (route12's arm C)", F16, V12_SHIPPED, "A"),),
        "B",
    ),
    "route14": Round(
        F20,
        FOLDS_14,
        V11_SHIPPED,
        (None, "B: v12's recipe, F20"),
        (Arm("A: v12's recipe, F16 (v12)", F16, V12_SHIPPED, "A"),),
        "B",
    ),
    "route15": Round(
        F22,
        FOLDS_15,
        V11_SHIPPED,
        (None, "C: v12's recipe, F22"),
        (
            Arm("A: v12's recipe, F16 (v12)", F16, V12_SHIPPED, "A"),
            Arm("B: v12's recipe, F20 (route14's B)", F20, V12_SHIPPED, "B"),
        ),
        "C",
    ),
    "route16": Round(
        F23, FOLDS_15, V11_SHIPPED, (None, "D: v12's recipe, F23"), (), "D", fold_seeds=True
    ),
    "route17": Round(
        F25,
        FOLDS_17,
        V11_SHIPPED,
        (None, "E: v12's recipe, F25"),
        (
            Arm("D: v12's recipe, F23 (v13)", F23, V12_SHIPPED, "D"),
            Arm("E, band cap 0.15", F25, V12_SHIPPED._replace(cap=0.15)),  # E's deltas
        ),
        "E",
        fold_seeds=True,
    ),
    "route27": ROUTE27,
    # route27 with one more training file for every fold (G's cells are route27's: not rerun)
    "route28": ROUTE27._replace(files=F40, arms=(None, "H: heads on F40, v13's delta")),
    # the same heads on F41, with and without the context block (semantic-v19's candidate)
    "route29": ROUTE27._replace(
        files=F41,
        held_out=(*SPENT_27, "lookalike-code-test"),
        arms=(None, "H: v18's recipe on F41"),
        more=(Arm("I: H with the context block", F41, V19_SHIPPED),),
    ),
    # v19's recipe with one more training file for every fold (I's cells are route29's)
    "route30": ROUTE27._replace(
        files=F42,
        held_out=(*SPENT_27, "lookalike-code-test"),
        recipe=V19_SHIPPED,
        arms=(None, "J: v19's recipe on F42"),
    ),
    # v19's recipe with contrast pairs of code around a safety function (I's cells are route29's)
    "route32": ROUTE27._replace(
        files=F43,
        held_out=(*SPENT_27, "lookalike-code-test"),
        recipe=V19_SHIPPED,
        arms=(None, "K: v19's recipe on F43"),
    ),
    # semantic-v22 (round 33): no folds; v19's heads on F41 over a delta tuned on F44, whose
    # embeddings ``--only final --train-cache`` writes for train_router.py
    "v22": ROUTE27._replace(
        files=F41,
        held_out=(),
        recipe=V19_SHIPPED,
        arms=(None, "L: v19's recipe on F41, a delta tuned on F44"),
        more=(),
        deltas="L",
        delta_files=F44,
    ),
    # semantic-v23: the same over a delta tuned on F45
    "v23": ROUTE27._replace(
        files=F41,
        held_out=(),
        recipe=V19_SHIPPED,
        arms=(None, "M: v19's recipe on F41, a delta tuned on F45"),
        more=(),
        deltas="M",
        delta_files=F45,
    ),
}


def cached(
    path: Path, prompts: Sequence[str], encode: Callable[[list[str]], np.ndarray]
) -> dict[str, np.ndarray]:
    """{prompt: embedding} for ``prompts``: those ``path`` holds read from it, the rest encoded
    and the file rewritten with both. Exact, not approximate: the encoders embed one unpadded
    prompt at a time (``MiniLM.encode``), so a prompt's vector does not depend on the others
    (a fold's delta met again with a split more is encoded only for the new prompts)."""
    have: dict[str, np.ndarray] = {}
    if path.exists():
        with np.load(path, allow_pickle=False) as z:
            have = dict(zip((str(p) for p in z["prompts"]), z["emb"], strict=True))
    missing = [p for p in dict.fromkeys(prompts) if p not in have]
    if missing:
        have.update(zip(missing, encode(missing), strict=True))
        path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(have)
        np.savez(path, prompts=np.array(keys), emb=np.stack([have[k] for k in keys]))
    return {p: have[p] for p in prompts}


def checked_delta(path: Path, trained_on: Sequence[str]) -> Path:
    """``path``, after its meta says it was fine-tuned on exactly ``trained_on`` (in order) as
    the files are now (their sha256: a delta tuned on an earlier batch of a file being written
    is refused, not silently scored)."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
    want = [f"{n}.jsonl" for n in trained_on]
    if meta["training_files"] != want:
        raise SystemExit(f"{path} was trained on {meta['training_files']}, not {want}")
    now = [hashlib.sha256((lr.CORPUS / n).read_bytes()).hexdigest() for n in want]
    if meta.get("training_sha256") != now:
        raise SystemExit(f"{path} was trained on other versions of {want}")
    return path


def lora_embeddings(delta: Path, cache: Path, prompts: Sequence[str]) -> dict[str, np.ndarray]:
    """The merged LoRA-q8 MiniLM's embeddings of ``prompts``, cached in folder ``cache`` under
    the delta's sha256 (two arms' identical deltas are encoded once)."""
    from loomc.risk.lora import MiniLMQ8Lora

    digest = hashlib.sha256(delta.read_bytes()).hexdigest()[:16]
    return cached(cache / f"emb-lora-{digest}.npz", prompts, MiniLMQ8Lora(delta).encode)


def arms(rnd: Round) -> dict[str, lq.Recipe]:
    """The two main arms' recipes (they learn from ``rnd.files``)."""
    plain, tuned = rnd.arms
    out = {plain: rnd.recipe} if plain is not None else {}
    return out | {tuned: rnd.recipe._replace(second="minilm-q8-lora")}


def passes(rnd: Round) -> list[tuple[tuple[str, ...], dict[str, lq.Recipe]]]:
    """Every arm, grouped by the files it learns from (one ``loso_q8.fold`` call a group, so
    stages the group's arms share are trained once), the round's own files first; the table
    lists A-style extra arms in this order too."""
    groups: dict[tuple[str, ...], dict[str, lq.Recipe]] = {rnd.files: arms(rnd)}
    for a in rnd.more:
        if a.recipe.second == "minilm-q8-lora" and (a.files != rnd.files) == (not a.deltas):
            raise SystemExit(f"{a.name}: a LoRA arm must learn from the deltas' files")
        groups.setdefault(a.files, {})[a.name] = a.recipe
    for files in groups:
        delta_folder(rnd, files)  # one folder of deltas a pass
    return list(groups.items())


def delta_folder(rnd: Round, files: tuple[str, ...]) -> str:
    """The folder (under --deltas) of the LoRA deltas the arms learning from ``files`` use."""
    if files == rnd.files:
        return rnd.deltas
    named = {a.deltas for a in rnd.more if a.files == files and a.recipe.second.endswith("lora")}
    if len(named) > 1:
        raise SystemExit(f"the arms on {files} name {len(named)} folders of deltas")
    return named.pop() if named else ""


def split(s: lr.Scored, n: int) -> tuple[lr.Scored, lr.Scored]:
    """A fold's scores of its held-out rows + the seed suite, cut at row ``n``: every per-row
    array is cut, the trained thresholds and band are the fold's (a row's decision depends on
    its own prompt and the fold's training rows only, so each part is as if scored alone)."""
    head: dict[str, Any] = {}
    tail: dict[str, Any] = {}
    for f in dataclasses.fields(s):
        v = getattr(s, f.name)
        if isinstance(v, lr.Stage):
            head[f.name], tail[f.name] = (lr.Stage(p, v.t, v.ts) for p in (v.prob[:n], v.prob[n:]))
        elif isinstance(v, np.ndarray):
            head[f.name], tail[f.name] = v[:n], v[n:]
        else:
            head[f.name] = tail[f.name] = v
    return lr.Scored(**head), lr.Scored(**tail)


def fold_seed_cells(seeds: Sequence[str]) -> str:
    """Each fold's model's seed-suite score, in fold order (route16's table column)."""
    return " / ".join(s.split("/")[0] for s in seeds) + f" (of {seeds[0].split('/')[1]})"


def filter_arms(group: dict[str, lq.Recipe], prefix: str) -> dict[str, lq.Recipe]:
    return {n: r for n, r in group.items() if n.startswith(prefix)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--set", choices=tuple(ROUNDS), default="v12", help="which round's run")
    ap.add_argument("--deltas", type=Path, required=True, help="folder of fold-<held>.npz")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/lora13"))
    ap.add_argument(
        "--only", help="embed this fold's deltas (final, a held-out split, or FOLDER/that) and stop"
    )
    ap.add_argument("--train-cache", type=Path, help="write train_router's --embeddings here")
    ap.add_argument("--errors", type=Path, help="write every fold's wrong decisions (JSONL)")
    ap.add_argument(
        "--seed-only", action="store_true", help="no folds: the final delta's seed column alone"
    )
    ap.add_argument("--plain", action="store_true", help="the plain arms only: no delta read")
    ap.add_argument("--arm", help="score only the arms whose name starts with this (e.g. 'A:')")
    ap.add_argument("--folds", nargs="+", help="score only these held-out splits (and the seed)")
    args = ap.parse_args(argv)
    rnd = ROUNDS[args.set]
    if args.folds:  # a fold's figures do not depend on the others': score them as deltas land
        if not set(args.folds) <= set(rnd.held_out):
            raise SystemExit(f"--folds: {args.set}'s folds are {', '.join(rnd.held_out)}")
        rnd = rnd._replace(held_out=tuple(h for h in rnd.held_out if h in args.folds))
    groups = passes(rnd)
    names = list(dict.fromkeys(n for f, _ in groups for n in f))  # every arm's held-out files
    if args.plain:
        groups = [
            (f, {n: r for n, r in g.items() if r.second != "minilm-q8-lora"}) for f, g in groups
        ]
    if args.arm:  # an arm's figures do not depend on the others': one pass per arm is the same
        groups = [(f, g) for f, g in ((f, filter_arms(g, args.arm)) for f, g in groups) if g]
    by_file = {name: lr.rows_of(name) for name in names}
    seed = lr.seed_rows()
    prompts = list(
        dict.fromkeys(str(r["prompt"]) for rows in [*by_file.values(), seed] for r in rows)
    )
    q8_cache = args.cache / "q8-embeddings.npz"  # its float file is keyed by the prompt list:
    # reusing it encodes only a new split's prompts (the encoders embed one prompt at a time)
    q8 = lq.q8_embeddings(prompts, q8_cache, q8_cache.with_suffix(".float.npz"))
    base = {k: q8[k] for k in ("static", "minilm-q8")}
    lora: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    lora_passes = [] if args.plain else [(files, delta_folder(rnd, files)) for files, _ in groups]
    for files, folder in dict.fromkeys(lora_passes):
        if not any(r.second == "minilm-q8-lora" for r in dict(groups)[files].values()):
            continue
        for held in (*rnd.held_out, "final"):
            if args.only not in (None, held, f"{folder}/{held}"):
                continue
            if args.seed_only and held != "final":
                continue
            path = args.deltas / folder / f"fold-{held}.npz"
            if held == "final" and not path.exists():
                continue
            tuned_on = rnd.delta_files or files
            delta = checked_delta(path, [n for n in tuned_on if n != held])
            lora[folder, held] = lora_embeddings(delta, args.cache, prompts)
    if args.train_cache and (rnd.deltas, "final") in lora:
        np.savez(
            args.train_cache,
            prompts=np.array(prompts),
            static=np.stack([base["static"][p] for p in prompts]),
            **{"minilm-q8-lora": np.stack([lora[rnd.deltas, "final"][p] for p in prompts])},
        )
    if args.only:
        return 0
    recipes = {n: r for _, g in groups for n, r in g.items()}
    figs: dict[str, list[Any]] = {name: [] for name in recipes}
    errors: list[dict[str, Any]] = []
    seeds = dict.fromkeys(recipes, "-")
    fold_seeds: dict[str, list[str]] = {name: [] for name in recipes}
    for held in (*(() if args.seed_only else rnd.held_out), "final"):
        for files, group in groups:
            key = (delta_folder(rnd, files), held)
            emb = base | ({"minilm-q8-lora": lora[key]} if key in lora else {})
            if held == "final":  # trained on every file, scored on the seed suite
                group = {n: r for n, r in group.items() if r.second in emb}
                rows, scored_on = [r for n in files for r in by_file[n]], seed
            else:
                rows, scored_on = [r for n in files if n != held for r in by_file[n]], by_file[held]
            if not group:
                continue
            with_seed = rnd.fold_seeds and held != "final"  # the same stages score both
            scored = lq.fold(rows, scored_on + seed if with_seed else scored_on, emb, group)
            for name, s in scored.items():
                if with_seed:
                    s, on_seed = split(s, len(scored_on))
                    f24 = on_seed.figures(recipes[name].delta)
                    fold_seeds[name].append(f"{round(len(seed) * f24['acc'])}/{len(seed)}")
                    errors += lq.wrong(name, f"{held}:seed", seed, on_seed, recipes[name].delta)
                f = s.figures(recipes[name].delta)
                if held == "final":
                    seeds[name] = f"{round(len(seed) * f['acc'])}/{len(seed)}"
                    if rnd.fold_seeds:
                        errors += lq.wrong(name, "final:seed", seed, s, recipes[name].delta)
                    continue
                figs[name].append(f)
                errors += lq.wrong(name, held, by_file[held], s, recipes[name].delta)
            print(f"fold {held}: trained on {len(rows)} rows", file=sys.stderr, flush=True)
    by_fold = rnd.fold_seeds and not args.seed_only
    if not args.seed_only:
        print(
            "| arm | "
            + " | ".join(rnd.held_out)
            + " | mean | high missed | medium missed | over | cost | deferred | seed |"
            + (" seed, each fold's model |" if by_fold else "")
        )
        print(
            "|---|"
            + "---|" * len(rnd.held_out)
            + "---:|---:|---:|---:|---:|---:|---:|"
            + ("---|" if by_fold else "")
        )
    for name in recipes:
        if figs[name]:
            line = lq.row(name, figs[name], seeds[name])
            if by_fold:
                line += f" {fold_seed_cells(fold_seeds[name])} |"
            print(line, flush=True)
        else:
            print(f"| {name} | seed suite, trained on every file: {seeds[name]} |", flush=True)
    if args.errors:
        args.errors.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in errors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
