"""Issue 16 (eval part): an eval's memory does not grow with its runs, the journal stays open
while it runs, and the receipt (its metrics and its JSON) is what aggregating the whole list of
records gives, bit for bit, even when runs finish out of order."""

from __future__ import annotations

import json
import os
import random
import tracemalloc
from pathlib import Path
from typing import Any

import anyio

import loomc
from loomc.eval.receipt import EvalReceipt, EvalSettings, build_receipt, receipt_json
from loomc.eval.records import RunRecord
from loomc.eval.runlog import RunLog
from loomc.eval.tally import Tally
from loomc.providers.mock import MockProvider
from loomc.report.render import render
from tests.eval import old_metrics
from tests.report.conftest import make_receipt

ROOT = Path(__file__).resolve().parents[2]


def _dataset(tmp: Path, cases: int, checks: bool = False) -> Path:
    rows = []
    for i in range(cases):
        row: dict[str, Any] = {"id": f"c{i}", "prompt": f"Name {i % 7 + 2} colours, case {i}."}
        if checks:
            row["checks"] = [{"type": "contains", "value": "colour"}]
            row["expected_escalation"] = i % 3 == 0
        rows.append(json.dumps(row) + "\n")
    path = tmp / f"cases{cases}.jsonl"
    path.write_text("".join(rows))
    return path


def _peak_kib(tmp: Path, iterations: int) -> float:
    """tracemalloc peak while an eval of 50 cases x 2 strategies x ``iterations`` runs (the
    plan, made before, is not counted), with an instant provider injected."""
    ev = loomc.prepare_eval(
        _dataset(tmp, 50), "baseline,lean", project=ROOT, iterations=iterations, concurrency=16
    )
    tracemalloc.start()
    try:
        receipt = ev.run(providers={"mock": MockProvider("mock")})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(receipt.runs) == 100 * iterations
    return peak / 1024


def test_eval_memory_does_not_grow_with_the_number_of_runs(tmp_path: Path) -> None:
    small = _peak_kib(tmp_path, 1)  # 100 runs
    large = _peak_kib(tmp_path, 4)  # 400 runs
    print(f"tracemalloc peak {small:.0f} KiB at 100 runs, {large:.0f} KiB at 400")
    # every record kept (and a task per job) made this ~3x; a run's slots are a few dozen bytes
    assert large < 1.5 * small, f"peak {small:.0f} KiB at 100 runs, {large:.0f} KiB at 400"


def _open_handles(path: Path) -> int:
    fds = Path("/proc/self/fd")
    count = 0
    for fd in fds.iterdir():
        try:
            count += os.readlink(fd) == str(path)
        except OSError:
            continue
    return count


def test_the_journal_stays_open_while_the_eval_runs_and_is_closed_after(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    seen: list[int] = []
    ev = loomc.prepare_eval(_dataset(tmp_path, 20), "lean", project=ROOT, concurrency=4)
    receipt = ev.run(journal=journal, on_done=lambda _r: seen.append(_open_handles(journal)))
    assert len(receipt.runs) == 20
    assert seen == [1] * 20  # one handle for the whole eval, not one per line
    assert _open_handles(journal) == 0
    lines = journal.read_text().splitlines()
    assert sum('"ledger":"reserve"' in x for x in lines) == 20  # every reservation still there
    assert sum('"case_id"' in x and '"ledger"' not in x for x in lines) == 20


class Shuffled:
    """The policy's mock answering after a random 0-20 ms, so runs finish out of order."""

    name = "mock"

    def __init__(self, seed: int) -> None:
        self.inner = MockProvider("mock")
        self.rng = random.Random(seed)

    async def complete(self, request: Any, on_event: Any = None) -> Any:
        await anyio.sleep(self.rng.random() / 50)
        return await self.inner.complete(request, on_event)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _aggregates(receipt: EvalReceipt) -> str:
    fields = {"models", "metrics", "deltas", "judge", "judge_cost_usd"}
    return json.dumps(receipt.model_dump(mode="json", include=fields), sort_keys=True)


def test_receipt_of_runs_finished_out_of_order_equals_aggregating_the_list(
    tmp_path: Path,
) -> None:
    ev = loomc.prepare_eval(
        _dataset(tmp_path, 30, checks=True),
        "baseline,lean,balanced",
        project=ROOT,
        iterations=3,
        concurrency=24,
    )
    finished: list[tuple[str, str, int]] = []
    receipt = ev.run(
        providers={"mock": Shuffled(7)},
        on_done=lambda r: finished.append((r.case_id, r.strategy, r.iteration)),
    )
    planned = [job.key for job in ev.jobs]
    assert finished != planned  # the runs did finish out of order
    assert [(r.case_id, r.strategy, r.iteration) for r in receipt.runs] == planned
    records = list(receipt.runs)
    assert receipt.runs[0] == records[0] and receipt.runs[-1] == records[-1]
    # the old list-based aggregation (tests/eval/old_metrics.py, the code before the change)
    metrics, deltas = old_metrics.compute(records)
    assert [m.model_dump() for m in receipt.metrics] == [m.model_dump() for m in metrics]
    assert [d.model_dump() for d in receipt.deltas] == [d.model_dump() for d in deltas]
    assert deltas and all(d.pairs == 90 for d in deltas)
    assert receipt.models == old_metrics.models(records)
    # a receipt built from the plain list is the same receipt
    again = build_receipt(records, receipt.settings, receipt.pricing)
    assert _aggregates(again) == _aggregates(receipt)


def test_golden_receipts_aggregate_as_the_old_code_did() -> None:
    for judged, iterations in ((True, 2), (False, 1), (True, 3)):
        receipt = make_receipt(judged=judged, iterations=iterations)
        records = list(receipt.runs)
        metrics, deltas = old_metrics.compute(records)
        assert [m.model_dump() for m in receipt.metrics] == [m.model_dump() for m in metrics]
        assert [d.model_dump() for d in receipt.deltas] == [d.model_dump() for d in deltas]
        old = old_metrics.judge_summary(records)
        assert (receipt.judge and receipt.judge.model_dump()) == (old and old.model_dump())
        # the same runs arriving last first, as they may at concurrency 128
        tally = Tally(len(records))
        for index in reversed(range(len(records))):
            tally.add(records[index], index)
        late_metrics, late_deltas = tally.metrics()
        assert [m.model_dump() for m in late_metrics] == [m.model_dump() for m in metrics]
        assert [d.model_dump() for d in late_deltas] == [d.model_dump() for d in deltas]


def test_receipt_json_written_run_by_run_is_byte_identical(tmp_path: Path) -> None:
    demo = make_receipt(judged=True, iterations=2)
    empty = build_receipt([], EvalSettings())
    for receipt in (demo, empty):
        assert "".join(receipt_json(receipt)) == receipt.model_dump_json(indent=2)
    ev = loomc.prepare_eval(_dataset(tmp_path, 12, checks=True), "baseline,lean", project=ROOT)
    spilled = ev.run()
    out = render(spilled, tmp_path / "r.json")
    materialized = spilled.model_copy(update={"runs": list(spilled.runs)})
    assert out.read_text() == materialized.model_dump_json(indent=2) + "\n"
    assert EvalReceipt.model_validate_json(out.read_text()).runs == list(spilled.runs)


def test_a_run_json_cannot_carry_is_kept_whole_in_the_log() -> None:
    """A record holding a lone surrogate (answers are kept with --include-answers) is spilled
    another way and read back as it was."""
    log = RunLog(3)
    odd = RunRecord(case_id="c\ud800", strategy="lean", iteration=0, answer="bad \ud800")
    log.add(1, odd)
    log.add(0, RunRecord(case_id="a", strategy="lean", iteration=0))
    assert [r.case_id for r in log] == ["a", "c\ud800"]
    assert log[1] == odd and log[-1] == odd and list(log.indices()) == [0, 1]
    log.close()


def test_runs_added_after_a_read_land_after_the_others() -> None:
    """Reading a run moves the spill file's position; the next run is still appended at the
    end (the log seeks back only after a read), so nothing is overwritten."""
    log = RunLog(4)
    log.add(2, RunRecord(case_id="c", strategy="lean", iteration=0))
    log.add(0, RunRecord(case_id="a", strategy="lean", iteration=0))
    assert log[0].case_id == "a" and log[1].case_id == "c"  # reads: the position moves
    log.add(3, RunRecord(case_id="d", strategy="lean", iteration=0))
    log.add(1, RunRecord(case_id="b", strategy="lean", iteration=0))
    assert [r.case_id for r in log] == ["a", "b", "c", "d"]
    assert log[2].case_id == "c" and log[-1].case_id == "d"
    log.close()
