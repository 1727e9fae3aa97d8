"""The `loomc conductor ...` commands as functions: generate, predict, guard, score, stats.

`loomc/cli/conductor.py` parses the arguments, imports this module lazily and calls one function;
each returns a `Done` (lines for stdout, one note for stderr) or raises. Expected failures are
`CommandError` (a ready one-line message), `InputError` (`file:line:` for a bad JSONL line) and
`OSError`; the CLI turns each into one stderr line and exit 1.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loomc.conductor.plan import Constraints, TaskProfile, WorkerProfile
from loomc.conductor.planners import make_planner
from loomc.conductor.prompt_format import prompt_of
from loomc.eval.receipt import sha256_file
from loomc_research.corpus_io import iter_lines, write_jsonl
from loomc_research.v2.score import InputError, iter_jsonl

__all__ = ["PLANNERS", "CommandError", "Done", "generate", "guard", "predict", "score", "stats"]

# `predict --planner`: the product registry's planners plus the research router baseline.
PLANNERS: tuple[str, ...] = ("router", "search", "learned")


class CommandError(ValueError):
    """A command cannot go on; the message is the whole one-line report."""


@dataclass(frozen=True)
class Done:
    note: str  # one line for stderr
    lines: list[str] = field(default_factory=list)  # lines for stdout


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------------------------
# generate


def _anchors(path: Path) -> tuple[Any, ...]:
    from loomc_research.v2.families import Anchor

    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return tuple(
            Anchor(
                a["anchor"],
                float(a["quality"]),
                float(a["pass_rate"]),
                float(a["credits"]),
                int(a["latency_ms"]),
                tuple(a["strengths"]),
            )
            for a in raw
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"{path}: bad anchors file: {exc}") from None


def generate(
    out: Path, *, seed: int | None = None, anchors: Path | None = None, corpus: str = "v2"
) -> Done:
    """Write a corpus; stdout gets one `split: sha256` line per file."""
    if corpus == "v3":
        if anchors:
            raise CommandError("--anchors applies to the v2 corpus only")
        return _generate_v3(out, seed)
    from loomc_research.v2.families import ANCHORS
    from loomc_research.v2.generator import DEFAULT_SEED, GenerationError, write_corpus
    from loomc_research.v2.generator import generate as generate_v2

    chosen = _anchors(anchors) if anchors else ANCHORS
    try:
        rows = generate_v2(seed if seed is not None else DEFAULT_SEED, chosen)
    except GenerationError as exc:
        raise CommandError(str(exc)) from None
    manifest = write_corpus(out, rows)
    lines = [
        f"{name}: {entry.get('sha256', '')}" if isinstance(entry, dict) else name
        for name, entry in manifest.get("files", manifest.get("splits", {})).items()
    ]
    return Done(f"wrote {out}", lines)


def _generate_v3(out: Path, seed: int | None) -> Done:
    from loomc_research.v3.generator import DEFAULT_SEED
    from loomc_research.v3.generator import generate as generate_v3

    rows_by_split = generate_v3(seed if seed is not None else DEFAULT_SEED)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for split, rows in rows_by_split.items():
        text = "".join(iter_lines(rows))
        (out / f"{split}.jsonl").write_text(text, encoding="utf-8")
        lines.append(f"{split}: {hashlib.sha256(text.encode()).hexdigest()} ({len(rows)} rows)")
    return Done(f"wrote {out}", lines)


# ------------------------------------------------------------------------------------------
# predict


def _load_rows(path: Path, need: Sequence[str]) -> list[dict[str, Any]]:
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


def _planner(name: str) -> Any:
    if name == "router":
        from loomc_research.v2.router import DeterministicRouter

        return DeterministicRouter()
    return make_planner(name)


def predict(planner: str, data: Path, output: Path, **learned: Any) -> Done:
    """Prediction rows `{id, prediction}`; `learned` takes `LearnedPlanner`'s options plus
    `batch_size`, and also writes `<output>.meta.json`."""
    if planner == "learned":
        return _predict_learned(data, output, **learned)
    rows = _load_rows(data, ("id", "task", "constraints", "workers"))
    chosen = _planner(planner)
    out = []
    for number, row in enumerate(rows, start=1):
        try:
            task = TaskProfile.from_dict(row["task"])
            workers = [WorkerProfile.from_dict(w) for w in row["workers"]]
            constraints = Constraints.from_dict(row["constraints"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"{data}: row {number} ({row['id']}): bad fields: {exc}") from None
        try:
            prediction = chosen.plan(task, workers, constraints).to_json()
        except Exception as exc:  # a planner failure is a row-level outcome, scored as invalid
            prediction = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        out.append({"id": row["id"], "prediction": prediction})
    write_jsonl(output, out)
    return Done(f"wrote {len(out)} predictions to {output}")


def _load_learned(base_model: Path, adapter: Path | None, options: dict[str, Any]) -> Any:
    try:
        from loomc.conductor.learned import LearnedPlanner
    except ImportError as exc:
        raise CommandError(
            f"the learned planner is unavailable ({exc}); install the "
            "'conductor' extra: pip install -e '.[conductor]'"
        ) from None
    try:
        return LearnedPlanner(base_model, adapter, **options)
    except ImportError as exc:
        raise CommandError(f"the learned planner is unavailable: {exc}") from None
    except Exception as exc:
        raise CommandError(f"cannot load the learned planner: {exc}") from None


def _predict_learned(
    data: Path,
    output: Path,
    *,
    base_model: Path,
    adapter: Path | None = None,
    batch_size: int = 8,
    **options: Any,
) -> Done:
    """Batched greedy decoding of the rows' v2 prompts; each row records its batch wall time."""
    rows = _load_rows(data, ("id",))
    prompts = [prompt_of(row) for row in rows]
    planner = _load_learned(base_model, adapter, options)
    out: list[dict[str, Any]] = []
    started = time.perf_counter()
    for start in range(0, len(rows), batch_size):
        batch = prompts[start : start + batch_size]
        t0 = time.perf_counter()
        try:
            texts = planner.generate(batch, batch_size=len(batch))
        except Exception as exc:
            raise CommandError(f"generation failed at row {start + 1}: {exc}") from None
        elapsed_ms = round((time.perf_counter() - t0) * 1000.0, 3)
        if len(texts) != len(batch):
            raise CommandError(f"planner returned {len(texts)} texts for {len(batch)} prompts")
        for row, text in zip(rows[start : start + batch_size], texts, strict=True):
            out.append({"id": row["id"], "prediction": str(text), "elapsed_ms": elapsed_ms})
    duration = time.perf_counter() - started
    write_jsonl(output, out)
    meta: dict[str, Any] = dict(getattr(planner, "info", {}) or {})
    meta.update(
        examples=len(out),
        batch_size=batch_size,
        duration_seconds=round(duration, 3),
        examples_per_second=round(len(out) / duration, 3) if duration > 0 else None,
    )
    meta.setdefault("lane", "trained_conductor" if adapter is not None else "base_model")
    _write_json(Path(f"{output}.meta.json"), meta)
    return Done(f"wrote {len(out)} predictions to {output}")


# ------------------------------------------------------------------------------------------
# guard / score / stats


def guard(data: Path, predictions: Path, output: Path) -> Done:
    """Guarded rows to `output`, the summary to `<output>.guard.json`."""
    from loomc_research.v2.guard import guard_rows, guard_summary
    from loomc_research.v2.score import load_examples, load_predictions

    examples = load_examples(data)
    rows = guard_rows(examples, load_predictions(predictions, examples))
    summary = guard_summary(rows)
    write_jsonl(output, rows)
    _write_json(Path(f"{output}.guard.json"), summary)
    return Done(
        f"guarded {summary['examples']} predictions: {summary['fallback_count']} "
        f"fallbacks {summary['reasons']}; wrote {output}"
    )


def score(
    data: Path,
    predictions: Path,
    output: Path,
    *,
    lane: str | None = None,
    records: Path | None = None,
) -> Done:
    """The §5 summary to `output`; per-example records to `records` when given."""
    from loomc_research.v2.score import load_examples, load_predictions, score_file, summarize

    examples = load_examples(data)
    rows = load_predictions(predictions, examples)
    if not rows:
        raise InputError(f"{predictions}: no prediction rows")
    scored = score_file(examples, rows)
    summary = summarize(scored, lane or predictions.stem)
    _write_json(output, summary)
    if records is not None:
        write_jsonl(records, scored)
    return Done(
        f"{summary['lane']}: {summary['examples']} examples, policy "
        f"{summary['policy_correct_rate']}, exact {summary['exact_plan_rate']}, "
        f"budgets {summary['constraint_satisfied_rate']}, mean regret "
        f"{summary['mean_utility_regret']}; wrote {output}"
    )


def stats(deterministic: Path, base: Path, trained: Path, output: Path, *, iterations: int) -> Done:
    """Paired statistics (§5.7) over three scored record files."""
    from loomc_research.v2.stats import load_scored, paired_statistics

    paths = {"deterministic": deterministic, "base": base, "trained": trained}
    lanes = {lane: load_scored(path) for lane, path in paths.items()}
    shas = {lane: sha256_file(path) for lane, path in paths.items()}
    document = paired_statistics(lanes, shas, iterations=iterations)
    _write_json(output, document)
    return Done(f"paired {document['examples']} examples; wrote {output}")
