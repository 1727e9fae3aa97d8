"""The typed result of one run: what `loomc run --json` prints and what `loomc eval` records.

Statuses and stop reasons are string enums whose values are the words written to JSON; money
and credits are exact decimals written as strings; budgets are the runtime's own ``Budget`` and
``Usage``. The JSON is what it always was, so journals and receipts written earlier still load
and re-serialise byte for byte.

The classes are plain objects with pydantic's interface (:mod:`loomc.exec.plain`), so a run
imports no pydantic: validation, ``model_dump_json`` and the schema are their pydantic twins'
(:mod:`loomc.exec.result_models`), imported when asked. ``model_dump`` is written here, field by
field in pydantic's order, and held to the twins' by ``tests/exec/test_result_twins.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from loomc.exec.plain import (
    REQUIRED,
    Factory,
    PlainModel,
    data_copy,
    money,
    nested,
    nested_dict,
    nested_list,
    reservation,
    strings,
    word,
)
from loomc.units import Budget, Dimension, Usage

if TYPE_CHECKING:  # pydantic types, built on first use (``__getattr__`` below)
    from loomc.exec.result_models import Money as Money
    from loomc.exec.result_models import Reserved as Reserved


class StepStatus(StrEnum):
    RUNNING = "running"  # reserved and sent; left so when the run deadline cancels it
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"  # guard false, or reads a step that did not complete
    BUDGET_STOPPED = "budget-stopped"
    CANCELLED = "cancelled"  # the run deadline passed before it started

    @property
    def ran(self) -> bool:
        """Whether the step was sent (and so produced an outcome other steps can read)."""
        return self in (StepStatus.OK, StepStatus.FAILED)


class StopReason(StrEnum):
    """Why a run ended."""

    COMPLETED = "completed"
    DIRECT_ANSWER_ACCEPTED = "direct-answer-accepted"
    ERROR = "error"  # no answer, and a step failed
    INPUT_TOO_LARGE = "input-too-large"
    MAX_CALLS = "max-calls-reached"
    MAX_TOKENS = "max-tokens-reached"
    MAX_CREDITS = "max-credits-reached"
    MAX_COST = "max-cost-reached"
    MAX_LATENCY = "max-latency-reached"
    OVER_CEILING = "over-ceiling"  # a provider reported more than a ceiling left; none sent after
    # a step's guard could not be decided (a ``matches`` pattern ran past its time bound): the
    # run stops before that step, as before a step that would not fit, and none is sent after
    GUARD_UNDECIDED = "guard-undecided"

    @classmethod
    def ceiling(cls, dimension: Dimension) -> StopReason:
        """The stop reason of a run that reached its ceiling on ``dimension``."""
        return _CEILINGS[dimension]

    @property
    def dimension(self) -> Dimension | None:
        """The budget dimension whose ceiling stopped the run; None for any other reason."""
        return _DIMENSIONS.get(self)

    @property
    def limited(self) -> bool:
        """A budget ceiling (reached or passed) or the input bound stopped the run."""
        return self in _LIMITED


_CEILINGS = {
    Dimension.CALLS: StopReason.MAX_CALLS,
    Dimension.TOKENS: StopReason.MAX_TOKENS,
    Dimension.CREDITS: StopReason.MAX_CREDITS,
    Dimension.COST: StopReason.MAX_COST,
    Dimension.LATENCY: StopReason.MAX_LATENCY,
}
# read on every receipt: looked up, not searched
_DIMENSIONS = {reason: dim for dim, reason in _CEILINGS.items()}
_LIMITED = frozenset((*_DIMENSIONS, StopReason.INPUT_TOO_LARGE, StopReason.OVER_CEILING))


def __getattr__(name: str) -> Any:
    """``Money`` and ``Reserved`` (pydantic field types, for pydantic models that hold money,
    like the eval's records) import pydantic: built when first asked for, not by a run."""
    if name in ("Money", "Reserved"):
        from loomc.exec import result_models

        return getattr(result_models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- the classes ----------------------------------------------------------------------------------


class StepUsage(PlainModel):
    """The tokens of one step: from the provider's usage, or ``estimated`` locally."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    estimated: bool
    fields: ClassVar[dict[str, Any]] = {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
        "estimated": False,
    }


class StepRecord(PlainModel):
    """One step of a run as it ended: who ran it, its status, attempts, usage, money, output."""

    id: str
    role: str
    worker: str
    model: str
    access: list[str]
    status: StepStatus
    reason: str | None  # why skipped / stopped / failed
    elapsed_ms: int
    attempts: int
    usage: StepUsage
    cost: Decimal | None  # USD; None when the model has no pricing
    credits: Decimal | None  # native spent credits when a receipt was returned
    reserved: Usage | None  # the ledger's reservation per attempt; None when never reserved
    output: str | None
    fields: ClassVar[dict[str, Any]] = {
        "id": REQUIRED,
        "role": REQUIRED,
        "worker": REQUIRED,
        "model": REQUIRED,
        "access": Factory(list),
        "status": REQUIRED,
        "reason": None,
        "elapsed_ms": 0,
        "attempts": 0,
        "usage": Factory(lambda: StepUsage.trusted({})),
        "cost": None,
        "credits": None,
        "reserved": None,
        "output": None,
    }

    kinds: ClassVar[dict[str, Callable[[Any, bool], Any]]] = {
        "access": strings,
        "status": word,
        "usage": nested,
        "cost": money,
        "credits": money,
        "reserved": reservation,
    }


class BudgetReport(PlainModel):
    """A run's ceilings, what it used, its peak reservation and whether a ceiling stopped it."""

    limits: Budget
    used: Usage
    reserved_peak: Usage | None  # None when the report carries no peak
    limited: bool
    fields: ClassVar[dict[str, Any]] = {
        "limits": REQUIRED,
        "used": REQUIRED,
        "reserved_peak": None,
        "limited": False,
    }
    # The axes of ``limits``/``used`` when they were read from JSON that held only some of them:
    # they are written back with exactly those, so the JSON re-serialises byte for byte.
    private: ClassVar[dict[str, Callable[[], Any]]] = {"_axes": dict}

    @property
    def _axes(self) -> dict[str, tuple[str, ...]]:
        axes: dict[str, tuple[str, ...]] = (self.__pydantic_private__ or {}).get("_axes", {})
        return axes

    def dump(self, json: bool) -> dict[str, Any]:
        d = self.__dict__
        return {
            "limits": self._written(d["limits"], "limits"),
            "used": self._written(d["used"], "used"),
            "reserved_peak": reservation(d["reserved_peak"], json),
            "limited": d["limited"],
        }

    def _written(self, value: Budget | Usage, name: str) -> dict[str, Any]:
        full: dict[str, Any] = dict(value.to_json())
        axes = self._axes.get(name)
        return full if axes is None else {k: full[k] for k in axes if k in full}


class LimitStop(PlainModel):
    """Why a run stopped ``budget-limited``: the step that would not fit and the numbers."""

    outcome: str
    dimension: Dimension
    step: str | None  # the step that was not sent (None: the deadline cut the run off)
    needed: Decimal  # what the next attempt would have reserved
    left: Decimal  # what was left under the ceiling
    ceiling: Decimal
    source: str  # "limit" (run time), "promise" (.loom/policy) or a parent ledger
    fields: ClassVar[dict[str, Any]] = {
        "outcome": "budget-limited",
        "dimension": REQUIRED,
        "step": None,
        "needed": REQUIRED,
        "left": REQUIRED,
        "ceiling": REQUIRED,
        "source": "limit",
    }

    kinds: ClassVar[dict[str, Callable[[Any, bool], Any]]] = {
        "dimension": word,
        "needed": money,
        "left": money,
        "ceiling": money,
    }

    def describe(self) -> str:
        what = f"step {self.step!r}" if self.step else "the run"
        if self.dimension is Dimension.LATENCY:
            return f"budget-limited: the {self.source} latency {self.ceiling} ms cut off {what}"
        return (
            f"budget-limited: {what} needs {self.needed} {self.dimension.value}, "
            f"{self.left} left of the {self.source} {self.ceiling}"
        )


class ModelUsage(PlainModel):
    """What one model was used for in a run: the per-model roll-up of the receipt."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    tokens: int
    tokens_estimated: bool  # some tokens were counted locally (no usage from the server)
    credits: Decimal | None  # from the provider's receipts; None when none was sent
    estimated_credits: Decimal  # estimates for the calls that had no receipt
    cost: Decimal | None  # USD at the policy's pricing; None when unpriced
    fields: ClassVar[dict[str, Any]] = {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "tokens": 0,
        "tokens_estimated": False,
        "credits": None,
        "estimated_credits": Decimal(0),
        "cost": None,
    }

    kinds: ClassVar[dict[str, Callable[[Any, bool], Any]]] = {
        "credits": money,
        "estimated_credits": money,
        "cost": money,
    }


class RunResult(PlainModel):
    """One run of one pipeline x tier on one prompt: the answer, why the run stopped, every
    step, the budget report, money and tokens, and the receipt hash over them."""

    answer: str
    pipeline: str
    tier: str | None
    calls: int
    escalated: bool
    escalation_reason: str | None
    stop_reason: StopReason
    budget: BudgetReport
    steps: list[StepRecord]
    risk: dict[str, Any]
    elapsed_ms: int
    cost: Decimal | None  # total USD, None unless every invoked model is priced
    missing_pricing: list[str]
    credits: Decimal | None  # native credits, None when no receipt was seen
    estimated_credits: Decimal
    tokens: int
    error: str | None
    receipt_hash: str
    limited_by: LimitStop | None  # set when a ceiling stopped the run (budget-limited)
    models: dict[str, ModelUsage]  # per-model usage roll-up
    warnings: list[dict[str, Any]]  # checker warnings (JSON)
    # The planner's verdict when a planner chose the plan; kept out of serialised results (the
    # eval journal, receipts) and added by callers that report it, like `loomc run --json`.
    conductor: dict[str, Any] | None
    fields: ClassVar[dict[str, Any]] = {
        "answer": REQUIRED,
        "pipeline": REQUIRED,
        "tier": REQUIRED,
        "calls": REQUIRED,
        "escalated": REQUIRED,
        "escalation_reason": REQUIRED,
        "stop_reason": REQUIRED,
        "budget": REQUIRED,
        "steps": REQUIRED,
        "risk": Factory(dict),
        "elapsed_ms": 0,
        "cost": None,
        "missing_pricing": Factory(list),
        "credits": None,
        "estimated_credits": Decimal(0),
        "tokens": 0,
        "error": None,
        "receipt_hash": REQUIRED,
        "limited_by": None,
        "models": Factory(dict),
        "warnings": Factory(list),
        "conductor": None,
    }

    kinds: ClassVar[dict[str, Callable[[Any, bool], Any]]] = {
        "stop_reason": word,
        "budget": nested,
        "steps": nested_list,
        "risk": data_copy,
        "cost": money,
        "missing_pricing": strings,
        "credits": money,
        "estimated_credits": money,
        "limited_by": nested,
        "models": nested_dict,
        "warnings": data_copy,
    }
    # left out of the JSON while empty: added after journals were first written, so a result
    # read from an old journal is written back byte for byte; ``conductor`` always
    omit_empty = frozenset(("limited_by", "models", "warnings", "conductor"))
    never_dumped = frozenset(("conductor",))


M = TypeVar("M")


def trusted(cls: type[M], **values: Any) -> M:
    """An instance of ``cls`` from values the runtime itself built, without validating them.

    Validation is for data read back (journals, stores, providers' JSON); on the run's hot
    path every value already has its field's type, and validating a result, its report and its
    per-model roll-up cost more than the rest of building the receipt. The instance is the
    one validation would build: same ``__dict__`` (defaults filled in field order), same
    fields set, private attributes at their defaults (a property test holds both to equality
    and to the same JSON). ``cls`` is one of the classes above, or a pydantic model that holds
    them (the eval's ``RunRecord``).
    """
    if issubclass(cls, PlainModel):
        made: M = cls.trusted(values)
        return made
    from loomc.exec.result_models import trusted_pydantic

    return trusted_pydantic(cls, values)  # type: ignore[type-var]
