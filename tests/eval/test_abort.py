"""An unexpected error in one cell cancels the cells in flight, keeps finished ones in the
journal, and ends `loomc eval` with exit 1 and a one-line message (no traceback)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import loomc.eval.runner as runner
from loomc.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_unexpected_cell_error_cancels_in_flight_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    data = tmp_path / "d.jsonl"
    ids = ["fast1", "fast2", "boom", "slow1", "slow2", "slow3"]
    data.write_text("".join(json.dumps({"id": i, "prompt": f"Task {i}."}) + "\n" for i in ids))
    real = runner.execute
    cancelled: list[str] = []
    finished: list[str] = []

    async def fake_execute(pipeline: Any, prompt: str, **kw: Any) -> Any:
        name = prompt.split()[1].rstrip(".")
        if name == "boom":
            await anyio.sleep(0.2)
            raise ZeroDivisionError("division by zero in a profiler")
        if name.startswith("slow"):
            try:
                await anyio.sleep(30)
            except BaseException:
                cancelled.append(name)
                raise
        result = await real(pipeline, prompt, **kw)
        finished.append(name)
        return result

    monkeypatch.setattr(runner, "execute", fake_execute)
    out = tmp_path / "r.json"
    started = time.monotonic()
    rc = main(["eval", "--dataset", str(data), "--strategies", "lean", "--concurrency", "6",
               "--output", str(out)])
    assert rc == 1
    assert time.monotonic() - started < 10  # the slow cells did not run to completion
    err = capsys.readouterr().err
    assert "Traceback" not in err
    line = next(x for x in err.splitlines() if x.startswith("loomc eval: aborted:"))
    assert "case 'boom' x lean #0 failed: ZeroDivisionError: division by zero" in line
    assert "cancelled 3 in-flight run(s)" in line and "2 finished run(s)" in line
    assert "--resume" in line
    assert sorted(cancelled) == ["slow1", "slow2", "slow3"]
    assert not out.exists()  # no receipt from a failed matrix
    journal = out.with_name(out.name + ".journal.jsonl")
    kept = [json.loads(x)["case_id"] for x in journal.read_text().splitlines()]
    assert sorted(kept) == ["fast1", "fast2"] == sorted(finished)

    # once the cause is fixed, --resume finishes the matrix without re-running the finished cells
    monkeypatch.setattr(runner, "execute", real)
    assert main(["eval", "--dataset", str(data), "--strategies", "lean", "--output", str(out),
                 "--resume"]) == 0
    lines = [json.loads(x)["case_id"] for x in journal.read_text().splitlines()]
    assert sorted(lines) == sorted(ids)  # each cell paid once
    assert len(json.loads(out.read_text())["runs"]) == 6
