"""``loomc doctor`` and ``loomc pipelines`` as functions: is this setup able to run, and what.

``doctor`` loads the project and its policy, then for each provider checks that every
``env:NAME`` it needs is set (by name; the value is never read out) and that its server answers
a GET within a short timeout. ``runnable`` lists each pipeline x tier with its worst case and
whether the checker lets it run. Nothing here prints.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from loomc.diagnostics import DiagnosticError
from loomc.project import load_project
from loomc.providers.probe import base_url, probe


@dataclass(frozen=True)
class Finding:
    """One line of the doctor's report."""

    subject: str  # "policy", "provider dot", ...
    ok: bool
    detail: str


def doctor(
    project: str | Path = ".",
    policy: str | Path | None = None,
    *,
    timeout_s: float = 3.0,
    env: Mapping[str, str] | None = None,
) -> list[Finding]:
    env = os.environ if env is None else env
    try:
        proj = load_project(project, policy)
    except DiagnosticError as exc:
        return [Finding("policy", False, d.message) for d in exc.diagnostics]
    errors = [d for d in proj.diagnostics if d.is_error]
    where = proj.policy_source.path
    out = [Finding("policy", not errors, f"{where}: {len(errors) or 'no'} error(s)")]
    out += [Finding("policy", False, f"{d.span.file}:{d.span.line}: {d.message}") for d in errors]
    from loomc.risk.factory import describe

    ok, detail = describe(proj.policy.risk)
    out.append(Finding("risk profiler", ok, detail))
    for name, cfg in proj.policy.providers.items():
        subject = f"provider {name} ({cfg.type})"
        refs = [v for v in (cfg.api_key, *cfg.headers.values()) if v and v.startswith("env:")]
        for ref in refs:
            var = ref.removeprefix("env:")
            present = bool(env.get(var))
            out.append(Finding(subject, present, f"{var} {'is set' if present else 'is not set'}"))
        if cfg.type == "mock":
            out.append(Finding(subject, True, "in-process, nothing to reach"))
            continue
        url = base_url(cfg)
        if url is None:
            out.append(Finding(subject, False, "no base_url"))
            continue
        problem = anyio.run(probe, url, timeout_s)
        out.append(Finding(subject, problem is None, f"{url}: {problem or 'reachable'}"))
    return out


def runnable(project: str | Path = ".", policy: str | Path | None = None) -> list[dict[str, Any]]:
    """Each pipeline x tier under the policy: its worst case and whether it may run."""
    from loomc.checker.rules import check_pipeline
    from loomc.checker.worstcase import worst_case

    proj = load_project(project, policy)
    compiled, diags = proj.pipelines()
    broken = {d.span.file for d in proj.diagnostics + diags if d.is_error}
    rows = []
    for p in compiled:
        errors = [d for d in check_pipeline(p) if d.is_error]
        wc = worst_case(p)
        rows.append(
            {
                "pipeline": p.name,
                "tier": p.tier,
                "runnable": not errors and p.source not in broken,
                "problems": [f"{d.code} {d.message}" for d in errors],
                "worst": wc.to_json(),
            }
        )
    return rows
