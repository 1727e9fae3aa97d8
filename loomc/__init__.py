"""loomc: a compiler and runtime for budgeted multi-model LLM inference pipelines.

The public API. Everything the CLI, the server and the Studio do goes through these names::

    import loomc

    result = loomc.check("my-project")               # prove every pipeline x tier; .diagnostics
    project = loomc.Project.load("my-project")      # load once, compile each pipeline x tier once
    run = loomc.run("Is this refund idempotent?", project=project, tier="balanced")
    print(run.answer, run.calls, run.stop_reason)
    receipt = loomc.evaluate("cases.jsonl", "baseline,balanced", project=project)
    loomc.render(receipt, "report.html")

Names load lazily (PEP 562), so ``import loomc`` — and ``loomc --help`` — stays cheap: pydantic,
lark and the runtime are imported on first use of a name that needs them.

Every error derives from ``LoomcError``: ``DiagnosticError`` (the project does not compile or
check; ``.diagnostics`` holds every finding), ``PlanRejected`` (no planner proposal passed the checker), ``BudgetRefused`` (an eval's
worst case passes its totals), ``DatasetError``, ``StrategyError``, ``EvalAborted``.
Budget and provider trouble during a run never raises: it is the result's ``stop_reason``.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (`loomc --help` start-up)
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # functions
    "check": "loomc.api.checking",
    "compile": "loomc.api.checking",
    "run": "loomc.api.running",
    "arun": "loomc.api.running",
    "evaluate": "loomc.api.evaluating",
    "prepare_eval": "loomc.api.evaluating",
    "calibrate": "loomc.api.calibrating",
    "render": "loomc.report.render",
    "load_receipt": "loomc.eval.receipt",
    "load_project": "loomc.project.workspace",
    "make_profiler": "loomc.risk.factory",
    # the project and results
    "Project": "loomc.project.workspace",
    "CheckResult": "loomc.project.checking",
    "Pipeline": "loomc.ir.model",
    "RunResult": "loomc.exec.result",
    "StepRecord": "loomc.exec.result",
    "Evaluation": "loomc.api.evaluating",
    "EvalReceipt": "loomc.eval.receipt",
    "Budget": "loomc.units",
    "Usage": "loomc.units",
    "Diagnostic": "loomc.diagnostics",
    # injection points: providers, event sinks
    "ProviderPool": "loomc.providers.registry",
    "Provider": "loomc.providers.base",
    "Event": "loomc.exec.events",
    "EventSink": "loomc.exec.events",
    "MemorySink": "loomc.exec.events",
    "JsonlSink": "loomc.exec.events",
    # errors: every one is a LoomcError
    "LoomcError": "loomc.errors",
    "DiagnosticError": "loomc.diagnostics",
    "PlanRejected": "loomc.api.running",
    "BudgetRefused": "loomc.api.evaluating",
    "DatasetError": "loomc.eval.dataset",
    "StrategyError": "loomc.eval.strategies",
    "EvalAborted": "loomc.eval.runner",
    "CalibrationRefused": "loomc.api.calibrating",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'loomc' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # explicit re-exports for type checkers
    from loomc.api.calibrating import CalibrationRefused as CalibrationRefused
    from loomc.api.calibrating import calibrate as calibrate
    from loomc.api.checking import check as check
    from loomc.api.checking import compile as compile
    from loomc.api.evaluating import BudgetRefused as BudgetRefused
    from loomc.api.evaluating import Evaluation as Evaluation
    from loomc.api.evaluating import evaluate as evaluate
    from loomc.api.evaluating import prepare_eval as prepare_eval
    from loomc.api.running import PlanRejected as PlanRejected
    from loomc.api.running import arun as arun
    from loomc.api.running import run as run
    from loomc.diagnostics import Diagnostic as Diagnostic
    from loomc.diagnostics import DiagnosticError as DiagnosticError
    from loomc.errors import LoomcError as LoomcError
    from loomc.eval.dataset import DatasetError as DatasetError
    from loomc.eval.receipt import EvalReceipt as EvalReceipt
    from loomc.eval.receipt import load_receipt as load_receipt
    from loomc.eval.runner import EvalAborted as EvalAborted
    from loomc.eval.strategies import StrategyError as StrategyError
    from loomc.exec.events import Event as Event
    from loomc.exec.events import EventSink as EventSink
    from loomc.exec.events import JsonlSink as JsonlSink
    from loomc.exec.events import MemorySink as MemorySink
    from loomc.exec.result import RunResult as RunResult
    from loomc.exec.result import StepRecord as StepRecord
    from loomc.ir.model import Pipeline as Pipeline
    from loomc.project.checking import CheckResult as CheckResult
    from loomc.project.workspace import Project as Project
    from loomc.project.workspace import load_project as load_project
    from loomc.providers.base import Provider as Provider
    from loomc.providers.registry import ProviderPool as ProviderPool
    from loomc.report.render import render as render
    from loomc.risk.factory import make_profiler as make_profiler
    from loomc.units import Budget as Budget
    from loomc.units import Usage as Usage
