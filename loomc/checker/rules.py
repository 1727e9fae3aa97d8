"""The checker's analyses: a tuple of small rule functions behind one signature (sqlglot's habit).

Each rule is a pure function of one compiled pipeline returning diagnostics; `check_pipeline`
runs them all. Rules never do I/O and never call providers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal

from loomc.checker.worstcase import WorstCase, worst_case
from loomc.diagnostics import Diagnostic, Related, Severity, Span
from loomc.ir.model import Pipeline
from loomc.units import Dimension, format_quantity

Rule = Callable[[Pipeline, WorstCase], Iterator[Diagnostic]]


def _where(pipeline: Pipeline) -> str:
    return f"pipeline {pipeline.name!r}" + (f" at tier {pipeline.tier}" if pipeline.tier else "")


def _span(pipeline: Pipeline, step: str | None = None) -> Span:
    if step is not None and step in pipeline.graph:
        span = pipeline.graph.step(step).span
        if span is not None:
            return span
    return pipeline.span or Span.point(pipeline.source or "<pipeline>")


def acyclic(p: Pipeline, wc: WorstCase) -> Iterator[Diagnostic]:
    cycle = p.graph.find_cycle()
    if cycle:
        yield Diagnostic(
            "LOOM206",
            Severity.ERROR,
            f"steps form a cycle in {_where(p)}: {' -> '.join(cycle)}",
            _span(p, cycle[0]),
            "remove one `sees`/`after` edge of the cycle",
            tuple(Related(_span(p, s), f"{s} is part of the cycle") for s in cycle[1:-1]),
        )


def access(p: Pipeline, wc: WorstCase) -> Iterator[Diagnostic]:
    skippable = _skippable(p)
    for step in p.graph.steps():
        for dep in step.sees:
            if dep not in p.graph:
                yield Diagnostic(
                    "LOOM301",
                    Severity.ERROR,
                    f"step {step.id!r} reads {dep!r}, which never runs in {_where(p)}",
                    _span(p, step.id),
                    f"write `sees {dep}?` to make it optional, or guard {step.id!r} the same way",
                )
            elif skippable[dep]:
                yield Diagnostic(
                    "LOOM301",
                    Severity.ERROR,
                    f"step {step.id!r} reads {dep!r}, which may be skipped in {_where(p)}",
                    _span(p, step.id),
                    f"write `sees {dep}?` to mark the read optional",
                    (Related(_span(p, dep), f"{dep!r} is guarded here"),),
                )


def _skippable(p: Pipeline) -> dict[str, bool]:
    """Steps that may not run: guarded, or reading one that may not (iterative: long chains)."""
    out: dict[str, bool] = {}
    for sid in p.graph.topological_order():
        step = p.graph.step(sid)
        out[sid] = step.guard is not None or any(d not in p.graph or out[d] for d in step.sees)
    return out


def answer_chain(p: Pipeline, wc: WorstCase) -> Iterator[Diagnostic]:
    present = [a for a in p.answer if a in p.graph]
    if not present:
        # No answer step here: a missing or unknown chain is already reported by the compiler
        # (LOOM208); one that names only steps absent from this tier is reported here. Either
        # way no step can contribute, so LOOM207 on every step would only repeat it.
        if p.answer:
            yield Diagnostic(
                "LOOM208",
                Severity.ERROR,
                f"no step of the answer chain runs in {_where(p)}",
                _span(p),
                "end the chain with a step that always runs",
            )
        return
    # Only a step's own guard counts here: a step skipped because it reads one that may not run
    # is already an error at the same step (LOOM301), which this warning would repeat.
    if all(p.graph.step(a).guard is not None for a in present):
        yield Diagnostic(
            "LOOM208",
            Severity.WARNING,
            f"every step of the answer chain may be skipped in {_where(p)}",
            _span(p, present[-1]),
            "end the chain with a step that always runs",
        )
    if p.unknown_refs:
        return  # a step may be the one an unknown name meant: reachability is not judged
    needed: set[str] = set()
    for a in present:
        needed |= {a} | p.graph.ancestors(a)
    for step in p.graph.steps():
        if step.id not in needed:
            yield Diagnostic(
                "LOOM207",
                Severity.WARNING,
                f"step {step.id!r} never contributes to the answer in {_where(p)}",
                _span(p, step.id),
                "add it to the answer chain, let a later step read it, or remove it",
            )


_CEILING_CODES = {
    Dimension.CALLS: "LOOM401",
    Dimension.TOKENS: "LOOM402",
    Dimension.CREDITS: "LOOM403",
    Dimension.COST: "LOOM404",
    Dimension.LATENCY: "LOOM405",
}


def ceilings(p: Pipeline, wc: WorstCase) -> Iterator[Diagnostic]:
    for dim, code in _CEILING_CODES.items():
        ceiling = p.budget.get(dim)
        worst = wc.get(dim)
        if ceiling is None or worst is None or worst <= ceiling:
            continue
        path = wc.latency_path if dim is Dimension.LATENCY else tuple(s.id for s in p.graph.steps())
        if not all(p.graph.step(s).certain for s in path):
            continue  # the worst case counts a step whose worker or guard is an error already
        source = _ceiling_source(p, dim)
        parts = ", ".join(
            f"{s.step} {format_quantity(dim, _step_amount(s, dim))}"
            for s in wc.steps
            if s.step in path
        )
        yield Diagnostic(
            code,
            Severity.ERROR,
            f"worst-case {dim.value} {format_quantity(dim, worst)} exceeds the ceiling "
            f"{format_quantity(dim, ceiling)} ({source}) in {_where(p)}: path "
            f"{' -> '.join(path)} ({parts})",
            p.budget_spans.get(dim.value) or _span(p),
            "raise the ceiling, lower max_tokens/retries/timeouts, or guard a step",
            tuple(Related(_span(p, s), f"{s} is on the path") for s in path),
        )


def _ceiling_source(p: Pipeline, dim: Dimension) -> str:
    value = p.budget.get(dim)
    if p.pipeline_budget.get(dim) == value:
        return "pipeline budget"
    if p.tier_budget.get(dim) == value:
        return f"tier {p.tier}"
    return "command line"


def _step_amount(s: object, dim: Dimension) -> int | Decimal | None:
    from loomc.checker.worstcase import StepCost

    assert isinstance(s, StepCost)
    if dim is Dimension.CALLS:
        return s.attempts
    if dim is Dimension.TOKENS:
        if s.input_tokens is None or s.output_tokens is None:
            return None
        return (s.input_tokens + s.output_tokens) * s.attempts
    if dim is Dimension.CREDITS:
        return s.credits
    if dim is Dimension.COST:
        return s.cost
    return s.latency_ms


def unbounded(p: Pipeline, wc: WorstCase) -> Iterator[Diagnostic]:
    if p.budget.tokens is None and p.budget.cost is None:
        return
    for sid in wc.unbounded_steps:
        if not p.graph.step(sid).resolved:
            continue  # unknown worker (LOOM204): its max_tokens is unknown, not missing
        yield Diagnostic(
            "LOOM411",
            Severity.ERROR,
            f"step {sid!r} has no max_tokens, so its cost is unbounded under the "
            f"{'token' if p.budget.tokens is not None else 'cost'} ceiling of {_where(p)}",
            _span(p, sid),
            "set `max_tokens N` on the step, its worker, or the policy defaults",
        )


def pricing(p: Pipeline, wc: WorstCase) -> Iterator[Diagnostic]:
    if p.budget.cost is None:
        return
    for step in p.graph.steps():
        if step.pricing is None and step.resolved:  # an unknown worker has no model to price
            yield Diagnostic(
                "LOOM412",
                Severity.ERROR,
                f"model {step.model!r} (step {step.id!r}) has no pricing, but {_where(p)} has a "
                f"cost ceiling of {format_quantity(Dimension.COST, p.budget.cost)}",
                _span(p, step.id),
                f"add `pricing: {{{step.model}: {{input_per_million: X, output_per_million: Y}}}}` "
                "to the policy; unknown prices are never invented",
            )


def independence(p: Pipeline, wc: WorstCase) -> Iterator[Diagnostic]:
    for req in p.requires:
        if req.kind != "independent":
            continue
        # an unknown worker's group is a placeholder: comparing it would be a follow-on
        present = [s for s in req.steps if s in p.graph and p.graph.step(s).resolved]
        for i, a in enumerate(present):
            for b in present[i + 1 :]:
                ga, gb = p.graph.step(a).group, p.graph.step(b).group
                if ga == gb:
                    yield Diagnostic(
                        "LOOM501",
                        Severity.ERROR,
                        f"steps {a!r} and {b!r} must be independent but share provider group "
                        f"{ga!r} in {_where(p)}",
                        req.span or _span(p, a),
                        "give one of the workers a model from another provider group",
                        (
                            Related(_span(p, a), f"{a} runs on {p.graph.step(a).model}"),
                            Related(_span(p, b), f"{b} runs on {p.graph.step(b).model}"),
                        ),
                    )


RULES: tuple[Rule, ...] = (
    acyclic,
    access,
    answer_chain,
    ceilings,
    unbounded,
    pricing,
    independence,
)


def check_pipeline(pipeline: Pipeline) -> list[Diagnostic]:
    """Every analysis of DESIGN.md §3 that concerns one compiled pipeline."""
    if not pipeline.graph.is_acyclic():
        return list(acyclic(pipeline, _empty(pipeline)))
    wc = worst_case(pipeline)
    out: list[Diagnostic] = []
    for rule in RULES:
        out.extend(rule(pipeline, wc))
    return out


def _empty(p: Pipeline) -> WorstCase:
    return WorstCase(p.name, p.tier, 0, 0, Decimal(0), Decimal(0), 0, None, ())


def limit_warnings(p: Pipeline) -> list[Diagnostic]:
    """The checker's worst case against the run-time limits (``p.limits``), as warnings.

    A limit is not a promise: the run is admitted and the ledger stops it before a step that
    would not fit (``budget-limited``). The same analysis as ``ceilings`` says how far the worst
    case can go past the limit, so the user is told before the run instead of never."""
    if not p.graph.is_acyclic():
        return []
    wc = worst_case(p)
    out: list[Diagnostic] = []
    for dim, code in _CEILING_CODES.items():
        limit = p.limits.get(dim)
        promise = p.budget.get(dim)
        if limit is None or (promise is not None and promise <= limit):
            continue  # no limit, or the proved promise is already tighter
        worst = wc.get(dim)
        if worst is not None and worst <= limit:
            continue
        shown = "unbounded" if worst is None else format_quantity(dim, worst)
        path = wc.latency_path if dim is Dimension.LATENCY else tuple(s.id for s in p.graph.steps())
        out.append(
            Diagnostic(
                code,
                Severity.WARNING,
                f"worst-case {dim.value} {shown} exceeds the run limit "
                f"{format_quantity(dim, limit)} in {_where(p)}: the run stops budget-limited "
                f"before a step that would not fit (path {' -> '.join(path)})",
                _span(p),
                "a run-time limit is enforced, not proved; write the ceiling in the pipeline "
                "or the policy to have `loomc check` prove it",
            )
        )
    return out
