"""An eval's spend in one place: the workflow runs, the judge and the planners' own calls.

Everything here counted against the eval-wide ``--max-total-*`` ceilings, so the receipt's
``totals`` say what the eval spent against them: ``calls`` and ``tokens`` summed over the three,
``cost`` in USD (None when any part is unpriced: a sum that leaves out what it cannot price
would look lower than it was), each part beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from loomc.eval.records import RunRecord
from loomc.eval.runlog import RunLog
from loomc.eval.tally import Tally


def spend_totals(
    records: Sequence[RunRecord], planners: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """The receipt's ``totals`` (see the module docstring); ``planners`` is its summary."""
    tally = records.tally if isinstance(records, RunLog) else _tally(records)
    work_cost: Decimal | None = sum((s.cost for s in tally.per), Decimal(0))
    if not all(s.priced for s in tally.per):
        work_cost = None
    judge = tally.judge
    judge_cost = None if judge.unpriced else judge.cost
    parts: dict[str, dict[str, Any]] = {
        "workflow": {
            "calls": sum(s.calls for s in tally.per),
            "tokens": sum(s.tokens for s in tally.per),
            "cost": work_cost,
        },
        "judge": {"calls": judge.calls, "tokens": judge.tokens, "cost": judge_cost},
    }
    used = [p["usage"] for p in planners.values() if p.get("usage")]
    if used:
        costs = [u.get("cost") for u in used]
        parts["planner"] = {
            "calls": sum(int(u.get("calls", 0)) for u in used),
            "tokens": sum(int(u.get("tokens", 0)) for u in used),
            "cost": None if None in costs else sum((Decimal(str(c)) for c in costs), Decimal(0)),
        }
    costs = [p["cost"] for p in parts.values()]
    out: dict[str, Any] = {
        "calls": sum(p["calls"] for p in parts.values()),
        "tokens": sum(p["tokens"] for p in parts.values()),
        "cost": None if None in costs else str(sum(costs, Decimal(0))),
    }
    for name, part in parts.items():
        out[name] = {**part, "cost": None if part["cost"] is None else str(part["cost"])}
    return out


def _tally(records: Sequence[RunRecord]) -> Tally:
    tally = Tally()
    for r in records:
        tally.add(r)
    return tally
