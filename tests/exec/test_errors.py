"""One root exception: every deliberate loomc error derives from LoomcError, keeps the builtin
base callers already catch, and is drawn in the tree of loomc/errors.py's docstring."""

from __future__ import annotations

import importlib

import pytest

import loomc.errors
from loomc.errors import LoomcError

MODULES = (
    "loomc.diagnostics",
    "loomc.providers.base",
    "loomc.conductor.plan",
    "loomc.conductor.planners",
    "loomc.conductor.guard",
    "loomc.eval.dataset",
    "loomc.eval.checks",
    "loomc.eval.strategies",
    "loomc.eval.judge",
    "loomc.eval.receipt",
    "loomc.eval.runner",
    "loomc.risk.lora",
)

ROOTED = {  # class -> the builtin base it must keep
    ("loomc.diagnostics", "DiagnosticError"): Exception,
    ("loomc.providers.base", "ProviderError"): Exception,
    ("loomc.providers.base", "RateLimited"): Exception,
    ("loomc.conductor.plan", "PlanParseError"): ValueError,
    ("loomc.conductor.planners", "PlannerError"): RuntimeError,
    ("loomc.conductor.guard", "GuardError"): RuntimeError,
    ("loomc.eval.dataset", "DatasetError"): Exception,
    ("loomc.eval.checks", "CheckError"): ValueError,
    ("loomc.eval.strategies", "StrategyError"): ValueError,
    ("loomc.eval.judge", "JudgeConfigError"): ValueError,
    ("loomc.eval.receipt", "ReceiptError"): Exception,
    ("loomc.eval.runner", "EvalAborted"): Exception,
    ("loomc.risk.lora", "LoraError"): ValueError,
}


@pytest.mark.parametrize(("where", "builtin"), sorted(ROOTED.items(), key=str))
def test_error_derives_from_loomc_error(where: tuple[str, str], builtin: type) -> None:
    module, name = where
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, LoomcError) and issubclass(cls, builtin)


def _subclasses(cls: type) -> set[type]:
    out: set[type] = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _subclasses(sub)
    return out


def test_tree_in_the_docstring_names_every_subclass() -> None:
    for module in MODULES:
        importlib.import_module(module)
    doc = loomc.errors.__doc__ or ""
    missing = sorted(
        c.__name__
        for c in _subclasses(LoomcError)
        if c.__module__.startswith("loomc.") and c.__name__ not in doc
    )
    assert missing == []
