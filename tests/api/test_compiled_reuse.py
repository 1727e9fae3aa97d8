"""A caller that compiles a pipeline once and runs it many times (a server, a benchmark) runs
that very object when it sets no other limits: the executor's prepared part of it is worked out
once, not again each run; with ceilings of its own a run still gets its own copy."""

from __future__ import annotations

from pathlib import Path

import loomc
from loomc.exec.prepared import _PREPARED
from loomc.units import Budget

ROOT = Path(__file__).resolve().parents[2]


def test_a_compiled_pipeline_is_prepared_once_and_limits_still_apply() -> None:
    project = loomc.Project.load(ROOT)
    pipeline = project.compile("general", "lean")
    first = loomc.run("Explain DNS briefly.", project=project, pipeline=pipeline)
    found = _PREPARED.get(id(pipeline))
    assert found is not None and found.pipeline is pipeline
    again = loomc.run("Explain DNS briefly.", project=project, pipeline=pipeline)
    assert _PREPARED.get(id(pipeline)) is found  # found, not worked out again
    assert (again.answer, again.receipt_hash) == (first.answer, first.receipt_hash)
    capped = loomc.run(
        "Explain DNS briefly.", project=project, pipeline=pipeline, ceilings=Budget(calls=0)
    )
    assert capped.stop_reason != first.stop_reason  # the ceiling was the run's own
    assert pipeline.limits == Budget()  # and never written onto the caller's pipeline
