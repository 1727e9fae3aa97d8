"""``loomc.calibrate``: the policy's per-worker guesses replaced by what the trace store measured.

The checker's worst cases are only as good as the policy's per-worker figures: ``p95_latency``
(latency bounds), ``max_tokens`` (token and cost bounds) and ``credits`` (the credit reserved per
call). Those are guesses when a policy is written. Every run from ``loomc serve``, ``run`` and
``eval`` is in the trace store with its steps; this reads them back and proposes, as a unified
diff of the policy YAML with the evidence beside it, figures measured from real calls:

- ``p95_latency``: the 95th percentile of a worker's single-attempt call latency, rounded up to
  100 ms (retries are left out: their time includes backoff);
- ``max_tokens``: the most completion tokens one call produced, rounded up to 16; never lowered
  when some call reached the current cap (those answers were cut, so the real need is unknown);
- ``credits``: the most credits one call cost by the provider's receipts (a reservation must
  cover every call, so not a percentile); left alone when no receipt was seen.

A worker with fewer than ``min_samples`` measured calls is left unchanged and named; when no
worker has enough, :class:`CalibrationRefused` says so. The proposed policy is checked like
`loomc check` before it can be written: figures that would break a tier's ceilings are refused.
"""

from __future__ import annotations

import difflib
import math
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from loomc.api.running import ProjectLike, open_project
from loomc.errors import LoomcError
from loomc.store import RunFilter, open_store, store_url

MIN_SAMPLES = 20
FIELDS = ("p95_latency", "max_tokens", "credits")


class CalibrationRefused(LoomcError):
    """Too few measurements, no policy file to edit, or a proposal that fails the checker."""


@dataclass(frozen=True)
class Spread:
    n: int
    p50: Decimal
    p95: Decimal
    max: Decimal

    @classmethod
    def of(cls, values: Sequence[Decimal]) -> Spread:
        ordered = sorted(values)
        return cls(len(ordered), _rank(ordered, 0.50), _rank(ordered, 0.95), ordered[-1])

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "p50": str(self.p50), "p95": str(self.p95), "max": str(self.max)}


def _rank(ordered: Sequence[Decimal], q: float) -> Decimal:
    """The nearest-rank percentile: a value that was actually measured."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass
class WorkerEvidence:
    worker: str
    model: str
    runs: int
    calls: int
    latency_ms: Spread | None = None
    completion_tokens: Spread | None = None
    credits_per_call: Spread | None = None
    current: dict[str, Any] = field(default_factory=dict)
    proposed: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        def spread(s: Spread | None) -> dict[str, Any] | None:
            return None if s is None else s.to_json()

        return {
            "worker": self.worker,
            "model": self.model,
            "runs": self.runs,
            "calls": self.calls,
            "latency_ms": spread(self.latency_ms),
            "completion_tokens": spread(self.completion_tokens),
            "credits_per_call": spread(self.credits_per_call),
            "current": {k: _text(v) for k, v in self.current.items()},
            "proposed": {k: _text(v) for k, v in self.proposed.items()},
            "notes": self.notes,
        }


@dataclass
class Calibration:
    """The proposal: evidence per worker, the policy's text before and after, its diff."""

    policy_path: Path
    store: str
    runs: int
    workers: list[WorkerEvidence]
    too_few: dict[str, int]
    min_samples: int
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        name = str(self.policy_path)
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )

    def write(self) -> None:
        """Apply the proposal to the policy file (checked when it was built)."""
        self.policy_path.write_text(self.after, encoding="utf-8")

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": str(self.policy_path),
            "store": self.store,
            "runs": self.runs,
            "min_samples": self.min_samples,
            "workers": [w.to_json() for w in self.workers],
            "too_few_samples": self.too_few,
            "diff": self.diff(),
        }


def calibrate(
    project: ProjectLike = ".",
    *,
    policy: str | Path | None = None,
    store: str | Path | None = None,
    since: float | None = None,
    pipeline: str | None = None,
    source: str | None = None,
    min_samples: int = MIN_SAMPLES,
) -> Calibration:
    """Measure each worker's calls in the store's runs (``since`` unix seconds, ``pipeline``,
    ``source`` narrow them) and propose policy figures. ``store`` follows the usual convention
    (``$LOOMC_STORE``, else the project's ``.loomc/store.db``). Raises ``CalibrationRefused``
    and ``StoreError``; the proposal's :meth:`Calibration.write` applies it."""
    if min_samples < 1:
        raise ValueError("min_samples must be >= 1")
    root = project if isinstance(project, str | Path) else None
    proj = open_project(project, policy)
    source_file = proj.policy_source.path
    if proj.packaged or source_file is None or not Path(source_file).is_file():
        raise CalibrationRefused(
            "the project has no policy file of its own to calibrate (give --policy FILE)"
        )
    path = Path(source_file)
    if path.suffix not in (".yaml", ".yml"):
        raise CalibrationRefused(f"{path}: only YAML policies can be calibrated")
    url = store_url(store, root if root is not None else proj.root, required=True) or ""
    if "://" not in url and not Path(url).is_file():
        raise CalibrationRefused(f"no store at {url}: run `loomc run`, `eval` or `serve` first")
    opened = open_store(url)
    try:
        runs = opened.runs(RunFilter(pipeline=pipeline, since=since, source=source))
    finally:
        opened.close()
    workers = proj.policy.workers
    samples: dict[str, _Samples] = {name: _Samples() for name in workers}
    for run in runs:
        for step in run.result.get("steps", []):
            name = step.get("worker")
            if name not in samples or step.get("model") != workers[name].model:
                continue  # a worker since removed or pointed at another model
            samples[name].add(run.run_id, step)
    evidence: list[WorkerEvidence] = []
    too_few: dict[str, int] = {}
    for name, got in samples.items():
        if len(got.latency) < min_samples:
            too_few[name] = len(got.latency)
            continue
        evidence.append(_propose(name, workers[name], got))
    if not evidence:
        counts = ", ".join(f"{w} {n}" for w, n in too_few.items())
        raise CalibrationRefused(
            f"too few samples to calibrate: every worker needs {min_samples} measured calls "
            f"(have: {counts}) in {len(runs)} stored run(s) of {url}; run more, or lower "
            "--min-samples"
        )
    before = path.read_text(encoding="utf-8")
    after = before
    for ev in evidence:
        for key, value in ev.proposed.items():
            after = set_worker_field(after, ev.worker, key, _text(value))
    result = Calibration(path, url, len(runs), evidence, too_few, min_samples, before, after)
    if result.changed:
        _check(path, after, proj.root)
    return result


class _Samples:
    def __init__(self) -> None:
        self.runs: set[str] = set()
        self.calls = 0
        self.latency: list[Decimal] = []
        self.tokens: list[Decimal] = []
        self.credits: list[Decimal] = []

    def add(self, run_id: str, step: dict[str, Any]) -> None:
        attempts = int(step.get("attempts") or 0)
        if attempts < 1 or step.get("status") != "ok":
            return
        self.runs.add(run_id)
        self.calls += attempts
        usage = step.get("usage") or {}
        self.tokens.append(Decimal(int(usage.get("completion_tokens") or 0)))
        if attempts == 1:
            self.latency.append(Decimal(int(step.get("elapsed_ms") or 0)))
        if step.get("credits") is not None:
            self.credits.append(Decimal(str(step["credits"])) / attempts)


def _propose(name: str, worker: Any, got: _Samples) -> WorkerEvidence:
    ev = WorkerEvidence(name, worker.model, len(got.runs), got.calls)
    ev.current = {"p95_latency": worker.p95_latency, "max_tokens": worker.max_tokens}
    ev.current["credits"] = worker.credits
    ev.latency_ms = Spread.of(got.latency)
    latency = max(100, math.ceil(int(ev.latency_ms.p95) / 100) * 100)
    if latency != worker.p95_latency:
        ev.proposed["p95_latency"] = _duration(latency)
    if got.tokens:
        ev.completion_tokens = Spread.of(got.tokens)
        most = int(ev.completion_tokens.max)
        capped = worker.max_tokens is not None and most >= worker.max_tokens
        tokens = max(16, math.ceil(most / 16) * 16)
        if capped:
            ev.notes.append(
                f"calls reached max_tokens {worker.max_tokens}: kept (their answers were cut)"
            )
        elif tokens != worker.max_tokens:
            ev.proposed["max_tokens"] = tokens
    if got.credits:
        ev.credits_per_call = Spread.of(got.credits)
        credits = ev.credits_per_call.max.normalize()
        if credits != worker.credits:
            ev.proposed["credits"] = credits
    else:
        ev.notes.append("no provider receipts: credits stay the policy's estimate")
    return ev


def _duration(ms: int) -> str:
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _text(value: Any) -> str:
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return "null" if value is None else str(value)


def _check(path: Path, text: str, root: Path) -> None:
    """Refuse a proposal that `loomc check` would reject (where the current policy passes)."""
    from loomc.api.checking import check

    before = check(root, policy=path).errors
    with tempfile.NamedTemporaryFile(
        "w", suffix=path.suffix, prefix=".calibrated-", dir=path.parent, delete=False
    ) as fh:
        fh.write(text)
        candidate = Path(fh.name)
    try:
        result = check(root, policy=candidate)
    finally:
        candidate.unlink(missing_ok=True)
    if result.errors > before:
        found = [d for d in result.diagnostics if d.is_error][:3]
        raise CalibrationRefused(
            "the measured figures do not fit the policy's ceilings; `loomc check` would fail: "
            + "; ".join(f"{d.code}: {d.message}" for d in found)
        )


_KEY = re.compile(r"^(?P<indent>[ ]*)(?P<key>[A-Za-z0-9_.\-]+|\"[^\"]*\"|'[^']*'):(?P<rest>.*)$")


def set_worker_field(text: str, worker: str, key: str, value: str) -> str:
    """``text`` with ``workers.<worker>.<key>`` set to ``value``, every other line untouched.

    Handles block-style YAML (what `loomc init` writes and users usually keep): the field's line
    is replaced, or added at the end of the worker's block. Raises ``CalibrationRefused`` for a
    layout it cannot edit safely (a flow-style ``{...}`` worker)."""
    lines = text.splitlines(keepends=True)
    workers = _block(lines, 0, len(lines), "workers", 0)
    if workers is None:
        raise CalibrationRefused("the policy has no block-style `workers:` section to edit")
    start, end, indent = _child_indent(lines, *workers)
    found = _block(lines, start, end, worker, indent)
    if found is None:
        raise CalibrationRefused(
            f"worker {worker!r} is missing or written flow-style in the policy; edit it by hand"
        )
    w_start, w_end = found
    _, _, field_indent = _child_indent(lines, w_start, w_end)
    if field_indent <= indent:
        raise CalibrationRefused(f"worker {worker!r} is written flow-style; edit it by hand")
    newline = "\r\n" if "\r\n" in text else "\n"
    new_line = f"{' ' * field_indent}{key}: {value}{newline}"
    for i in range(w_start, w_end):
        m = _KEY.match(lines[i].rstrip("\r\n"))
        if m and len(m["indent"]) == field_indent and m["key"].strip("\"'") == key:
            lines[i] = new_line
            return "".join(lines)
    last = w_start - 1
    for i in range(w_start, w_end):
        if lines[i].strip() and not lines[i].lstrip().startswith("#"):
            last = i
    if not lines[last].endswith(("\n", "\r")):
        lines[last] += newline
    lines.insert(last + 1, new_line)
    return "".join(lines)


def _block(lines: list[str], start: int, end: int, key: str, indent: int) -> tuple[int, int] | None:
    """The lines under ``key:`` at ``indent`` (exclusive of the key's line), or None."""
    for i in range(start, end):
        m = _KEY.match(lines[i].rstrip("\r\n"))
        if not m or len(m["indent"]) != indent or m["key"].strip("\"'") != key:
            continue
        rest = m["rest"].split("#", 1)[0].strip()
        if rest:
            return None  # a value on the same line: flow style or a scalar
        j = i + 1
        while j < end:
            stripped = lines[j].strip()
            outdented = len(lines[j]) - len(lines[j].lstrip(" ")) <= indent
            if stripped and not stripped.startswith("#") and outdented:
                break
            j += 1
        return i + 1, j
    return None


def _child_indent(lines: list[str], start: int, end: int) -> tuple[int, int, int]:
    """The block and the indentation of its first key (-1 when it has none)."""
    for i in range(start, end):
        stripped = lines[i].strip()
        if stripped and not stripped.startswith("#"):
            return start, end, len(lines[i]) - len(lines[i].lstrip(" "))
    return start, end, -1
