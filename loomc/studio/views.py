"""The Studio's view model: the IR, the checker's worst cases, diagnostics, events and stored
runs turned into the JSON the page draws.

Every number here comes from the compiler, the checker, the runtime's events or the store; a
number that is not known (an unpriced model, a step without ``max_tokens``) is ``None`` and the
page leaves it blank, as the reports do. Nothing here renders HTML: model and source text travel
as JSON strings and the page puts them in the DOM as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loomc.checker.worstcase import StepCost, worst_case
from loomc.diagnostics import Diagnostic, DiagnosticError
from loomc.ir.artifact import pipeline_to_json
from loomc.ir.model import Pipeline, expr_to_text
from loomc.project import Project

MAX_SOURCE_BYTES = 512_000  # a source file larger than this is listed, not sent


def model_id(p: Pipeline) -> str:
    """``pipeline@tier`` (or the bare name of a tier-less pipeline): the server's model names."""
    return p.name if p.tier is None else f"{p.name}@{p.tier}"


def _step_worst(cost: StepCost) -> dict[str, Any]:
    tokens = (
        None
        if cost.input_tokens is None or cost.output_tokens is None
        else (cost.input_tokens + cost.output_tokens) * cost.attempts
    )
    return {
        "calls": cost.attempts,
        "input_tokens": cost.input_tokens,
        "output_tokens": cost.output_tokens,
        "tokens": tokens,
        "credits": str(cost.credits),
        "cost": None if cost.cost is None else str(cost.cost),
        "latency_ms": cost.latency_ms,
    }


def layout(p: Pipeline) -> dict[str, tuple[int, int]]:
    """A column (its longest chain of dependencies) and a row within it, per step: the page
    draws the graph left to right from these, so the same IR always draws the same picture."""
    column: dict[str, int] = {}
    rows: dict[int, int] = {}
    at: dict[str, tuple[int, int]] = {}
    for sid in p.graph.topological_order():
        preds = p.graph.predecessors(sid)
        column[sid] = 1 + max((column[d] for d in preds), default=-1)
        row = rows.get(column[sid], 0)
        rows[column[sid]] = row + 1
        at[sid] = (column[sid], row)
    return at


def pipeline_view(project: Project, p: Pipeline) -> dict[str, Any]:
    """One pipeline x tier: its graph (steps, roles, workers, access edges, guards), each step's
    worst case beside the ceilings, and whether it checks (the errors when it does not)."""
    body = pipeline_to_json(p)
    errors: list[dict[str, object]] = []
    try:
        project.compile(p.name, p.tier)
    except DiagnosticError as exc:
        errors = [d.to_json() for d in exc.diagnostics]
    acyclic = p.graph.is_acyclic()
    worst = worst_case(p) if acyclic else None
    per_step = {c.step: _step_worst(c) for c in worst.steps} if worst is not None else {}
    at = layout(p) if acyclic else {sid: (0, i) for i, sid in enumerate(p.graph.ids())}
    for step in body["steps"]:
        node = p.graph.step(step["id"])
        step["guard_text"] = None if node.guard is None else expr_to_text(node.guard)
        step["worst"] = per_step.get(step["id"])
        step["column"], step["row"] = at[step["id"]]
        step["span"] = None if node.span is None else node.span.to_json()
    body.update(
        id=model_id(p),
        checks=not errors,
        errors=errors,
        worst=None if worst is None else worst.to_json(),
        ceilings=p.budget.to_json(),
        source=p.source,
        span=None if p.span is None else p.span.to_json(),
        edges=[{"from": u, "to": v, "kinds": sorted(k)} for u, v, k in p.graph.edges()],
    )
    return body


def pipelines_view(project: Project) -> dict[str, Any]:
    compiled, _ = project.pipelines()
    return {
        "root": str(project.root),
        "policy": project.policy_source.path,
        "tiers": project.tiers(),
        "pipelines": [pipeline_view(project, p) for p in compiled],
    }


def check_view(root: Path, diagnostics: list[Diagnostic], files: int) -> dict[str, Any]:
    """`loomc check`'s diagnostics with the text of every file they point into (inside the
    project root only), so the page can mark each span on its source."""
    base = root.resolve()
    sources: dict[str, str | None] = {}
    for d in diagnostics:
        for name in (d.span.file, *(r.span.file for r in d.related)):
            if name not in sources:
                sources[name] = _read_inside(base, name)
    return {
        "files": files,
        "errors": sum(d.is_error for d in diagnostics),
        "warnings": sum(not d.is_error for d in diagnostics),
        "diagnostics": [d.to_json() for d in sorted(diagnostics, key=Diagnostic.sort_key)],
        "sources": sources,
    }


def _read_inside(base: Path, name: str) -> str | None:
    path = Path(name)
    full = (path if path.is_absolute() else base / path).resolve()
    if not full.is_relative_to(base) or not full.is_file():
        return None
    if full.stat().st_size > MAX_SOURCE_BYTES:
        return None
    return full.read_text(encoding="utf-8", errors="replace")


def project_sources(project: Project) -> dict[str, str | None]:
    """Every pipeline file and the policy, for the source view (diagnostics or not)."""
    out: dict[str, str | None] = {m.path: m.source for m in project.modules}
    policy = project.policy_source.path
    out[policy] = _read_inside(project.root.resolve(), policy)
    return out
