"""The plain result classes against their pydantic twins (the reference): the same data read
back gives the same dumps in both modes, the same JSON bytes, the same errors, and a result
inside the eval's pydantic records is written exactly as the twin is. A run imports no pydantic.

The data is generated as a journal holds it (JSON-shaped, some axes missing, money as strings),
so both sides validate it; ``risk`` and ``warnings`` also carry values JSON has no word for
(tuples, decimals, infinities), which the hand-written dumps leave to the twin.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from loomc.exec import result, result_models
from loomc.exec.plain import Unsure
from loomc.units import Dimension

ROOT = Path(__file__).resolve().parents[2]
AXES = ("calls", "tokens", "credits", "cost", "latency_ms")

ints = st.integers(min_value=0, max_value=10**12)
money = st.decimals(min_value=0, max_value=10**6, places=6, allow_nan=False).map(str)
text = st.text(max_size=12)
json_data = st.recursive(
    st.none() | st.booleans() | ints | text | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
# values a JSON journal cannot hold: the twin decides how they dump
odd_data = st.tuples(ints, text) | st.just(math.inf) | st.just(Decimal("1.5"))


@st.composite
def some_of(draw: st.DrawFn, full: dict[str, Any]) -> dict[str, Any]:
    """``full``, or only some of its keys, in their order (an older journal's shape)."""
    keep = draw(st.lists(st.sampled_from(list(full)), unique=True)) if draw(st.booleans()) else full
    return {k: v for k, v in full.items() if k in keep}


def usage_json() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"calls": ints, "tokens": ints, "credits": money, "cost": money, "latency_ms": ints}
    )


def budget_json() -> st.SearchStrategy[dict[str, Any]]:
    optional = st.none()
    return st.fixed_dictionaries(
        {
            "calls": optional | ints,
            "tokens": optional | ints,
            "credits": optional | money,
            "cost": optional | money,
            "latency_ms": optional | ints,
        }
    )


def step_json() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "id": text,
            "role": text,
            "worker": text,
            "model": text,
            "status": st.sampled_from([s.value for s in result.StepStatus]),
        },
        optional={
            "access": st.lists(text, max_size=3),
            "reason": st.none() | text,
            "elapsed_ms": ints,
            "attempts": ints,
            "usage": st.fixed_dictionaries(
                {},
                optional={
                    "prompt_tokens": ints,
                    "completion_tokens": ints,
                    "total_tokens": ints,
                    "estimated": st.booleans(),
                },
            ),
            "cost": st.none() | money,
            "credits": st.none() | money,
            "reserved": st.just({}) | usage_json(),
            "output": st.none() | text,
        },
    )


def model_json() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "calls": ints,
            "prompt_tokens": ints,
            "completion_tokens": ints,
            "tokens": ints,
            "tokens_estimated": st.booleans(),
            "credits": st.none() | money,
            "estimated_credits": money,
            "cost": st.none() | money,
        },
    )


def stop_json() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "dimension": st.sampled_from([d.value for d in Dimension]),
            "needed": money,
            "left": money,
            "ceiling": money,
        },
        optional={"step": st.none() | text, "source": text},
    )


@st.composite
def run_json(draw: st.DrawFn, data: st.SearchStrategy[Any] = json_data) -> dict[str, Any]:
    """A run as the journal holds it."""
    budget = {
        "limits": draw(some_of(draw(budget_json()))),
        "used": draw(some_of(draw(usage_json()))),
    }
    budget.update(
        draw(
            st.fixed_dictionaries(
                {}, optional={"reserved_peak": usage_json(), "limited": st.booleans()}
            )
        )
    )
    run = {
        "answer": draw(text),
        "pipeline": draw(text),
        "tier": draw(st.none() | text),
        "calls": draw(ints),
        "escalated": draw(st.booleans()),
        "escalation_reason": draw(st.none() | text),
        "stop_reason": draw(st.sampled_from([s.value for s in result.StopReason])),
        "budget": budget,
        "steps": draw(st.lists(step_json(), max_size=3)),
        "receipt_hash": draw(text),
    }
    run.update(
        draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "risk": st.dictionaries(text, data, max_size=3),
                    "elapsed_ms": ints,
                    "cost": st.none() | money,
                    "missing_pricing": st.lists(text, max_size=2),
                    "credits": st.none() | money,
                    "estimated_credits": money,
                    "tokens": ints,
                    "error": st.none() | text,
                    "limited_by": st.none() | stop_json(),
                    "models": st.dictionaries(text, model_json(), max_size=2),
                    "warnings": st.lists(st.dictionaries(text, data, max_size=2), max_size=2),
                },
            )
        )
    )
    return run


def agree(plain: Any, twin: BaseModel) -> None:
    """Every dump of ``plain`` is the twin's."""
    for mode in ("python", "json"):
        assert plain.model_dump(mode=mode) == twin.model_dump(mode=mode)
    assert plain.model_dump_json() == twin.model_dump_json()
    assert plain.model_dump_json(indent=2) == twin.model_dump_json(indent=2)
    assert plain.model_fields_set == twin.model_fields_set


@settings(max_examples=200, deadline=None)
@given(run_json())
def test_the_hand_written_dumps_are_the_twins(data: dict[str, Any]) -> None:
    twin = result_models.RunResult.model_validate(data)
    plain = result.RunResult.model_validate(data)
    assert type(plain) is result.RunResult and type(plain.steps[0] if plain.steps else None) in (
        result.StepRecord,
        type(None),
    )
    # the hand-written path itself (no fallback to the twin): JSON-shaped data is never unsure
    assert plain.dump(False) == twin.model_dump()
    assert plain.dump(True) == twin.model_dump(mode="json")
    agree(plain, twin)
    for step, twin_step in zip(plain.steps, twin.steps, strict=True):
        agree(step, twin_step)
        agree(step.usage, twin_step.usage)
    agree(plain.budget, twin.budget)
    # read back from its own JSON: the same result, the same bytes
    again = result.RunResult.model_validate_json(plain.model_dump_json())
    assert again == plain and again.model_dump_json() == twin.model_dump_json()


@settings(max_examples=100, deadline=None)
@given(run_json(data=json_data | odd_data))
def test_values_json_has_no_word_for_dump_as_the_twin_does(data: dict[str, Any]) -> None:
    twin = result_models.RunResult.model_validate(data)
    plain = result.RunResult.model_validate(data)
    for mode in ("python", "json"):
        assert plain.model_dump(mode=mode) == twin.model_dump(mode=mode)


def test_an_odd_value_is_left_to_the_twin() -> None:
    data = {**_minimal(), "risk": {"score": math.inf, "pair": (1, 2)}}
    plain = result.RunResult.model_validate(data)
    with pytest.raises(Unsure):
        plain.dump(True)
    dumped = plain.model_dump(mode="json")
    assert (
        dumped["risk"]
        == result_models.RunResult.model_validate(data).model_dump(mode="json")["risk"]
    )
    assert dumped["risk"]["pair"] == [1, 2]


@settings(max_examples=100, deadline=None)
@given(run_json(), st.sampled_from(["ok", "budget-stopped"]))
def test_a_result_inside_an_eval_record_is_written_as_the_twin(
    data: dict[str, Any], status: str
) -> None:
    from loomc.eval.records import RunRecord

    twin = result_models.RunResult.model_validate(data)
    record = RunRecord(case_id="c", strategy="lean", iteration=0, status=status, result=data)
    assert type(record.result) is result.RunResult
    line = record.model_dump_json()
    assert f'"result":{twin.model_dump_json()},' in line
    assert record.model_dump()["result"] == twin.model_dump()
    back = RunRecord.model_validate_json(line)
    assert back == record and back.model_dump_json() == line
    # a result already built is kept as it is, as pydantic keeps a model instance
    assert RunRecord(case_id="c", strategy="s", iteration=0, result=back.result).result is (
        back.result
    )


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        ("StepRecord", {"id": 1, "role": "r", "worker": "w", "model": "m", "status": "ok"}),
        ("StepRecord", {"id": "a", "role": "r", "worker": "w", "model": "m", "status": "done"}),
        ("StepRecord", {"role": "r", "worker": "w", "model": "m", "status": "ok", "extra": 1}),
        ("LimitStop", {"dimension": "calls", "needed": "x", "left": "1", "ceiling": "1"}),
        ("RunResult", {**{"budget": {"limits": {}, "used": {"calls": -1.5}}}}),
    ],
)
def test_invalid_data_is_refused_with_pydantics_errors(cls: str, data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as theirs:
        getattr(result_models, cls)(**data)
    with pytest.raises(ValidationError) as ours:
        getattr(result, cls)(**data)
    assert ours.value.errors() == theirs.value.errors()


def test_assignment_copies_and_equality_behave_as_pydantics() -> None:
    plain = result.RunResult.model_validate(_minimal())
    twin = result_models.RunResult.model_validate(_minimal())
    plain.answer, twin.answer = "changed", "changed"
    assert plain.model_fields_set == twin.model_fields_set
    with pytest.raises(ValueError, match="has no field"):
        plain.anwser = "typo"
    deep = plain.model_copy(deep=True)
    shallow = plain.model_copy(update={"calls": 7})
    assert deep == plain and deep.steps[0] is not plain.steps[0]
    assert shallow.steps is plain.steps and shallow.calls == 7 and plain.calls == 1
    assert "calls" in shallow.model_fields_set
    copied = copy.copy(plain)
    copied.calls = 9
    assert plain.calls == 1 and copied.steps is plain.steps
    assert pickle.loads(pickle.dumps(plain)) == plain
    assert plain != twin  # a plain result never equals a pydantic one
    with pytest.raises(TypeError):
        hash(plain)
    assert result.RunResult.model_json_schema() == result_models.RunResult.model_json_schema()

    class Plain(BaseModel):
        run: result.RunResult | None = None

    class Twin(BaseModel):
        run: result_models.RunResult | None = None

    assert Plain.model_json_schema() == {**Twin.model_json_schema(), "title": "Plain"}
    assert plain.budget._axes == {"limits": ("calls",), "used": ("calls",)}


def test_a_cold_run_imports_no_pydantic_rich_or_httpx() -> None:
    """``loomc run`` with the mock, its trace piped and its receipt dumped for ``--json``, in a
    fresh process: the result classes need no pydantic, a piped trace no rich, the mock no HTTP."""
    code = (
        "import contextlib, io, json, sys\n"
        "from loomc.cli.main import main\n"
        "out, err = io.StringIO(), io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
        f"    code = main(['run', '--no-store', '--json', '--project', {str(ROOT)!r}, 'Hi.'])\n"
        "heavy = ('pydantic', 'pydantic_core', 'rich', 'httpx')\n"
        "print(json.dumps([code, json.loads(out.getvalue())['stop_reason'],"
        " sorted({m.split('.')[0] for m in sys.modules} & set(heavy))]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    exit_code, stop, heavy = json.loads(done.stdout)
    assert exit_code == 0 and stop in ("direct-answer-accepted", "completed") and heavy == []


def _minimal() -> dict[str, Any]:
    return {
        "answer": "a",
        "pipeline": "general",
        "tier": "balanced",
        "calls": 1,
        "escalated": False,
        "escalation_reason": None,
        "stop_reason": "completed",
        "budget": {"limits": {"calls": 2}, "used": {"calls": 1}},
        "steps": [{"id": "s", "role": "r", "worker": "w", "model": "m", "status": "ok"}],
        "receipt_hash": "h",
    }
