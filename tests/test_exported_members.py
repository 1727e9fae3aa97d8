"""The public API is pinned: adding or removing a name is a deliberate change of this list.

Modelled on httpx's tests/test_exported_members.py: every exported name resolves, says what it
is for, and `import loomc` alone stays cheap (names load on first use).
"""

from __future__ import annotations

import inspect
import subprocess
import sys

import loomc

EXPECTED = [
    "__version__",
    "check",
    "compile",
    "run",
    "arun",
    "evaluate",
    "prepare_eval",
    "calibrate",
    "render",
    "load_receipt",
    "load_project",
    "make_profiler",
    "Project",
    "CheckResult",
    "Pipeline",
    "RunResult",
    "StepRecord",
    "Evaluation",
    "EvalReceipt",
    "Budget",
    "Usage",
    "Diagnostic",
    "ProviderPool",
    "Provider",
    "Event",
    "EventSink",
    "MemorySink",
    "JsonlSink",
    "LoomcError",
    "DiagnosticError",
    "PlanRejected",
    "BudgetRefused",
    "DatasetError",
    "StrategyError",
    "EvalAborted",
    "CalibrationRefused",
]


def test_all_is_pinned() -> None:
    assert loomc.__all__ == EXPECTED
    assert sorted(dir(loomc)) == sorted(EXPECTED)


def test_every_name_resolves_and_is_documented() -> None:
    for name in EXPECTED[1:]:
        value = getattr(loomc, name)
        assert inspect.isclass(value) or callable(value), name
        doc = inspect.getdoc(value) or ""
        assert len(doc) > 20, f"loomc.{name} needs a docstring that says what it is for"


def test_errors_are_exceptions() -> None:
    for name in (
        "DiagnosticError",
        "PlanRejected",
        "BudgetRefused",
        "DatasetError",
        "StrategyError",
        "EvalAborted",
    ):
        assert issubclass(getattr(loomc, name), loomc.LoomcError), name


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        loomc.does_not_exist  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "does_not_exist" in str(exc)
    else:
        raise AssertionError("loomc.does_not_exist resolved")


def test_import_is_lazy() -> None:
    code = (
        "import sys, loomc; heavy = ['pydantic', 'networkx', 'anyio', 'httpx', 'loomc.exec', "
        "'loomc.ir']; print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
