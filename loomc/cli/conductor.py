"""`loomc conductor ...`: the research track — generate the corpus, predict plans with a planner,
apply the reference runtime guard, score predictions, and compare scored lanes.

    loomc conductor generate --out DIR
    loomc conductor predict --planner router|search|learned --data FILE --output FILE
    loomc conductor guard --data FILE --predictions FILE --output FILE
    loomc conductor score --data FILE --predictions FILE --output SUMMARY.json [--records FILE]
    loomc conductor stats --deterministic F --base F --trained F --output F

Every runtime error is one line on stderr (`file:line:` for a bad JSONL line) and exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

_PROG = "loomc conductor"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("conductor", help="conductor research: generate, predict, guard, score, stats")
    cmds = p.add_subparsers(dest="conductor_command", metavar="COMMAND")

    g = cmds.add_parser("generate", help="write the loom-conductor-v2 corpus (byte-exact by default)")
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--seed", type=int)
    g.add_argument("--anchors", type=Path, help="JSON list of 3 measured worker anchors")
    g.add_argument("--corpus", choices=("v2", "v3"), default="v2",
                   help="v3: the corpus without v2's label leaks (loomc/conductor/v3)")
    g.set_defaults(handler=_generate)

    pr = cmds.add_parser("predict", help="write prediction rows {id, prediction} for a planner")
    pr.add_argument("--planner", choices=(*sorted(PLANNERS), "learned"), required=True)
    pr.add_argument("--data", type=Path, required=True)
    pr.add_argument("--output", type=Path, required=True)
    lg = pr.add_argument_group("learned planner (--planner learned; needs the conductor extra)")
    lg.add_argument("--base-model", type=Path, metavar="DIR", help="local base-model directory")
    lg.add_argument("--adapter", type=Path, metavar="DIR",
                    help="local LoRA adapter directory (omit for the base lane)")
    lg.add_argument("--revision", metavar="REV", help="base-model revision to record")
    lg.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    lg.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"), default="auto")
    lg.add_argument("--batch-size", type=_positive, default=8, metavar="N")
    lg.add_argument("--max-new-tokens", type=_positive, default=180, metavar="N")
    pr.set_defaults(handler=_predict)

    gd = cmds.add_parser("guard", help="apply the reference runtime guard to raw predictions")
    gd.add_argument("--data", type=Path, required=True)
    gd.add_argument("--predictions", type=Path, required=True)
    gd.add_argument("--output", type=Path, required=True,
                    help="guarded rows; the summary goes to <output>.guard.json")
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


def _search() -> Any:
    from loomc.conductor.v2.search import SearchPlanner

    return SearchPlanner()


def _router() -> Any:
    from loomc.conductor.v2.router import DeterministicRouter

    return DeterministicRouter()


PLANNERS: dict[str, Callable[[], Any]] = {"router": _router, "search": _search}


def _fail(command: str, message: object) -> int:
    text = " ".join(str(message).split()) or "failed"
    print(f"{_PROG} {command}: {text}", file=sys.stderr)
    return 1


def _guarded(command: str, body: Callable[[], int]) -> int:
    """Run a handler body; every expected failure becomes one stderr line and exit 1."""
    from loomc.conductor.v2.score import InputError

    try:
        return body()
    except InputError as exc:
        return _fail(command, exc)
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return _fail(command, f"{where}{exc.strerror or exc}")
    except (ValueError, KeyError, TypeError) as exc:
        return _fail(command, exc)


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------------------------
# generate


def _generate_v3(args: argparse.Namespace) -> int:
    import hashlib

    from loomc.conductor.v2.format import iter_lines
    from loomc.conductor.v3.generator import DEFAULT_SEED, generate

    if args.anchors:
        return _fail("generate", "--anchors applies to the v2 corpus only")
    corpus = generate(args.seed if args.seed is not None else DEFAULT_SEED)

    def body() -> int:
        args.out.mkdir(parents=True, exist_ok=True)
        for split, rows in corpus.items():
            text = "".join(iter_lines(rows))
            (args.out / f"{split}.jsonl").write_text(text, encoding="utf-8")
            print(f"{split}: {hashlib.sha256(text.encode()).hexdigest()} ({len(rows)} rows)")
        print(f"wrote {args.out}", file=sys.stderr)
        return 0

    return _guarded("generate", body)


def _generate(args: argparse.Namespace) -> int:
    if args.corpus == "v3":
        return _generate_v3(args)
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
            return _fail("generate", f"{args.anchors}: bad anchors file: {exc}")
    try:
        corpus = generate(args.seed if args.seed is not None else DEFAULT_SEED, anchors)
    except GenerationError as exc:
        return _fail("generate", exc)

    def body() -> int:
        manifest = write_corpus(args.out, corpus)
        for name, entry in manifest.get("files", manifest.get("splits", {})).items():
            print(f"{name}: {entry.get('sha256', '')}" if isinstance(entry, dict) else name)
        print(f"wrote {args.out}", file=sys.stderr)
        return 0

    return _guarded("generate", body)


# ------------------------------------------------------------------------------------------
# predict


def _prompt_of(row: dict[str, Any]) -> str:
    prompt = row.get("prompt")
    if isinstance(prompt, str):
        return prompt
    from loomc.conductor.v2.format import build_prompt

    return build_prompt(row["task"], row["constraints"], row["workers"])


def _load_rows(path: Path, need: Sequence[str]) -> list[dict[str, Any]]:
    from loomc.conductor.v2.score import InputError, iter_jsonl

    rows: list[dict[str, Any]] = []
    for number, row in iter_jsonl(path):
        missing = [k for k in need if k not in row]
        if missing:
            raise InputError(f"{path}:{number}: row is missing {', '.join(missing)}")
        if not isinstance(row["id"], str):
            raise InputError(f"{path}:{number}: 'id' must be a string")
        rows.append(row)
    if not rows:
        raise InputError(f"{path}: no rows")
    return rows


def _predict(args: argparse.Namespace) -> int:
    if args.planner == "learned":
        if args.base_model is None:
            print(f"{_PROG} predict: --planner learned needs --base-model DIR", file=sys.stderr)
            return 2
        return _guarded("predict", lambda: _predict_learned(args))
    return _guarded("predict", lambda: _predict_planner(args))


def _predict_planner(args: argparse.Namespace) -> int:
    from loomc.conductor.plan import Constraints, TaskProfile, WorkerProfile
    from loomc.conductor.v2.format import write_jsonl
    from loomc.conductor.v2.score import InputError

    rows = _load_rows(args.data, ("id", "task", "constraints", "workers"))
    planner = PLANNERS[args.planner]()
    out = []
    for number, row in enumerate(rows, start=1):
        try:
            task = TaskProfile.from_dict(row["task"])
            workers = [WorkerProfile.from_dict(w) for w in row["workers"]]
            constraints = Constraints.from_dict(row["constraints"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"{args.data}: row {number} ({row['id']}): bad fields: {exc}") from None
        try:
            prediction = planner.plan(task, workers, constraints).to_json()
        except Exception as exc:  # a planner failure is a row-level outcome, scored as invalid
            prediction = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        out.append({"id": row["id"], "prediction": prediction})
    write_jsonl(args.output, out)
    print(f"wrote {len(out)} predictions to {args.output}", file=sys.stderr)
    return 0


def _predict_learned(args: argparse.Namespace) -> int:
    from loomc.conductor.v2.format import write_jsonl

    rows = _load_rows(args.data, ("id",))
    prompts = [_prompt_of(row) for row in rows]
    try:
        from loomc.conductor.learned import LearnedPlanner
    except ImportError as exc:
        return _fail("predict", f"the learned planner is unavailable ({exc}); install the "
                                "'conductor' extra: pip install -e '.[conductor]'")
    try:
        planner = LearnedPlanner(
            args.base_model,
            args.adapter,
            revision=args.revision,
            device=args.device,
            dtype=args.dtype,
            max_new_tokens=args.max_new_tokens,
        )
    except ImportError as exc:
        return _fail("predict", f"the learned planner is unavailable: {exc}")
    except Exception as exc:
        return _fail("predict", f"cannot load the learned planner: {exc}")
    out: list[dict[str, Any]] = []
    started = time.perf_counter()
    size = args.batch_size
    for start in range(0, len(rows), size):
        batch = prompts[start : start + size]
        t0 = time.perf_counter()
        try:
            texts = planner.generate(batch, batch_size=len(batch))
        except Exception as exc:
            return _fail("predict", f"generation failed at row {start + 1}: {exc}")
        elapsed_ms = round((time.perf_counter() - t0) * 1000.0, 3)
        if len(texts) != len(batch):
            return _fail("predict", f"planner returned {len(texts)} texts for {len(batch)} prompts")
        for row, text in zip(rows[start : start + size], texts, strict=True):
            out.append({"id": row["id"], "prediction": str(text), "elapsed_ms": elapsed_ms})
    duration = time.perf_counter() - started
    write_jsonl(args.output, out)
    meta: dict[str, Any] = dict(getattr(planner, "info", {}) or {})
    meta.update(
        examples=len(out),
        batch_size=size,
        duration_seconds=round(duration, 3),
        examples_per_second=round(len(out) / duration, 3) if duration > 0 else None,
    )
    meta.setdefault("lane", "trained_conductor" if args.adapter is not None else "base_model")
    _write_json(Path(f"{args.output}.meta.json"), meta)
    print(f"wrote {len(out)} predictions to {args.output}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------------------
# guard / score / stats


def _guard(args: argparse.Namespace) -> int:
    def body() -> int:
        from loomc.conductor.v2.format import write_jsonl
        from loomc.conductor.v2.guard import guard_rows, guard_summary
        from loomc.conductor.v2.score import load_examples, load_predictions

        examples = load_examples(args.data)
        predictions = load_predictions(args.predictions, examples)
        rows = guard_rows(examples, predictions)
        summary = guard_summary(rows)
        write_jsonl(args.output, rows)
        _write_json(Path(f"{args.output}.guard.json"), summary)
        print(f"guarded {summary['examples']} predictions: {summary['fallback_count']} "
              f"fallbacks {summary['reasons']}; wrote {args.output}", file=sys.stderr)
        return 0

    return _guarded("guard", body)


def _score(args: argparse.Namespace) -> int:
    def body() -> int:
        from loomc.conductor.v2.format import write_jsonl
        from loomc.conductor.v2.score import (
            InputError,
            load_examples,
            load_predictions,
            score_file,
            summarize,
        )

        examples = load_examples(args.data)
        predictions = load_predictions(args.predictions, examples)
        if not predictions:
            raise InputError(f"{args.predictions}: no prediction rows")
        records = score_file(examples, predictions)
        summary = summarize(records, args.lane or args.predictions.stem)
        _write_json(args.output, summary)
        if args.records is not None:
            write_jsonl(args.records, records)
        print(
            f"{summary['lane']}: {summary['examples']} examples, policy "
            f"{summary['policy_correct_rate']}, exact {summary['exact_plan_rate']}, "
            f"budgets {summary['constraint_satisfied_rate']}, mean regret "
            f"{summary['mean_utility_regret']}; wrote {args.output}",
            file=sys.stderr,
        )
        return 0

    return _guarded("score", body)


def _stats(args: argparse.Namespace) -> int:
    def body() -> int:
        from loomc.conductor.v2.stats import load_scored, paired_statistics, sha256_file

        paths = {"deterministic": args.deterministic, "base": args.base, "trained": args.trained}
        lanes = {lane: load_scored(path) for lane, path in paths.items()}
        shas = {lane: sha256_file(path) for lane, path in paths.items()}
        document = paired_statistics(lanes, shas, iterations=args.iterations)
        _write_json(args.output, document)
        print(f"paired {document['examples']} examples; wrote {args.output}", file=sys.stderr)
        return 0

    return _guarded("stats", body)
