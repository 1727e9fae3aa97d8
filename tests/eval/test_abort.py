"""An unexpected error in one cell cancels the cells in flight, keeps finished ones in the
journal, and ends the eval with one `EvalAborted` (one line from `loomc eval`, exit 1); once
the cause is gone, resuming finishes the matrix without paying a finished cell twice.

The failing provider is injected through the public API (``providers=``), not patched in."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import loomc
from loomc.providers.mock import MockProvider

ROOT = Path(__file__).resolve().parents[2]


class Faulty:
    """The policy's mock, except that case 'boom' raises a non-provider error after 0.2 s and
    the 'slow' cases hang; it records which calls finished and which were cancelled."""

    name = "mock"

    def __init__(self) -> None:
        self.inner = MockProvider("mock")
        self.finished: list[str] = []
        self.cancelled: list[str] = []

    async def complete(self, request: Any, on_event: Any = None) -> Any:
        text = request.messages[-1].content
        name = next(
            w.rstrip(".")
            for w in text.split()
            if w.rstrip(".").startswith(("fast", "slow", "boom"))
        )
        if name == "boom":
            await anyio.sleep(0.2)
            raise ZeroDivisionError("division by zero in a profiler")
        if name.startswith("slow"):
            try:
                await anyio.sleep(30)
            except BaseException:
                self.cancelled.append(name)
                raise
        out = await self.inner.complete(request, on_event)
        self.finished.append(name)
        return out

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_unexpected_cell_error_cancels_in_flight_and_resume_finishes(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    ids = ["fast1", "fast2", "boom", "slow1", "slow2", "slow3"]
    data.write_text("".join(json.dumps({"id": i, "prompt": f"Task {i}."}) + "\n" for i in ids))
    journal = tmp_path / "journal.jsonl"
    ev = loomc.prepare_eval(data, "lean", project=ROOT, concurrency=6)
    faulty = Faulty()
    started = time.monotonic()
    with pytest.raises(loomc.EvalAborted) as caught:
        ev.run(journal=journal, providers={"mock": faulty})
    assert time.monotonic() - started < 10  # the slow cells did not run to completion
    line = str(caught.value)
    assert "\n" not in line
    assert "case 'boom' x lean #0 failed: ZeroDivisionError: division by zero" in line
    assert "cancelled 3 in-flight run(s)" in line and "2 finished run(s)" in line
    assert sorted(faulty.cancelled) == ["slow1", "slow2", "slow3"]
    rows = [json.loads(x) for x in journal.read_text().splitlines()]
    kept = [r["case_id"] for r in rows if "ledger" not in r]  # cells, not reservations
    assert sorted(kept) == ["fast1", "fast2"] == sorted(faulty.finished)

    # the cause fixed (the policy's own mock), a resume runs only the unfinished cells
    receipt = ev.run(journal=journal, resume=True)
    rows = [json.loads(x) for x in journal.read_text().splitlines()]
    lines = [r["case_id"] for r in rows if "ledger" not in r]
    assert sorted(lines) == sorted(ids)  # each cell paid once
    assert len(receipt.runs) == 6
