"""Evaluate IR guard expressions against the facts known when a step becomes ready."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from loomc.errors import LoomcError
from loomc.exec.result import StepStatus
from loomc.ir.guards import compare_values
from loomc.ir.model import (
    RISK_ORDER,
    And,
    Compare,
    Const,
    Contains,
    Expr,
    Fact,
    Matches,
    Not,
    Or,
    StepFact,
    expr_to_text,
)
from loomc.risk.base import RiskProfile
from loomc.userregex import MatchBudget, UserPatternError

REFUSAL_PREFIXES = ("i can't", "i cannot", "i can’t", "sorry", "unable to")


class GuardUndecided(LoomcError):
    """A guard could not be evaluated (a ``matches`` pattern ran past its time bound). Neither
    answer is safe to assume: taken as false it would skip a verification step on exactly the
    input crafted to defeat its pattern; taken as true, send a step the author meant to gate. So
    the run stops before the step (``StopReason.GUARD_UNDECIDED``), keeping what completed.
    ``str()`` is the reason recorded on the step, one line naming the ``matches`` and why."""


@dataclass(frozen=True, slots=True)
class Outcome:
    status: StepStatus
    output: str = ""

    @property
    def ran(self) -> bool:
        return self.status.ran


def is_refusal(text: str) -> bool:
    t = text.strip().lower()
    return not t or t.startswith(REFUSAL_PREFIXES)


def step_predicate(outcome: Outcome | None, predicate: str) -> bool:
    if outcome is None:
        return False
    text = outcome.output.strip()
    return {
        "ran": outcome.ran,
        "skipped": not outcome.ran,
        "ok": outcome.status is StepStatus.OK,
        "failed": outcome.status is StepStatus.FAILED,
        "empty": outcome.status is StepStatus.OK and not text,
        "refused": outcome.status is StepStatus.OK and is_refusal(text),
    }[predicate]


class Facts:
    def __init__(self, risk: RiskProfile, prompt: str, outcomes: Mapping[str, Outcome]) -> None:
        self.risk = risk
        self.prompt = prompt
        self.outcomes = outcomes

    def fact(self, path: tuple[str, ...]) -> object:
        match path:
            case ("risk",) | ("risk", "level"):
                return self.risk.level
            case ("risk", "kind"):
                return self.risk.kind
            case ("risk", "complexity"):
                return self.risk.complexity
            case ("risk", "signals"):
                return set(self.risk.signals)
            case ("risk", "probability"):
                return self.risk.probability if self.risk.probability is not None else 0.0
            case ("input",):
                return self.prompt
            case ("input", "length"):
                return len(self.prompt)
        raise KeyError(".".join(path))


def evaluate(expr: Expr | None, facts: Facts) -> bool:
    """The guard's answer. Its ``matches`` share one time bound (``loomc.userregex.MatchBudget``):
    a guard of k hostile patterns is undecided after 1 s, not k."""
    return True if expr is None else bool(_value(expr, facts, MatchBudget()))


def uses_patterns(expr: Expr | None) -> bool:
    """Whether evaluating ``expr`` may run a user pattern (and so take up to a second: the
    executor evaluates such a guard in a worker thread, off the event loop)."""
    match expr:
        case Matches():
            return True
        case And(items=items) | Or(items=items):
            return any(uses_patterns(i) for i in items)
        case Not(item=item):
            return uses_patterns(item)
        case Contains(item=item, collection=coll):
            return uses_patterns(item) or uses_patterns(coll)
        case Compare(left=left, right=right):
            return uses_patterns(left) or uses_patterns(right)
    return False


def _value(expr: Expr, facts: Facts, budget: MatchBudget) -> object:
    match expr:
        case Const(value=v):
            return v
        case Fact(path=p):
            return facts.fact(p)
        case StepFact(step=s, predicate=p):
            return step_predicate(facts.outcomes.get(s), p)
        case And(items=items):
            return all(_value(i, facts, budget) for i in items)
        case Or(items=items):
            return any(_value(i, facts, budget) for i in items)
        case Not(item=item):
            return not _value(item, facts, budget)
        case Matches(subject=subject) as m:
            text = str(_value(subject, facts, budget))
            try:
                return m.compiled().search(text, budget) is not None
            except UserPatternError as exc:  # undecided: the run stops before the step
                raise GuardUndecided(f"guard undecided: {expr_to_text(m)}: {exc}") from None
        case Contains(item=item, collection=coll):
            c = _value(coll, facts, budget)
            return (
                _value(item, facts, budget) in c
                if isinstance(c, set | list | tuple | str)
                else False
            )
        case Compare(op=op, left=left, right=right):
            a, b = _value(left, facts, budget), _value(right, facts, budget)
            if (isinstance(left, Fact) and left.path[-1] in ("risk", "level", "complexity")) or (
                isinstance(right, Fact) and right.path[-1] in ("risk", "level", "complexity")
            ):
                a, b = RISK_ORDER.get(str(a), -1), RISK_ORDER.get(str(b), -1)
            return compare_values(op, a, b)
    raise TypeError(expr)
