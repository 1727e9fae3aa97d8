"""``loomc.check`` and ``loomc.compile``: prove a project's pipelines, or build its plan artifact.

Both read the files once through :func:`loomc.project.checking.check_paths` (every pipeline x
tier against every policy); nothing here prints or exits, so ``loomc check``, ``loomc plan``,
``loomc compile``, CI scripts and the Studio all see the same result object.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loomc.diagnostics import DiagnosticError
from loomc.project.checking import CheckResult, check_paths
from loomc.units import Budget

PathLike = str | Path


def _paths(paths: PathLike | Sequence[PathLike]) -> list[Path]:
    if isinstance(paths, str | Path):
        return [Path(paths)]
    return [Path(p) for p in paths]


def check(
    paths: PathLike | Sequence[PathLike] = ".",
    *,
    policy: PathLike | None = None,
    ceilings: Budget | None = None,
    against: str | None = None,
) -> CheckResult:
    """Parse, compile and prove every pipeline x tier under ``paths`` (project roots, `.loom`
    or policy files) against every policy found, or ``policy`` alone. ``ceilings`` tighten every
    budget; ``against`` (a Git ref) adds the budget-regression gate's findings. Never raises on
    bad input: problems are ``result.diagnostics``; ``result.errors`` counts the errors."""
    found = _paths(paths)
    pol = Path(policy) if policy is not None else None
    from loomc.risk.options import option_diagnostics

    result = check_paths(found, pol, ceilings, (option_diagnostics,))
    if against is not None:
        from loomc.project.regress import compare_against

        result.diagnostics = result.diagnostics + compare_against(against, found, result, pol)
    return result


def compile(
    paths: PathLike | Sequence[PathLike] = ".",
    *,
    policy: PathLike | None = None,
    ceilings: Budget | None = None,
) -> dict[str, Any]:
    """The canonical, content-hashed plan artifact of every pipeline x tier (a JSON-ready dict;
    ``loomc.ir.artifact.dump_artifact`` writes it byte-stably). Raises ``DiagnosticError`` with
    every error when anything fails to check: no artifact is built from a broken project."""
    from loomc.ir.artifact import build_artifact

    result = check(paths, policy=policy, ceilings=ceilings)
    errors = [d for d in result.diagnostics if d.is_error]
    if errors:
        raise DiagnosticError(errors)
    cases = result.worst_cases()
    return build_artifact([p for _, p, _ in cases], [w.to_json() for _, _, w in cases])
