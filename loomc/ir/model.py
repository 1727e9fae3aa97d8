"""The IR: typed step nodes, guard expressions and one graph per pipeline x tier.

The IR is what every later stage consumes (checker, executor, conductor guard, serve), so it is
plain frozen data with no spans required for execution; spans are kept only so the checker can
point back at the source. Guards are a tiny expression language: static facts (the tier) are
folded at compile time, runtime facts (risk, the input, prior steps) stay as expressions that the
executor evaluates when a step becomes ready.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any, Literal, Union

from loomc import userregex
from loomc.diagnostics import Span
from loomc.frozen import Frozen, field
from loomc.ir.graph import StepGraph as StepGraph  # re-exported: Pipeline.graph
from loomc.units import Budget

# --- guard expressions ---------------------------------------------------------------------------

RISK_ORDER = {"low": 0, "medium": 1, "high": 2}
STEP_PREDICATES = ("ran", "skipped", "ok", "failed", "empty", "refused")
CompareOp = Literal["==", "!=", "<", "<=", ">", ">="]

# Every class here is a Frozen class: frozen dataclasses' behaviour without ~1 ms of generated
# code per class at every start (loomc/frozen.py); `dataclasses.replace` still works on them.


class Const(Frozen):
    value: str | int | float | bool


class Fact(Frozen):
    """A runtime fact: ``risk`` (level), ``risk.kind``, ``risk.signals``, ``risk.probability``,
    ``input``, ``input.length``; ``tier`` only before folding."""

    path: tuple[str, ...]

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


class StepFact(Frozen):
    """A predicate on a prior step: ran, skipped, ok, failed, empty, refused."""

    step: str
    predicate: str


class Compare(Frozen):
    op: CompareOp
    left: Expr
    right: Expr


class Contains(Frozen):
    """``"security" in risk.signals``."""

    item: Expr
    collection: Expr


class Matches(Frozen):
    """``input matches "review|audit"`` — case-insensitive regex search."""

    subject: Expr
    pattern: str

    def compiled(self) -> userregex.UserPattern:
        """The pattern for a time-bounded search (``loomc.userregex``); its ``search`` raises
        ``PatternTimeout`` past the bound."""
        return userregex.compile(self.pattern, ignorecase=True)


class And(Frozen):
    items: tuple[Expr, ...]


class Or(Frozen):
    items: tuple[Expr, ...]


class Not(Frozen):
    item: Expr


Expr = Union[Const, Fact, StepFact, Compare, Contains, Matches, And, Or, Not]  # noqa: UP007


def expr_steps(expr: Expr | None) -> set[str]:
    """Steps whose outcome a guard reads; each becomes a dependency of the guarded step."""
    if expr is None:
        return set()
    match expr:
        case StepFact(step=step):
            return {step}
        case Compare(left=left, right=right):
            return expr_steps(left) | expr_steps(right)
        case Contains(item=item, collection=coll):
            return expr_steps(item) | expr_steps(coll)
        case Matches(subject=subject):
            return expr_steps(subject)
        case And(items=items) | Or(items=items):
            return set().union(*(expr_steps(i) for i in items))
        case Not(item=item):
            return expr_steps(item)
    return set()


def expr_to_json(expr: Expr | None) -> Any:
    """Canonical JSON form used in the plan artifact (and thus in its content hash)."""
    if expr is None:
        return None
    match expr:
        case Const(value=v):
            return {"const": v}
        case Fact(path=p):
            return {"fact": ".".join(p)}
        case StepFact(step=s, predicate=p):
            return {"step": s, "is": p}
        case Compare(op=op, left=left, right=right):
            return {"op": op, "left": expr_to_json(left), "right": expr_to_json(right)}
        case Contains(item=item, collection=coll):
            return {"op": "in", "item": expr_to_json(item), "collection": expr_to_json(coll)}
        case Matches(subject=subject, pattern=pattern):
            return {"op": "matches", "subject": expr_to_json(subject), "pattern": pattern}
        case And(items=items):
            return {"op": "and", "items": [expr_to_json(i) for i in items]}
        case Or(items=items):
            return {"op": "or", "items": [expr_to_json(i) for i in items]}
        case Not(item=item):
            return {"op": "not", "item": expr_to_json(item)}
    raise TypeError(f"not an expression: {expr!r}")


def expr_to_text(expr: Expr | None) -> str:
    """Readable form for traces and the plan table."""
    if expr is None:
        return "always"
    match expr:
        case Const(value=v):
            return str(v).lower() if isinstance(v, bool) else str(v)
        case Fact(path=p):
            return ".".join(p)
        case StepFact(step=s, predicate=p):
            return f"{s}.{p}"
        case Compare(op=op, left=left, right=right):
            return f"{expr_to_text(left)} {op} {expr_to_text(right)}"
        case Contains(item=item, collection=coll):
            return f"{expr_to_text(item)} in {expr_to_text(coll)}"
        case Matches(subject=subject, pattern=pattern):
            return f'{expr_to_text(subject)} matches "{pattern}"'
        case And(items=items):
            return " and ".join(_paren(i) for i in items)
        case Or(items=items):
            return " or ".join(_paren(i) for i in items)
        case Not(item=item):
            return f"not {_paren(item)}"
    raise TypeError(f"not an expression: {expr!r}")


def _paren(expr: Expr) -> str:
    text = expr_to_text(expr)
    return f"({text})" if isinstance(expr, And | Or) else text


# --- steps and pipelines -----------------------------------------------------------------------


class Pricing(Frozen):
    input_per_million: Decimal
    output_per_million: Decimal


class StepNode(Frozen):
    """One model call (plus its retries) with everything resolved from the policy."""

    id: str
    role: str
    worker: str
    model: str  # provider/model-id as written in the policy
    provider: str
    provider_type: str
    group: str  # provider group, for independence invariants
    task: str
    max_tokens: int | None  # the tightest of the step's and its worker's
    timeout_ms: int
    retries: int
    credits: Decimal  # per-attempt reservation estimate
    p95_ms: int | None
    pricing: Pricing | None
    guard: Expr | None = None  # None = always runs (after static folding)
    temperature: float | None = None  # sampling temperature sent on the wire; None: the server's
    sees: tuple[str, ...] = ()
    optional_sees: tuple[str, ...] = ()  # declared `sees x?`: may be skipped
    after: tuple[str, ...] = ()
    span: Span | None = field(default=None, compare=False)
    # False when the step's worker is unknown (LOOM204): model, group, pricing and limits are
    # placeholders, so the checker does not reason about them.
    resolved: bool = field(default=True, compare=False)
    # True when the guard has an error (LOOM211-LOOM214): the step is analysed as unguarded,
    # so budget verdicts that count it are not reported either.
    guard_unresolved: bool = field(default=False, compare=False)

    @property
    def attempts(self) -> int:
        return self.retries + 1

    @property
    def certain(self) -> bool:
        """Whether analyses that count this step rest only on names that resolved."""
        return self.resolved and not self.guard_unresolved

    @property
    def access(self) -> tuple[str, ...]:
        return self.sees + self.optional_sees

    @property
    def dependencies(self) -> set[str]:
        return set(self.access) | set(self.after) | expr_steps(self.guard)

    def edges_in(self) -> Iterator[tuple[str, str]]:
        """``(step it waits for, why)``: its reads, its `after`s, then its guard's steps."""
        for dep in self.access:
            yield dep, "sees"
        for dep in self.after:
            yield dep, "after"
        for dep in sorted(expr_steps(self.guard)):
            yield dep, "guard"


class Require(Frozen):
    _compared = ("kind", "steps")  # the span is not compared

    kind: str  # "independent"
    steps: tuple[str, ...]
    span: Span | None = None


class Pipeline(Frozen):
    """One pipeline compiled for one tier: the unit the checker proves and the executor runs."""

    name: str
    tier: str | None  # None for tier-less pipelines (baseline, fixed, ...)
    policy: str
    instruction: str
    graph: StepGraph
    answer: tuple[str, ...]
    budget: Budget  # the promise: tightest of pipeline, tier and `loomc check` ceilings
    pipeline_budget: Budget
    tier_budget: Budget
    # Run-time limits (`loomc run --max-*`, ``loomc.run(ceilings=)``): not proved, enforced by
    # the ledger together with ``budget``; a run that reaches one stops `budget-limited`.
    limits: Budget = field(default_factory=Budget, compare=False)
    requires: tuple[Require, ...] = ()
    input_tokens: int = 4000
    backoff_base_ms: int = 250
    backoff_max_ms: int = 4000
    source: str | None = None
    kind: str = "general"  # task kind hint for the risk profiler: general, code-review, research
    span: Span | None = field(default=None, compare=False)
    budget_spans: Mapping[str, Span] = field(default_factory=dict, compare=False)
    # True when a `sees`/`after`/`answer`/`require` names an unknown step (LOOM203/LOOM208):
    # the reference is left out of the graph, so reachability is not judged (LOOM207).
    unknown_refs: bool = field(default=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.name}@{self.tier}" if self.tier else self.name

    @property
    def enforced(self) -> Budget:
        """What the ledger enforces: the tightest of the promise and the run-time limits."""
        return self.budget.tighten(self.limits)
