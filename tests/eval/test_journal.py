"""The eval journal across interruptions: reservations journaled before their requests count as
spent on resume (a call in flight at a kill is never forgotten), a torn last line is cut before
the next append (so it never swallows a record), and a case edited since it was journaled is run
again, with a notice, instead of reusing its stale result."""

from __future__ import annotations

import json
from collections import Counter
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
    ev.run(journal=journal, resume=True, providers={"mock": provider})
    assert sum(provider.prompts.values()) == 1  # only c5, once
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
