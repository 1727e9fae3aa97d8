"""`loomc conductor ...`: the research track — generate the corpus, predict plans with a planner."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("conductor", help="conductor research: generate, predict")
    cmds = p.add_subparsers(dest="conductor_command", metavar="COMMAND")
    g = cmds.add_parser("generate", help="write the loom-conductor-v2 corpus (byte-exact by default)")
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--seed", type=int)
    g.add_argument("--anchors", type=Path, help="JSON list of 3 measured worker anchors")
    g.set_defaults(handler=_generate)
    pr = cmds.add_parser("predict", help="write prediction rows {id, prediction} for a planner")
    pr.add_argument("--planner", choices=sorted(PLANNERS), required=True)
    pr.add_argument("--data", type=Path, required=True)
    pr.add_argument("--output", type=Path, required=True)
    pr.set_defaults(handler=_predict)
    def usage(_args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(handler=usage)


def _search() -> Any:
    from loomc.conductor.v2.search import SearchPlanner

    return SearchPlanner()


# The deterministic router baseline (loomc.conductor.v2.router) is not registered: it does not
# yet reproduce the published router lane.
PLANNERS: dict[str, Callable[[], Any]] = {"search": _search}


def _generate(args: argparse.Namespace) -> int:
    from loomc.conductor.v2.families import ANCHORS, Anchor
    from loomc.conductor.v2.generator import DEFAULT_SEED, GenerationError, generate, write_corpus

    anchors = ANCHORS
    if args.anchors:
        try:
            raw = json.loads(args.anchors.read_text(encoding="utf-8"))
            anchors = tuple(Anchor(a["anchor"], float(a["quality"]), float(a["pass_rate"]),
                                   float(a["credits"]), int(a["latency_ms"]),
                                   tuple(a["strengths"])) for a in raw)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"loomc conductor generate: {args.anchors}: bad anchors file: {exc}",
                  file=sys.stderr)
            return 1
    try:
        corpus = generate(args.seed if args.seed is not None else DEFAULT_SEED, anchors)
    except GenerationError as exc:
        print(f"loomc conductor generate: {exc}", file=sys.stderr)
        return 1
    manifest = write_corpus(args.out, corpus)
    for name, entry in manifest.get("files", manifest.get("splits", {})).items():
        print(f"{name}: {entry.get('sha256', '')}" if isinstance(entry, dict) else name)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _predict(args: argparse.Namespace) -> int:
    from loomc.conductor.plan import Constraints, TaskProfile, WorkerProfile
    from loomc.conductor.v2.format import read_jsonl, write_jsonl

    try:
        rows = read_jsonl(args.data)
    except (OSError, ValueError) as exc:
        print(f"loomc conductor predict: {exc}", file=sys.stderr)
        return 1
    planner = PLANNERS[args.planner]()
    out = []
    for row in rows:
        try:
            plan = planner.plan(TaskProfile.from_dict(row["task"]),
                                [WorkerProfile.from_dict(w) for w in row["workers"]],
                                Constraints.from_dict(row["constraints"]))
            prediction = plan.to_json()
        except Exception as exc:
            prediction = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        out.append({"id": row.get("id"), "prediction": prediction})
    write_jsonl(args.output, out)
    print(f"wrote {len(out)} predictions to {args.output}", file=sys.stderr)
    return 0
