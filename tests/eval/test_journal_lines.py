"""The journal's ledger lines are built as strings (the dict and the JSON encoder cost more than
the write); they must be the very bytes ``json.dumps`` wrote before, so journals written by
either version resume with the other. While an eval runs, the lines of one event-loop turn
leave together, but a reservation never waits: it is on disk before its request is sent."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.eval.journal import Journal
from loomc.exec.ledger import Reservation
from loomc.exec.result import StepRecord, StepStatus, trusted
from loomc.exec.state import CompletedStep
from loomc.providers.mock import MockProvider
from loomc.units import Usage

ints = st.integers(0, 10**12)
decimals = st.decimals(allow_nan=False, allow_infinity=False) | (
    st.sampled_from([Decimal(0), Decimal("0.00"), Decimal("-0"), Decimal("1E+3")])
)
usages = st.builds(Usage, calls=ints, tokens=ints, credits=decimals, cost=decimals, latency_ms=ints)
cells = st.tuples(st.text(max_size=12), st.text(max_size=12), st.integers(0, 99))


def _dumps(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=True)


@settings(max_examples=150, deadline=None)
@given(cell=cells, amount=usages, actual=usages, rid=st.none() | st.text(max_size=10))
def test_reserve_and_settle_lines_are_the_json_dumps_bytes(
    tmp_path_factory: object,
    cell: tuple[str, str, int],
    amount: Usage,
    actual: Usage,
    rid: str | None,
) -> None:
    path = Path(tmp_path_factory.mktemp("j")) / "j.jsonl"  # type: ignore[attr-defined]
    journal = Journal(path)
    reservation = Reservation(amount, [], id=rid)
    journal.hook(cell).reserved(reservation)
    journal.reserved(cell, reservation)
    journal.hook(cell).settled(reservation, actual)
    reserve = _dumps(
        {"ledger": "reserve", "id": reservation.id, "cell": list(cell), "amount": amount.to_json()}
    )
    settle = _dumps({"ledger": "settle", "id": reservation.id, "actual": actual.to_json()})
    assert path.read_text(encoding="utf-8").splitlines() == [reserve, reserve, settle]


@settings(max_examples=100, deadline=None)
@given(
    cell=cells,
    case_hash=st.text(max_size=16),
    step_id=st.text(min_size=1, max_size=8),
    booked=usages,
    peak=st.none() | usages,
)
def test_step_lines_are_the_json_dumps_bytes(
    tmp_path_factory: object,
    cell: tuple[str, str, int],
    case_hash: str,
    step_id: str,
    booked: Usage,
    peak: Usage | None,
) -> None:
    path = Path(tmp_path_factory.mktemp("j")) / "j.jsonl"  # type: ignore[attr-defined]
    record = trusted(
        StepRecord,
        id=step_id,
        role="writer",
        worker="w",
        model="mock/m",
        access=[],
        status=StepStatus.OK,
        output="an answer",
    )
    Journal(path).step(cell, CompletedStep(record, booked, peak), case_hash=case_hash)
    head = {"ledger": "step", "id": step_id, "cell": list(cell), "case_hash": case_hash}
    expected = _dumps(head)[:-1] + f',"record":{record.model_dump_json()},"booked":'
    expected += _dumps(booked.to_json())
    expected += "" if peak is None else f',"peak":{_dumps(peak.to_json())}'
    assert path.read_text(encoding="utf-8") == expected + "}\n"


def test_the_lines_of_one_turn_leave_together_and_a_reservation_takes_them_first(
    tmp_path: Path,
) -> None:
    """While an eval runs, a settlement (or a step, or a record) waits for the end of its
    event-loop turn; a reservation goes to disk at once, with every line before it, so nothing
    a request relies on is ever behind it."""
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    cell = ("c1", "lean", 0)
    first, second = (
        Reservation(Usage(calls=1), [], id="r1"),
        Reservation(Usage(calls=1), [], id="r2"),
    )

    def on_disk() -> list[str]:
        return [json.loads(line)["ledger"] + ":" + json.loads(line)["id"] for line in
                path.read_text(encoding="utf-8").splitlines()]  # fmt: skip

    async def main() -> None:
        with journal:
            journal.hook(cell).settled(first, Usage(calls=1))
            assert on_disk() == []  # waits for the turn's end
            journal.hook(cell).reserved(second)
            assert on_disk() == ["settle:r1", "reserve:r2"]  # in order, before any request
            journal.hook(cell).settled(second, Usage(calls=1))
            await anyio.lowlevel.checkpoint()  # the next turn: the line is out
            assert on_disk() == ["settle:r1", "reserve:r2", "settle:r2"]
            journal.hook(cell).settled(first, Usage(calls=2))
        assert on_disk()[-1] == "settle:r1"  # closing the journal writes what waits

    anyio.run(main)


def test_every_request_of_an_eval_finds_its_reservation_on_disk(tmp_path: Path) -> None:
    """End to end, at concurrency: when a provider receives a request, the journal file already
    holds one reservation per request sent so far (this one included)."""
    import loomc

    journal = tmp_path / "journal.jsonl"
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"id": f"c{i}", "prompt": f"Name {i} colours."}) + "\n"
                            for i in range(24)))  # fmt: skip
    seen: list[tuple[int, int]] = []

    class Checking:
        name = "mock"

        def __init__(self) -> None:
            self.inner = MockProvider("mock")
            self.sent = 0

        async def complete(self, request: Any, on_event: Any = None) -> Any:
            self.sent += 1
            text = journal.read_text(encoding="utf-8")
            seen.append((self.sent, text.count('"ledger":"reserve"')))
            await anyio.sleep(0.001)
            return await self.inner.complete(request, on_event)

        async def aclose(self) -> None:
            await self.inner.aclose()

    root = Path(__file__).resolve().parents[2]
    receipt = loomc.prepare_eval(data, "lean,fixed", project=root, concurrency=8).run(
        journal=journal, providers={"mock": Checking()}
    )
    assert len(receipt.runs) == 48 and len(seen) > 48  # `fixed` makes several calls per run
    assert all(reserved >= sent for sent, reserved in seen)


texts = st.text(max_size=20)  # lone surrogates and non-ASCII included


@settings(max_examples=200, deadline=None)
@given(
    prompt=texts,
    rubric=st.none() | texts,
    pipeline=st.none() | texts,
    difficulty=st.none() | texts,
    expected=st.none() | st.booleans(),
    compiled=texts,
)
def test_the_case_hash_is_the_hash_of_the_json_dumps_bytes(
    prompt: str,
    rubric: str | None,
    pipeline: str | None,
    difficulty: str | None,
    expected: bool | None,
    compiled: str,
) -> None:
    """A case without checks is hashed over text built directly: the very bytes
    ``json.dumps(sort_keys=True)`` wrote, so every journal written before resumes unchanged."""
    import hashlib

    from loomc.eval.dataset import Case
    from loomc.eval.journal import case_hash

    case = Case(id="c", prompt=prompt, pipeline=pipeline, difficulty=difficulty, rubric=rubric,
                expected_escalation=expected)  # fmt: skip
    canonical = {
        "prompt": prompt,
        "checks": [],
        "rubric": rubric,
        "pipeline": pipeline,
        "compiled": compiled,
        "expected_escalation": expected,
        "difficulty": difficulty,
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), default=str)
    expected_hash = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    assert case_hash(case, compiled) == expected_hash
