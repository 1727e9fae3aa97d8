"""The eval journal: an append-only JSONL next to the output that makes a killed eval resumable
without overshooting its eval-wide ceiling or paying a finished cell twice.

Five kinds of line; a SIGKILL keeps everything flushed. While an eval runs (``with journal:``)
the file stays open for appending (reopening it for every line cost a system call or three per
reservation) and the lines of one event-loop turn leave in one write and one flush, at the end of
the turn or, at the latest, with the next reservation: a reservation is flushed, with every line
before it, before its request is sent. So a kill can lose only lines of the turn it struck (as
it could lose the line being written before), never a line that a later request relied on: the
ceiling is never passed, and a completed step or cell is re-run only if the kill struck in the
very turn it completed. Four lines per run, each flushed alone, cost more than the rest of an
eval's bookkeeping.

- a **reservation**, written *before* its request is sent: ``{"ledger": "reserve", "id", "cell",
  "amount"}``;
- its **settlement**, written after the call was reconciled: ``{"ledger": "settle", "id",
  "actual"}``;
- a **completed step** of a cell still running, written before any step that depends on it
  starts: ``{"ledger": "step", "id", "cell", "case_hash", "record", "booked", "peak"}`` (the
  step's record, its output text included, what the ledger booked for it, its settlements
  already journaled, and the run ledger's peak so far, which the resumed receipt reports);
  a resume gives these to the executor as done, so a cell killed mid-run never pays a completed
  step again;
- a **plan** of a ``conductor:PLANNER`` cell, written before any cell runs: ``{"ledger":
  "plan", "case", "strategy", "plan_hash", "decision"}`` (the guard's decision, the planner's
  raw proposal and what its calls cost included); a resume decides that case again from the
  journaled proposal, through the guard, instead of asking the planner (a served planner's call
  is paid), as long as the case, the planner and its options hash the same (``plan_hash``);
- a **finished cell**: the ``RunRecord`` itself, with the ``case_hash`` of the case it ran
  (prompt, checks, rubric, pipeline, expectations) so that a resume re-runs a cell whose case
  was edited instead of reusing a stale result.

On resume, everything the journal says may have been spent counts against the eval-wide
ceiling: settled calls at what they were reconciled to, and a reservation without settlement
(a call in flight at the kill, which the server may have seen and billed) at its full worst
case. Lines written by earlier versions (bare records, no ledger lines) count at the usage they
record. A torn last line is cut off before anything is appended, so it never swallows the next
record.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from json.encoder import encode_basestring_ascii as _str
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from pydantic_core import PydanticSerializationError

from loomc.eval.dataset import Case
from loomc.eval.records import RunRecord
from loomc.exec.ledger import Reservation
from loomc.exec.result import StepRecord, StepStatus
from loomc.exec.state import CompletedStep
from loomc.units import Usage

Cell = tuple[str, str, int]  # case id, strategy name, iteration


def case_hash(case: Case, pipeline: str) -> str:
    """What a cell's result depends on in its case, hashed (``pipeline``: the compiled
    pipeline x tier key the cell ran)."""
    fields = (case.prompt, case.rubric, case.pipeline, pipeline, case.difficulty)
    if not case.checks and all(v is None or type(v) is str for v in fields):
        text = _case_json(case, pipeline)  # a case without checks (most): built directly
    else:
        canonical = {
            "prompt": case.prompt,
            "checks": list(case.checks),
            "rubric": case.rubric,
            "pipeline": case.pipeline,
            "compiled": pipeline,
            "expected_escalation": case.expected_escalation,
            "difficulty": case.difficulty,
        }
        text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


_JSON_SCALARS: dict[object, str] = {None: "null", True: "true", False: "false"}


def _case_json(case: Case, pipeline: str) -> str:
    """What ``case_hash``'s ``json.dumps(sort_keys=True, separators=(",", ":"))`` writes for a
    case without checks whose text fields are str or None, built directly (keys in sorted
    order): the hash is taken once per cell, and the encoder cost more than the hash."""

    def text(value: str | None) -> str:
        return "null" if value is None else _str(value)

    escalation = case.expected_escalation
    return (
        f'{{"checks":[],"compiled":{text(pipeline)},"difficulty":{text(case.difficulty)},'
        f'"expected_escalation":{_JSON_SCALARS.get(escalation) or json.dumps(escalation)},'
        f'"pipeline":{text(case.pipeline)},"prompt":{text(case.prompt)},'
        f'"rubric":{text(case.rubric)}}}'
    )


def plan_hash(case: Case, planner: str, semantic: bool, options: Mapping[str, Any]) -> str:
    """What a conductor cell's plan depends on besides the policy (which the guard re-checks
    on a resume): the case's prompt and pipeline, the planner, its profiler and options."""
    canonical = {
        "prompt": case.prompt,
        "pipeline": case.pipeline,
        "planner": planner,
        "semantic": semantic,
        "options": {k: options[k] for k in sorted(options)},
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def journaled_plans(path: Path) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    """(case id, strategy) → (plan hash, decision) of the plan lines in the journal at ``path``
    (the last line per cell wins); empty when there is none."""
    plans: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    if not path.exists():
        return plans
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"ledger":"plan"' not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        case, strategy, digest, decision = (
            obj.get(k) for k in ("case", "strategy", "plan_hash", "decision")
        )
        if all(isinstance(v, str) for v in (case, strategy, digest)) and isinstance(decision, dict):
            plans[(case, strategy)] = (digest, decision)
    return plans


@dataclass
class Journal:
    """JSONL of reservations, settlements and finished cells (see the module docstring)."""

    path: Path
    spent: Usage = field(default_factory=Usage)  # what the journal says may have been spent
    in_flight: int = 0  # reservations never settled (calls in flight at a kill)
    hashes: dict[Cell, str | None] = field(default_factory=dict)  # None: an old line, no hash
    # completed steps of cells not finished, with the case hash they ran under
    steps: dict[Cell, dict[str, tuple[str, CompletedStep]]] = field(default_factory=dict)
    _handle: IO[str] | None = field(default=None, init=False, repr=False, compare=False)
    # lines written since the last flush, and whether a flush at the turn's end is scheduled
    _pending: list[str] = field(default_factory=list, init=False, repr=False, compare=False)
    _scheduled: bool = field(default=False, init=False, repr=False, compare=False)
    # the last reservation amount journaled, and its JSON (Usage is frozen: same object, same JSON)
    _amount: Usage | None = field(default=None, init=False, repr=False, compare=False)
    _amount_json: str = field(default="", init=False, repr=False, compare=False)

    def __enter__(self) -> Journal:
        """Keep the file open for appending until ``__exit__`` (load or repair it first)."""
        if self._handle is None:
            self._handle = self.path.open("a", encoding="utf-8")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._handle is not None:
            self._drain()
            handle, self._handle = self._handle, None
            handle.close()

    def load(self) -> dict[Cell, RunRecord]:
        """Finished cells (the last line per cell wins; budget-stopped ones are not finished);
        also sets ``spent``, ``in_flight``, ``hashes`` and ``steps``. Repairs a torn last line first."""
        self.repair()
        self.spent, self.in_flight, self.hashes, self.steps = Usage(), 0, {}, {}
        done: dict[Cell, RunRecord] = {}
        if not self.path.exists():
            return done
        reserved: dict[str, Usage] = {}
        settled: dict[str, Usage] = {}
        legacy = Usage()
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue  # a line torn by an older loomc, followed by more lines
            if not isinstance(obj, dict):
                continue
            kind = obj.get("ledger")
            if kind == "reserve" and isinstance(obj.get("id"), str):
                reserved[obj["id"]] = _usage(obj.get("amount"))
                continue
            if kind == "settle" and isinstance(obj.get("id"), str):
                settled[obj["id"]] = _usage(obj.get("actual"))
                continue
            if kind == "step" and isinstance(obj.get("id"), str):
                self._step(obj)
                continue
            if kind == "plan":  # read by `journaled_plans` before the eval is planned
                continue
            digest = obj.pop("case_hash", None)
            try:
                record = RunRecord.model_validate(obj)
            except ValueError:
                continue
            cell = (record.case_id, record.strategy, record.iteration)
            if digest is None and record.result is not None:
                legacy = legacy + usage_of(record)  # its calls have no ledger lines
            if record.status != "budget-stopped":
                done[cell] = record
                self.hashes[cell] = digest if isinstance(digest, str) else None
        for cell in done:
            self.steps.pop(cell, None)
        unsettled = [amount for rid, amount in reserved.items() if rid not in settled]
        self.in_flight = len(unsettled)
        self.spent = sum((*settled.values(), *unsettled), legacy)
        return done

    def completed(self, cell: Cell, digest: str) -> dict[str, CompletedStep]:
        """The steps of ``cell`` completed before a kill, under the same case (``digest``)."""
        return {sid: done for sid, (h, done) in self.steps.get(cell, {}).items() if h == digest}

    def _step(self, obj: dict[str, Any]) -> None:
        cell = obj.get("cell")
        if not (
            isinstance(cell, list) and len(cell) == 3 and isinstance(obj.get("case_hash"), str)
        ):
            return
        try:
            record = StepRecord.model_validate(obj.get("record"))
            key: Cell = (str(cell[0]), str(cell[1]), int(cell[2]))
        except (ValueError, TypeError):
            return
        if record.status is StepStatus.OK and record.output is not None and record.id == obj["id"]:
            peak = _usage(obj["peak"]) if isinstance(obj.get("peak"), dict) else None
            done = CompletedStep(record, _usage(obj.get("booked")), peak)
            self.steps.setdefault(key, {})[record.id] = (obj["case_hash"], done)

    def step(self, cell: Cell, done: CompletedStep, case_hash: str) -> None:
        """Journal a step of ``cell`` that completed (its output included), before its
        dependents start."""
        try:  # pydantic's serializer: a quarter of the time of model_dump + json.dumps
            record = done.record.model_dump_json()
        except PydanticSerializationError:  # a lone surrogate in the output: escape it
            record = json.dumps(done.record.model_dump(mode="json"), ensure_ascii=True)
        # the bytes json.dumps(..., separators=(",", ":"), ensure_ascii=True) wrote, built directly
        head = (
            f'{{"ledger":"step","id":{_str(done.record.id)},"cell":{_cell_json(cell)},'
            f'"case_hash":{_str(case_hash)}'
        )
        booked = _usage_json(done.booked)
        peak = "" if done.peak is None else f',"peak":{_usage_json(done.peak)}'
        self._write(f'{head},"record":{record},"booked":{booked}{peak}}}')

    def repair(self) -> None:
        """Cut a torn last line (one without its newline) so the next append starts clean."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.path.open("rb+") as fh:
                fh.truncate(data.rfind(b"\n") + 1)

    def append(self, record: RunRecord, case_hash: str | None = None) -> str:
        """Journal a finished (or budget-stopped) cell, with its case's hash when known; returns
        the record's JSON (without the hash) so the caller need not serialize it again."""
        text = record.model_dump_json()
        self._write(text if case_hash is None else text[:-1] + f',"case_hash":"{case_hash}"}}')
        return text

    def plan(self, case_id: str, strategy: str, digest: str, decision: dict[str, Any]) -> None:
        """Journal a conductor cell's plan (see ``journaled_plans``)."""
        line = {
            "ledger": "plan",
            "case": case_id,
            "strategy": strategy,
            "plan_hash": digest,
            "decision": decision,
        }
        self._write(json.dumps(line, separators=(",", ":"), ensure_ascii=True, default=str))

    def reserved(self, cell: Cell, reservation: Reservation) -> None:
        self._reserved(_cell_json(cell), reservation)

    def _reserved(self, cell_json: str, reservation: Reservation) -> None:
        # the bytes json.dumps(..., separators=(",", ":"), ensure_ascii=True) wrote, built
        # directly: two lines per call, and the dict and encoder cost more than the write
        amount = reservation.amount
        if amount is not self._amount:  # a step reserves the same Usage object every run
            self._amount, self._amount_json = amount, _usage_json(amount)
        self._write(
            f'{{"ledger":"reserve","id":{_str(reservation.id)},"cell":{cell_json},'
            f'"amount":{self._amount_json}}}',
            urgent=True,  # on disk, with every line before it, before the request is sent
        )

    def settled(self, reservation: Reservation, actual: Usage) -> None:
        self._write(
            f'{{"ledger":"settle","id":{_str(reservation.id)},"actual":{_usage_json(actual)}}}'
        )

    def hook(self, cell: Cell) -> CellHook:
        """The ledger hook that journals the reservations of one cell."""
        return CellHook(self, cell, _cell_json(cell))

    def _write(self, line: str, urgent: bool = False) -> None:
        """Append ``line``. While the eval runs, lines wait in ``_pending`` for one write and
        one flush: the next ``urgent`` line's (a reservation, which must be on disk before its
        request is sent, so nothing journaled before a request is ever sent after it) or the
        end of this event-loop turn's, whichever comes first."""
        if self._handle is None:
            with self.path.open("a", encoding="utf-8") as fh:  # outside an eval (tests, tools)
                fh.write(line + "\n")
                fh.flush()
            return
        self._pending.append(line)
        if urgent:
            self._drain()
        elif not self._scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no asyncio loop here (trio, or plain code): write it now
                self._drain()
                return
            self._scheduled = True
            loop.call_soon(self._drain)  # runs before anything else of the next turn

    def _drain(self) -> None:
        """Write the pending lines in one write and one flush (a SIGKILL keeps them)."""
        self._scheduled = False
        if self._pending and self._handle is not None:
            lines, self._pending = self._pending, []
            self._handle.write("\n".join(lines) + "\n")
            self._handle.flush()


@dataclass(frozen=True)
class CellHook:
    """Journals each reservation of one cell before its request is sent, and its settlement."""

    journal: Journal
    cell: Cell
    cell_json: str = ""  # the cell as the journal writes it, encoded once

    def reserved(self, reservation: Reservation) -> None:
        self.journal._reserved(self.cell_json or _cell_json(self.cell), reservation)

    def settled(self, reservation: Reservation, actual: Usage) -> None:
        self.journal.settled(reservation, actual)


def _cell_json(cell: Cell) -> str:
    """``json.dumps(list(cell), separators=(",", ":"), ensure_ascii=True)``, built directly."""
    case, strategy, iteration = cell
    return f"[{_str(case)},{_str(strategy)},{int.__repr__(iteration)}]"


def _usage_json(usage: Usage) -> str:
    """``json.dumps(usage.to_json(), separators=(",", ":"))``, built directly: a decimal's
    ``str`` never needs escaping."""
    return (
        f'{{"calls":{int(usage.calls)},"tokens":{int(usage.tokens)},"credits":"{usage.credits}",'
        f'"cost":"{usage.cost}","latency_ms":{int(usage.latency_ms)}}}'
    )


def usage_of(record: RunRecord) -> Usage:
    """What a journaled run (and its judging) spent, workflow and judge together."""
    assert record.result is not None
    used = record.result.budget.used
    usage = Usage(calls=used.calls, tokens=used.tokens, credits=used.credits, cost=used.cost)
    v = record.judge
    if v is not None and v.calls:
        credits = v.credits if v.credits is not None else v.usage.get("estimated_credits", "0")
        usage = usage + Usage(
            calls=v.calls,
            tokens=int(v.usage.get("total_tokens", 0)),
            credits=_decimal(credits),
            cost=v.cost if v.cost is not None else Decimal(0),
        )
    return usage


def _usage(obj: Any) -> Usage:
    """A usage from a ledger line; unreadable axes count 0 (the line was written by us)."""
    if not isinstance(obj, dict):
        return Usage()
    return Usage(
        calls=_int(obj.get("calls")),
        tokens=_int(obj.get("tokens")),
        credits=_decimal(obj.get("credits")),
        cost=_decimal(obj.get("cost")),
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _decimal(value: Any) -> Decimal:
    try:
        out = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return Decimal(0)
    return out if out.is_finite() and out > 0 else Decimal(0)
