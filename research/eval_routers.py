"""Route accuracy, high-risk misses and over-escalation of the shipped routers on one JSONL file.

    .venv/bin/python research/eval_routers.py evals/routing/X.jsonl [--seed]

For the lead's one measurement of a sealed split (issue 17): v25 (the default since round 39:
v22's files and rules with ``lexical-floor``, a character n-gram model of the prompt), v22 (the
default from round 36 to 38: v19's recipe and rows over a LoRA delta tuned on F44), v19 (the default from hard-test-28 to -35:
v18's recipe with the context block), v18 (the default from hard-test-27 to -28),
v13 (the default from hard-test-15 to -23) and the v4, v6, v7, v8, v9, v10, v11 and v12 releases, each as its cascade and as its static
stage alone (v10 to v13 on the int8 MiniLM (v12's and v13's fine-tuned with LoRA), on ONNX
Runtime where it is installed and on numpy: the two must agree), v13 with a narrower band (the
band its own training rows give at a 0.10 cap, ``research/band_for_cap.py``: hard-test-19's
candidate), v14 (v13's files with the ``people-floor`` rule: hard-test-21's candidate, the default since
hard-test-23), v15 (v14 with the rule read wider, ``people-floor-wide``: hard-test-24's
candidate, the default from hard-test-24 to -27), v16 (v15 with more words for where people have been
and for employees, ``people-floor-tracking``: hard-test-25's candidate), v17 (v15's wide floor
that also reads a characteristic priced through a lookup, and the alarm floor: hard-test-26's
candidate), v18 (v13's delta with both heads retrained on F40, every file spent since and
rows against over-escalation, v15's rules: hard-test-27's candidate, the default to -28), v20
(v19's recipe with both heads on F42, route30's contrast pairs added: hard-test-29's candidate),
v21 (v19's files and rules with ``safety-floor``, code that defeats a safety function:
hard-test-30's candidate), v22 (v19's recipe and rows over a LoRA delta fine-tuned on every
spent file, F44: hard-test-33's candidate, the default from round 36 to 38; its static stage is v19's, so no row of its own),
v24 (v22's delta with both heads and the index on F46, F41 and the eight spent safety sets:
round 38's candidate, held),
v23 (v22's recipe over a delta tuned on F45, every file spent to round 36: round 37's candidate, held),
v26 (v22's recipe and delta with both heads and the index on F41 and the everyday-train files,
and the lexical model retrained on every file to round 39: round 40's candidate, the default
in round 40), v27 (v26's recipe with heads on F48, every ordinary row, and the lexical model on every
file to round 40: round 41's candidate, the default from round 41 to 46), v28 (v27's recipe on F50, every
ordinary row to round 41, the ordinary rows weighing half the fit and the cost, and the lexical
model on every file to round 41: round 42's candidate), v30 (v28's recipe on F56, every
ordinary row to round 42, with the embedding's ridge ten times lambda and the band capped at
0.15, and the lexical model on every file to round 42: round 43's candidate), v31 and v33
(v30 with v27 asked about short and other languages' prompts: rounds 44 and 45's), v34
(v30's recipe on F75, every row spent to round 45, with the remote-code floor and the lexical
model on every file to round 45: round 46's candidate; rounds 43-45 are training figures for it),
v35 (v34's files with v33's second opinion: round 47's candidate, the default since; rounds 43-45 likewise),
plus ``keywords`` as the floor.
v13 was trained on hard-test-10 ... -14 and v18 on hard-test-10 ... -26: their rows on those
files are training figures.
The decision is the balanced tier's (``loomc.risk.evaluate.escalates``), prompts only (no
pipeline hints). ``--seed`` adds the reference seed suite (with and without hints), which must
stay at 24/24. Reads only the file named; prints one markdown table.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.evaluate import evaluate_profiler, load_rows  # noqa: E402
from loomc.risk.factory import make_keywords, make_profiler  # noqa: E402

SEED = ROOT.parent / "shared" / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"
# (label, risk.options): the routers compared
ROUTERS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("semantic v4 cascade", {"release": "v4"}),
    ("semantic v4 static stage", {"release": "v4", "cascade": False}),
    ("semantic v6 cascade", {"release": "v6"}),
    ("semantic v6 static stage", {"release": "v6", "cascade": False}),
    ("semantic v7 cascade", {"release": "v7"}),
    ("semantic v7 static stage", {"release": "v7", "cascade": False}),
    ("semantic v8 cascade", {"release": "v8"}),
    ("semantic v8 static stage", {"release": "v8", "cascade": False}),
    ("semantic v9 cascade", {"release": "v9"}),
    ("semantic v9 static stage", {"release": "v9", "cascade": False}),
    ("semantic v10 cascade, auto backend", {"release": "v10", "backend": "auto"}),
    ("semantic v10 cascade, numpy", {"release": "v10", "backend": "numpy"}),
    ("semantic v10 static stage", {"release": "v10", "cascade": False}),
    ("semantic v11 cascade, auto backend", {"release": "v11", "backend": "auto"}),
    ("semantic v11 cascade, numpy", {"release": "v11", "backend": "numpy"}),
    ("semantic v11 static stage", {"release": "v11", "cascade": False}),
    ("semantic v12 cascade, auto backend", {"release": "v12", "backend": "auto"}),
    ("semantic v12 cascade, numpy", {"release": "v12", "backend": "numpy"}),
    ("semantic v12 static stage", {"release": "v12", "cascade": False}),
    ("semantic v13 cascade, auto backend", {"release": "v13", "backend": "auto"}),
    ("semantic v13 cascade, numpy", {"release": "v13", "backend": "numpy"}),
    ("semantic v13 static stage", {"release": "v13", "cascade": False}),
    # hard-test-19's candidate: v13 with the band its training rows give at cap 0.10
    # (research/band_for_cap.py), numpy
    (
        "semantic v13 cascade, band (0.12, 0.37), numpy",
        {"release": "v13", "backend": "numpy", "band_low": 0.12, "band_high": 0.37},
    ),
    # the default from hard-test-23 to -24: v13's files with the people-floor rule
    ("semantic v14 cascade, auto backend", {"release": "v14", "backend": "auto"}),
    ("semantic v14 cascade, numpy", {"release": "v14", "backend": "numpy"}),
    # the default from hard-test-24 to -27: v14 with the people floor read wider
    ("semantic v15 cascade, auto backend", {"release": "v15", "backend": "auto"}),
    ("semantic v15 cascade, numpy", {"release": "v15", "backend": "numpy"}),
    # hard-test-25's candidate: v15 with people-floor-tracking
    ("semantic v16 cascade, auto backend", {"release": "v16", "backend": "auto"}),
    ("semantic v16 cascade, numpy", {"release": "v16", "backend": "numpy"}),
    # hard-test-26's candidate: v15's wide people floor reading tables, and the alarm floor
    ("semantic v17 cascade, auto backend", {"release": "v17", "backend": "auto"}),
    ("semantic v17 cascade, numpy", {"release": "v17", "backend": "numpy"}),
    # the default from hard-test-27 to -28: v13's delta, both heads retrained on F40 (route28's H)
    ("semantic v18 cascade, auto backend", {"release": "v18", "backend": "auto"}),
    ("semantic v18 cascade, numpy", {"release": "v18", "backend": "numpy"}),
    ("semantic v18 static stage", {"release": "v18", "cascade": False}),
    # the default from hard-test-28 to -35: v18's recipe with the context block, on F41 (route29's I)
    ("semantic v19 cascade, auto backend", {"release": "v19", "backend": "auto"}),
    ("semantic v19 cascade, numpy", {"release": "v19", "backend": "numpy"}),
    ("semantic v19 static stage", {"release": "v19", "cascade": False}),
    # hard-test-29's candidate: v19's recipe on F42 (route30's J)
    ("semantic v20 cascade, auto backend", {"release": "v20", "backend": "auto"}),
    ("semantic v20 cascade, numpy", {"release": "v20", "backend": "numpy"}),
    ("semantic v20 static stage", {"release": "v20", "cascade": False}),
    # hard-test-30's candidate: v19's files and rules with the safety floor
    ("semantic v21 cascade, auto backend", {"release": "v21", "backend": "auto"}),
    ("semantic v21 cascade, numpy", {"release": "v21", "backend": "numpy"}),
    # the default from round 36 to 38: v19's heads and rows over a delta tuned on every spent file
    ("semantic v22 cascade, auto backend", {"release": "v22", "backend": "auto"}),
    ("semantic v22 cascade, numpy", {"release": "v22", "backend": "numpy"}),
    # round 37's candidate: v22's heads and rows over a delta tuned on F45
    ("semantic v23 cascade, auto backend", {"release": "v23", "backend": "auto"}),
    ("semantic v23 cascade, numpy", {"release": "v23", "backend": "numpy"}),
    # round 38's candidate: v22's delta, both heads and the index on F46 (F41 + the safety sets)
    ("semantic v24 cascade, auto backend", {"release": "v24", "backend": "auto"}),
    ("semantic v24 cascade, numpy", {"release": "v24", "backend": "numpy"}),
    # the default since round 39: v22's files and rules with the lexical floor (loomc.risk.lexical)
    ("semantic v25 cascade, auto backend", {"release": "v25", "backend": "auto"}),
    ("semantic v25 cascade, numpy", {"release": "v25", "backend": "numpy"}),
    # round 40's candidate: heads on F41 + everyday-train, the lexical model retrained
    ("semantic v26 cascade, auto backend", {"release": "v26", "backend": "auto"}),
    ("semantic v26 cascade, numpy", {"release": "v26", "backend": "numpy"}),
    # round 41's candidate: v26's recipe, heads on every ordinary row written so far (F48)
    ("semantic v27 cascade (default), auto backend", {"release": "v27", "backend": "auto"}),
    ("semantic v27 cascade, numpy", {"release": "v27", "backend": "numpy"}),
    # round 42's candidate: v27's recipe on F50, the ordinary rows weighing half the fit and cost
    ("semantic v28 cascade, auto backend", {"release": "v28", "backend": "auto"}),
    ("semantic v28 cascade, numpy", {"release": "v28", "backend": "numpy"}),
    # round 43's candidate: v28's recipe on F56, the embedding's ridge x10, the band capped at 0.15
    ("semantic v30 cascade, auto backend", {"release": "v30", "backend": "auto"}),
    ("semantic v30 cascade, numpy", {"release": "v30", "backend": "numpy"}),
    # round 44's candidate: v30's files and rules, v27's cascade too on a prompt of <= 60 characters
    ("semantic v31 cascade, auto backend", {"release": "v31", "backend": "auto"}),
    ("semantic v31 cascade, numpy", {"release": "v31", "backend": "numpy"}),
    # round 45's candidate: v32's decisions (v31, and v27 asked about prompts of <= 160
    # characters not in English), v27 reading v30's index and product
    ("semantic v33 cascade, auto backend", {"release": "v33", "backend": "auto"}),
    ("semantic v33 cascade, numpy", {"release": "v33", "backend": "numpy"}),
    # round 46's candidate: v30's recipe on F75 (every row spent since), the remote-code floor
    ("semantic v34 cascade, auto backend", {"release": "v34", "backend": "auto"}),
    ("semantic v34 cascade, numpy", {"release": "v34", "backend": "numpy"}),
    # round 47's candidate: v34's files with v33's second opinion (v27 asked)
    ("semantic v35 cascade, auto backend", {"release": "v35", "backend": "auto"}),
    ("semantic v35 cascade, numpy", {"release": "v35", "backend": "numpy"}),
)


def line(label: str, profiler: Any, rows: list[dict[str, Any]], suite: str, hints: bool) -> str:
    r = evaluate_profiler(profiler, rows, use_hints=hints)
    high_missed = round(r["high_risk_under_escalation"] * r["high_n"])
    levels = [str(row.get("level", row.get("difficulty"))) for row in rows]
    medium_n = sum(
        bool(row["expectedEscalation"]) and lv != "high"
        for row, lv in zip(rows, levels, strict=True)
    )
    pos_n = sum(bool(row["expectedEscalation"]) for row in rows)
    neg = len(rows) - pos_n
    under = round(r["under_escalation"] * pos_n)
    over = round(r["over_escalation"] * neg)
    cost = over + 2 * (under - high_missed) + 6 * high_missed
    return (
        f"| {label} | {suite} | {r['n']} | {100 * r['accuracy']:.1f}% | "
        f"{high_missed} / {r['high_n']} | {under - high_missed} / {medium_n} | {over} / {neg} | "
        f"{cost} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "file", type=Path, help="a routing JSONL file (prompt, expectedEscalation, level)"
    )
    ap.add_argument("--seed", action="store_true", help="also the reference seed suite")
    args = ap.parse_args(argv)
    suites: list[tuple[str, list[dict[str, Any]], bool]] = [
        (args.file.name, load_rows(args.file), False)
    ]
    if args.seed:
        seed = load_rows(SEED)
        suites += [("seed (hints)", seed, True), ("seed (no hints)", seed, False)]
    print(
        "| router | file | n | accuracy | high missed | medium missed | over-escalated | cost |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|"
    )
    profilers: list[tuple[str, Any]] = [("keywords", make_keywords(RiskSettings()))]
    for label, opts in ROUTERS:
        prof = make_profiler(RiskSettings(profiler="semantic", options=opts))
        if prof.name != "semantic":
            raise SystemExit(f"{label}: {getattr(prof, 'notice', None) or 'not available'}")
        profilers.append((label, prof))
    for label, prof in profilers:
        for suite, rows, hints in suites:
            print(line(label, prof, rows, suite, hints))
    print(
        "\ncost: over-escalated low 1, missed medium 2, missed high 6. The goal: 0 high missed and"
        " >= 90%; which release is the default: the rule written for the split before it was run"
        " (evals/routing/README.md)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
