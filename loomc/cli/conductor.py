"""`loomc conductor ...`: the research track — generate the corpus, predict plans with a planner,
apply the reference runtime guard, score predictions, and compare scored lanes.

    loomc conductor generate --out DIR
    loomc conductor predict --planner router|search|learned --data FILE --output FILE
    loomc conductor guard --data FILE --predictions FILE --output FILE
    loomc conductor score --data FILE --predictions FILE --output SUMMARY.json [--records FILE]
    loomc conductor stats --deterministic F --base F --trained F --output F

The work is done by the research package `loomc_research` (research/ in the checkout, outside the
wheel), imported only inside a handler: without it a command exits 2 with one line saying how to
get it. Every runtime error is one line on stderr (`file:line:` for a bad JSONL line) and exit 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

_PROG = "loomc conductor"
PLANNERS = ("router", "search", "learned")  # loomc_research.conductor.PLANNERS
_MISSING = (
    "needs the research package loomc_research, which the wheel does not ship: "
    "install loomc from a checkout (pip install -e .) or put its research/ folder on PYTHONPATH"
)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "conductor", help="conductor research: generate, predict, guard, score, stats"
    )
    cmds = p.add_subparsers(dest="conductor_command", metavar="COMMAND")

    g = cmds.add_parser(
        "generate", help="write the loom-conductor-v2 corpus (byte-exact by default)"
    )
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--seed", type=int)
    g.add_argument("--anchors", type=Path, help="JSON list of 3 measured worker anchors")
    g.add_argument(
        "--corpus",
        choices=("v2", "v3"),
        default="v2",
        help="v3: the corpus without v2's label leaks (loomc_research.v3)",
    )
    g.set_defaults(handler=_generate)

    pr = cmds.add_parser("predict", help="write prediction rows {id, prediction} for a planner")
    pr.add_argument("--planner", choices=PLANNERS, required=True)
    pr.add_argument("--data", type=Path, required=True)
    pr.add_argument("--output", type=Path, required=True)
    lg = pr.add_argument_group("learned planner (--planner learned; needs the conductor extra)")
    lg.add_argument("--base-model", type=Path, metavar="DIR", help="local base-model directory")
    lg.add_argument(
        "--adapter",
        type=Path,
        metavar="DIR",
        help="local LoRA adapter directory (omit for the base lane)",
    )
    lg.add_argument("--revision", metavar="REV", help="base-model revision to record")
    lg.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    lg.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"), default="auto")
    lg.add_argument("--batch-size", type=_positive, default=8, metavar="N")
    lg.add_argument("--max-new-tokens", type=_positive, default=180, metavar="N")
    lg.add_argument(
        "--merge-adapter",
        action="store_true",
        help="fold the adapter into the base weights: faster decoding (1.75x on an H200 at the "
        "14B shape); in bf16 its ids may differ from the unmerged adapter's",
    )
    pr.set_defaults(handler=_predict)

    gd = cmds.add_parser("guard", help="apply the reference runtime guard to raw predictions")
    gd.add_argument("--data", type=Path, required=True)
    gd.add_argument("--predictions", type=Path, required=True)
    gd.add_argument(
        "--output",
        type=Path,
        required=True,
        help="guarded rows; the summary goes to <output>.guard.json",
    )
    gd.set_defaults(handler=_guard)

    sc = cmds.add_parser("score", help="score predictions against corpus rows (§5)")
    sc.add_argument("--data", type=Path, required=True)
    sc.add_argument("--predictions", type=Path, required=True)
    sc.add_argument("--output", type=Path, required=True, metavar="SUMMARY.json")
    sc.add_argument("--lane", help="lane name recorded in the summary (default: file stem)")
    sc.add_argument("--records", type=Path, metavar="FILE", help="also write per-example records")
    sc.set_defaults(handler=_score)

    st = cmds.add_parser("stats", help="paired statistics over three scored record files (§5.7)")
    st.add_argument("--deterministic", type=Path, required=True)
    st.add_argument("--base", type=Path, required=True)
    st.add_argument("--trained", type=Path, required=True)
    st.add_argument("--output", type=Path, required=True)
    st.add_argument("--iterations", type=_positive, default=10_000, help=argparse.SUPPRESS)
    st.set_defaults(handler=_stats)

    def usage(_args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(handler=usage)


def _fail(command: str, message: object) -> int:
    text = " ".join(str(message).split()) or "failed"
    print(f"{_PROG} {command}: {text}", file=sys.stderr)
    return 1


def _research() -> Any:
    """`loomc_research.conductor`, or None when the research package is not importable."""
    try:
        import loomc_research.conductor as research  # type: ignore[import-not-found,unused-ignore]
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] != "loomc_research":
            raise
        return None
    return research


def _call(command: str, work: Callable[[Any], Any]) -> int:
    """Run one research function; print its lines, or one stderr line for a failure."""
    research = _research()
    if research is None:
        print(f"{_PROG} {command}: {_MISSING}", file=sys.stderr)
        return 2
    try:
        done = work(research)
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return _fail(command, f"{where}{exc.strerror or exc}")
    except (ValueError, KeyError, TypeError) as exc:  # CommandError and InputError included
        return _fail(command, exc)
    for line in done.lines:
        print(line)
    print(done.note, file=sys.stderr)
    return 0


def _generate(args: argparse.Namespace) -> int:
    return _call(
        "generate",
        lambda r: r.generate(args.out, seed=args.seed, anchors=args.anchors, corpus=args.corpus),
    )


def _predict(args: argparse.Namespace) -> int:
    learned: dict[str, Any] = {}
    if args.planner == "learned":
        if args.base_model is None:
            print(f"{_PROG} predict: --planner learned needs --base-model DIR", file=sys.stderr)
            return 2
        learned = {
            "base_model": args.base_model,
            "adapter": args.adapter,
            "revision": args.revision,
            "device": args.device,
            "dtype": args.dtype,
            "max_new_tokens": args.max_new_tokens,
            "merge_adapter": args.merge_adapter,
            "batch_size": args.batch_size,
        }
    return _call("predict", lambda r: r.predict(args.planner, args.data, args.output, **learned))


def _guard(args: argparse.Namespace) -> int:
    return _call("guard", lambda r: r.guard(args.data, args.predictions, args.output))


def _score(args: argparse.Namespace) -> int:
    return _call(
        "score",
        lambda r: r.score(
            args.data, args.predictions, args.output, lane=args.lane, records=args.records
        ),
    )


def _stats(args: argparse.Namespace) -> int:
    return _call(
        "stats",
        lambda r: r.stats(
            args.deterministic, args.base, args.trained, args.output, iterations=args.iterations
        ),
    )
