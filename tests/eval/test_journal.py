"""The eval journal across interruptions: reservations journaled before their requests count as
spent on resume (a call in flight at a kill is never forgotten), a torn last line is cut before
the next append (so it never swallows a record), and a case edited since it was journaled is run
again, with a notice, instead of reusing its stale result."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import loomc
from loomc.eval.journal import Journal
from loomc.exec.ledger import Reservation
from loomc.providers.mock import MockProvider
from loomc.units import Usage

ROOT = Path(__file__).resolve().parents[2]


class Counting:
    """The policy's mock provider, counting the calls made per case prompt."""

    name = "mock"

    def __init__(self) -> None:
        self.inner = MockProvider("mock")
        self.prompts: Counter[str] = Counter()

    async def complete(self, request: Any, on_event: Any = None) -> Any:
        self.prompts[request.messages[-1].content.split("\n")[-1]] += 1
        return await self.inner.complete(request, on_event)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _dataset(path: Path, prompts: dict[str, str]) -> Path:
    path.write_text(
        "".join(
            json.dumps({"id": k, "prompt": v, "checks": [{"type": "contains", "value": "answer"}]})
            + "\n"
            for k, v in prompts.items()
        )
    )
    return path


PROMPTS = {f"c{i}": f"Name {i + 2} colours." for i in range(6)}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_calls_in_flight_at_a_kill_count_against_the_eval_wide_ceiling(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "d.jsonl", PROMPTS)
    journal = tmp_path / "j.jsonl"
    book = Journal(journal)
    for i in range(3):  # three requests reserved (and maybe sent) by a process then killed
        book.reserved(("c0", "lean", 0), Reservation(Usage(calls=1), [], id=f"r{i}"))
    ev = loomc.prepare_eval(data, "lean", project=ROOT, concurrency=2)
    provider = Counting()
    notices: list[str] = []
    receipt = ev.run(
        journal=journal,
        resume=True,
        totals=loomc.Budget(calls=5),
        providers={"mock": provider},
        on_notice=notices.append,
    )
    assert sum(provider.prompts.values()) == 2  # 5 - the 3 that may have been sent
    assert sum(r.status == "ok" for r in receipt.runs) == 2
    assert any("3 call(s) were in flight" in n for n in notices)
    reserved = [r for r in _rows(journal) if r.get("ledger") == "reserve"]
    settled = {r["id"] for r in _rows(journal) if r.get("ledger") == "settle"}
    assert len(reserved) == 5 and len(settled) == 2  # every request journaled before it went


def test_a_torn_last_line_is_cut_before_the_next_record(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "d.jsonl", PROMPTS)
    journal = tmp_path / "j.jsonl"
    ev = loomc.prepare_eval(data, "lean", project=ROOT, concurrency=1)
    ev.run(journal=journal)
    lines = journal.read_text().splitlines(keepends=True)
    cells = [i for i, ln in enumerate(lines) if '"case_id":"c5"' in ln]
    assert cells
    torn = "".join(lines[: cells[-1]]) + lines[cells[-1]][:40]  # killed while writing c5
    journal.write_text(torn)

    provider = Counting()
    first = ev.run(journal=journal, resume=True, providers={"mock": provider})
    # c5's only step completed (journaled) before the kill: c5 is finished from it, unpaid
    assert sum(provider.prompts.values()) == 0
    c5 = next(r for r in first.runs if r.case_id == "c5")
    assert c5.status == "ok" and c5.result is not None and c5.result.calls == 1
    assert c5.checks_passed
    again = Counting()
    receipt = ev.run(journal=journal, resume=True, providers={"mock": again})
    assert sum(again.prompts.values()) == 0  # the new c5 record is readable: never paid again
    assert len(receipt.runs) == 6
    for line in journal.read_text().splitlines():
        json.loads(line)  # every line whole


def test_an_edited_case_is_run_again_and_the_resume_says_so(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "d.jsonl", PROMPTS)
    journal = tmp_path / "j.jsonl"
    loomc.prepare_eval(data, "lean", project=ROOT).run(journal=journal)
    edited = {**PROMPTS, "c2": "Name nine colours, as an answer."}
    _dataset(data, edited)
    ev = loomc.prepare_eval(data, "lean", project=ROOT)
    provider = Counting()
    notices: list[str] = []
    receipt = ev.run(
        journal=journal, resume=True, providers={"mock": provider}, on_notice=notices.append
    )
    assert sum(provider.prompts.values()) == 1
    assert notices == ["1 case(s) changed since they were journaled ('c2'): re-running 1 cell(s)"]
    c2 = next(r for r in receipt.runs if r.case_id == "c2")
    assert c2.result is not None and c2.result.calls == 1
    # checks edited, prompt kept: also stale
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    rows[4]["checks"] = [{"type": "contains", "value": "colour"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    third = Counting()
    loomc.prepare_eval(data, "lean", project=ROOT).run(
        journal=journal, resume=True, providers={"mock": third}
    )
    assert sum(third.prompts.values()) == 1
    # nothing changed: nothing is run
    fourth = Counting()
    loomc.prepare_eval(data, "lean", project=ROOT).run(
        journal=journal, resume=True, providers={"mock": fourth}
    )
    assert sum(fourth.prompts.values()) == 0


KILLED_AT_DRAFT = """
import os, signal, sys
from pathlib import Path
import loomc
from loomc.providers.mock import MockProvider

class KillAtDraft:
    name = "mock"
    def __init__(self):
        self.inner = MockProvider("mock")
    async def complete(self, request, on_event=None):
        with open(sys.argv[3], "a") as fh:  # what a counting server would have seen
            fh.write(request.step_role + "\\n")
        if request.step_role == sys.argv[5]:  # killed with this step in flight
            os.kill(os.getpid(), signal.SIGKILL)
        return await self.inner.complete(request, on_event)
    async def aclose(self):
        await self.inner.aclose()

ev = loomc.prepare_eval(Path(sys.argv[1]), "fixed", project=Path(sys.argv[4]))
ev.run(journal=Path(sys.argv[2]), totals=loomc.Budget(calls=5), providers={"mock": KillAtDraft()})
"""


class ByStep(Counting):
    """Counts the requests per step role."""

    def __init__(self) -> None:
        super().__init__()
        self.roles: Counter[str] = Counter()

    async def complete(self, request: Any, on_event: Any = None) -> Any:
        self.roles[request.step_role] += 1
        return await super().complete(request, on_event)


def _killed_at_draft(tmp_path: Path, role: str = "drafter") -> tuple[Path, Path, Path]:
    """A one-case ``fixed`` eval SIGKILLed (in its own process) while its ``role`` step is in
    flight (the draft: the route step answered and paid); returns the dataset, the journal and
    what was sent."""
    data = _dataset(tmp_path / "d.jsonl", {"c0": PROMPTS["c0"]})
    journal, seen = tmp_path / "j.jsonl", tmp_path / "seen.txt"
    script = tmp_path / "killed.py"
    script.write_text(KILLED_AT_DRAFT)
    proc = subprocess.run(
        [sys.executable, str(script), str(data), str(journal), str(seen), str(ROOT), role],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    sent = seen.read_text().split()
    assert sent[-1] == role and len(sent) == len(set(sent))  # the earlier steps paid once
    return data, journal, seen


def test_a_cell_killed_mid_run_resumes_without_paying_its_completed_steps_again(
    tmp_path: Path,
) -> None:
    data, journal, seen = _killed_at_draft(tmp_path)
    assert seen.read_text().split() == ["router", "drafter"]  # route paid, draft in flight

    provider = ByStep()
    notices: list[str] = []
    receipt = loomc.prepare_eval(data, "fixed", project=ROOT).run(
        journal=journal,
        resume=True,
        # route + the draft in flight + the 3 steps left: booking the route again in the
        # eval-wide ledger would stop the cell short of its final step
        totals=loomc.Budget(calls=5),
        providers={"mock": provider},
        on_notice=notices.append,
    )
    assert provider.roles["router"] == 0  # the completed step is never sent again
    assert dict(provider.roles) == {"drafter": 1, "critic": 1, "finalizer": 1}
    assert len(seen.read_text().split()) + sum(provider.roles.values()) <= 5  # the ceiling
    assert any("1 call(s) were in flight" in n for n in notices)
    (run,) = receipt.runs
    assert run.status == "ok" and run.result is not None
    assert run.result.stop_reason == "completed"
    assert [s.status for s in run.result.steps] == ["ok"] * 4
    assert run.result.calls == 4 and run.result.budget.used.calls == 4  # route counts for it
    assert run.checks_passed  # the answer is whole
    # an uninterrupted run of the same cell hashes the same receipt
    whole = loomc.prepare_eval(data, "fixed", project=ROOT).run(providers={"mock": ByStep()})
    assert whole.runs[0].result is not None
    assert whole.runs[0].result.receipt_hash == run.result.receipt_hash


def test_a_resumed_cell_reports_the_peak_its_first_process_reached(tmp_path: Path) -> None:
    """The receipt's ``reserved_peak`` is the run ledger's peak over both processes: steps
    carried from the journal bring the peak they reached, so a cell killed after its last step
    was journaled but before its record was resumes to the receipt of an uninterrupted run."""
    data = _dataset(tmp_path / "d.jsonl", {"c0": PROMPTS["c0"]})
    journal = tmp_path / "j.jsonl"
    whole = loomc.prepare_eval(data, "fixed", project=ROOT).run(
        journal=journal, providers={"mock": ByStep()}
    )
    lines = journal.read_text().splitlines(keepends=True)
    assert "ledger" not in json.loads(lines[-1])  # the finished cell's record, written last
    journal.write_text("".join(lines[:-1]))  # killed just before it was written

    provider = ByStep()
    receipt = loomc.prepare_eval(data, "fixed", project=ROOT).run(
        journal=journal, resume=True, providers={"mock": provider}
    )
    assert sum(provider.roles.values()) == 0  # every step was carried, none sent again
    resumed, uninterrupted = receipt.runs[0].result, whole.runs[0].result
    assert resumed is not None and uninterrupted is not None
    untimed = {"latency_ms": 0}  # wall time differs between processes; the books do not
    assert replace(resumed.budget.reserved_peak, **untimed) == replace(
        uninterrupted.budget.reserved_peak, **untimed
    )
    assert resumed.budget.reserved_peak.tokens > resumed.budget.used.tokens
    assert resumed.receipt_hash == uninterrupted.receipt_hash


def test_completed_steps_of_an_edited_case_are_not_reused(tmp_path: Path) -> None:
    data, journal, _ = _killed_at_draft(tmp_path)
    _dataset(data, {"c0": "Name seven colours, as an answer."})
    provider = ByStep()
    receipt = loomc.prepare_eval(data, "fixed", project=ROOT).run(
        journal=journal, resume=True, providers={"mock": provider}
    )
    assert dict(provider.roles) == {"router": 1, "drafter": 1, "critic": 1, "finalizer": 1}
    (run,) = receipt.runs
    assert run.result is not None and run.result.calls == 4


def test_unreadable_step_lines_are_ignored(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    good = {"id": "route", "role": "router", "worker": "w", "model": "m", "status": "ok"}
    lines = [
        {
            "ledger": "step",
            "id": "route",
            "cell": ["c0", "fixed", 0],
            "case_hash": "h",
            "record": {"id": 3},
        },
        {
            "ledger": "step",
            "id": "route",
            "cell": ["c0"],
            "case_hash": "h",
            "record": {**good, "output": "x"},
        },
        {
            "ledger": "step",
            "id": "route",
            "cell": ["c0", "fixed", 0],
            "case_hash": "h",
            "record": good,
        },
        {
            "ledger": "step",
            "id": "other",
            "cell": ["c0", "fixed", 0],
            "case_hash": "h",
            "record": {**good, "output": "x"},
        },
        {
            "ledger": "step",
            "id": "route",
            "cell": ["c0", "fixed", 0],
            "case_hash": "h",
            "record": {**good, "status": "failed", "output": "x"},
        },
        {
            "ledger": "step",
            "id": "route",
            "cell": ["c1", "fixed", "zero"],
            "case_hash": "h",
            "record": {**good, "output": "x"},
        },
    ]
    journal.write_text("".join(json.dumps(x) + "\n" for x in lines))
    book = Journal(journal)
    assert book.load() == {} and book.steps == {} and book.spent == Usage()
    ok = {
        "ledger": "step",
        "id": "route",
        "cell": ["c0", "fixed", 0],
        "case_hash": "h",
        "record": {**good, "output": "x"},
        "booked": {"calls": 1, "tokens": -5},
    }
    journal.write_text(journal.read_text() + json.dumps(ok) + "\n")
    book.load()
    (done,) = book.completed(("c0", "fixed", 0), "h").values()
    assert done.record.output == "x" and done.booked == Usage(calls=1)
    assert book.completed(("c0", "fixed", 0), "other") == {}
