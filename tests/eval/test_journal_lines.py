"""The journal's ledger lines are built as strings (the dict and the JSON encoder cost more than
the write); they must be the very bytes ``json.dumps`` wrote before, so journals written by
either version resume with the other."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.eval.journal import Journal
from loomc.exec.ledger import Reservation
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
