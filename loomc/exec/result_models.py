"""The pydantic twins of the result classes: the reference the plain classes are checked against.

:mod:`loomc.exec.result` holds the classes the runtime builds and reads, plain classes with no
pydantic in them, because importing pydantic and building these schemas costs ~0.1 s at every
cold ``loomc run`` (issue #16). The schemas of these models, with the plain classes swapped in
(:mod:`loomc.exec.plain`), do the jobs the plain classes hand over: validating data read back
(a journal, a store, ``RunResult(**data)`` from a caller), serialising to JSON
(``model_dump_json``: pydantic's bytes, which journals and receipts have always held) and the
JSON schema. ``tests/exec/test_result_twins.py`` holds both to the same dumps on generated
results. Change a field here and in ``result.py`` together.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    FieldSerializationInfo,
    ModelWrapValidatorHandler,
    PlainSerializer,
    PrivateAttr,
    field_serializer,
    model_validator,
)

from loomc.exec.plain import filled
from loomc.exec.result import StepStatus, StopReason
from loomc.units import Budget, Dimension, Usage

_AXES = ("calls", "tokens", "credits", "cost", "latency_ms")


def _empty(value: object) -> bool:
    """Fields added after journals were first written are left out of the JSON while empty, so
    a result read from an old journal is written back byte for byte (a per-field check: a
    serializer wrapping the whole model cost a Python call and a dict rebuild per result)."""
    return not value


# Exact decimals, written to JSON as their string (as `str(Decimal)`), read back from it.
Money = Annotated[Decimal, PlainSerializer(str, return_type=str, when_used="json")]


def _none_if_empty(value: object) -> object:
    return None if value == {} else value


def _usage_json(value: Usage | None) -> dict[str, str | int]:
    return {} if value is None else value.to_json()


# A reservation that may not have happened: ``{}`` in JSON, ``None`` here.
Reserved = Annotated[
    Usage | None,
    BeforeValidator(_none_if_empty),
    PlainSerializer(_usage_json, return_type=dict[str, str | int]),
]


class StepUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    estimated: bool = False


class StepRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    role: str
    worker: str
    model: str
    access: list[str] = Field(default_factory=list)
    status: StepStatus
    reason: str | None = None  # why skipped / stopped / failed
    elapsed_ms: int = 0
    attempts: int = 0
    usage: StepUsage = Field(default_factory=StepUsage)
    cost: Money | None = None  # USD; None when the model has no pricing
    credits: Money | None = None  # native spent credits when a receipt was returned
    reserved: Reserved = None  # the ledger's reservation per attempt; None when never reserved
    output: str | None = None


class BudgetReport(BaseModel):
    limits: Budget
    used: Usage
    reserved_peak: Reserved = None  # None when the report carries no peak
    limited: bool = False
    # The axes of ``limits``/``used`` when they were read from JSON that held only some of them:
    # they are written back with exactly those, so the JSON re-serialises byte for byte.
    _axes: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _read_axes(
        cls, data: Any, handler: ModelWrapValidatorHandler[BudgetReport]
    ) -> BudgetReport:
        if isinstance(data, BudgetReport):  # a report already built (a RunResult's field)
            return data
        report = handler(data)
        if isinstance(data, dict):
            report._axes = {
                name: tuple(value)
                for name in ("limits", "used")
                if isinstance(value := data.get(name), dict) and tuple(value) != _AXES
            }
        return report

    @field_serializer("limits", "used")
    def _write_axes(self, value: Budget | Usage, info: FieldSerializationInfo) -> dict[str, Any]:
        full: dict[str, Any] = dict(value.to_json())
        axes = self._axes.get(info.field_name)
        return full if axes is None else {k: full[k] for k in axes if k in full}


class LimitStop(BaseModel):
    model_config = ConfigDict(extra="forbid")

    outcome: str = "budget-limited"
    dimension: Dimension
    step: str | None = None  # the step that was not sent (None: the deadline cut the run off)
    needed: Money  # what the next attempt would have reserved
    left: Money  # what was left under the ceiling
    ceiling: Money
    source: str = "limit"  # "limit" (run time), "promise" (.loom/policy) or a parent ledger


class ModelUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0
    tokens_estimated: bool = False  # some tokens were counted locally (no usage from the server)
    credits: Money | None = None  # from the provider's receipts; None when none was sent
    estimated_credits: Money = Decimal(0)  # estimates for the calls that had no receipt
    cost: Money | None = None  # USD at the policy's pricing; None when unpriced


class RunResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str
    pipeline: str
    tier: str | None
    calls: int
    escalated: bool
    escalation_reason: str | None
    stop_reason: StopReason
    budget: BudgetReport
    steps: list[StepRecord]
    risk: dict[str, Any] = Field(default_factory=dict)
    elapsed_ms: int = 0
    cost: Money | None = None  # total USD, None unless every invoked model is priced
    missing_pricing: list[str] = Field(default_factory=list)
    credits: Money | None = None  # native credits, None when no receipt was seen
    estimated_credits: Money = Decimal(0)
    tokens: int = 0
    error: str | None = None
    receipt_hash: str
    # set when a ceiling stopped the run (budget-limited)
    limited_by: LimitStop | None = Field(default=None, exclude_if=_empty)
    models: dict[str, ModelUsage] = Field(  # per-model usage roll-up
        default_factory=dict, exclude_if=_empty
    )
    warnings: list[dict[str, Any]] = Field(  # checker warnings (JSON)
        default_factory=list, exclude_if=_empty
    )
    # The planner's verdict when a planner chose the plan; kept out of serialised results (the
    # eval journal, receipts) and added by callers that report it, like `loomc run --json`.
    conductor: dict[str, Any] | None = Field(default=None, exclude=True)


M = TypeVar("M", bound=BaseModel)


class _Shape:
    """What ``trusted`` needs of a model class, computed once: the defaults in field order,
    the fields built by a factory, the required fields and the private attributes."""

    __slots__ = ("factories", "names", "private", "required", "template")

    def __init__(self, cls: type[BaseModel]) -> None:
        fields = cls.model_fields
        self.names = frozenset(fields)
        self.template = {name: f.default for name, f in fields.items()}
        self.factories: tuple[tuple[str, Callable[[], Any]], ...] = tuple(
            (name, f.default_factory)  # type: ignore[misc]
            for name, f in fields.items()
            if f.default_factory is not None
        )
        self.required = frozenset(
            name for name, f in fields.items() if f.is_required() and f.default_factory is None
        )
        # private attributes: a factory each (a default is shared as it is, as pydantic does)
        self.private: tuple[tuple[str, Callable[[], Any]], ...] = tuple(
            (name, attr.default_factory or (lambda d=attr.default: d))  # type: ignore[misc]
            for name, attr in cls.__private_attributes__.items()
        )


_SHAPES: dict[type[BaseModel], _Shape] = {}


def trusted_pydantic(cls: type[M], values: dict[str, Any]) -> M:
    """``result.trusted`` for a pydantic model (the eval's ``RunRecord``): the instance that
    validation would build, built without it. ``model_construct`` is slower than validating."""
    shape = _SHAPES.get(cls)
    if shape is None:
        shape = _SHAPES[cls] = _Shape(cls)
    fields = filled(cls.__name__, shape, values)
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", fields)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    private = shape.private
    object.__setattr__(
        obj, "__pydantic_private__", {k: f() for k, f in private} if private else None
    )
    return obj


def _share_docstrings() -> None:
    """Each twin says what its plain class says (a JSON schema's descriptions come from them)."""
    from loomc.exec import result

    for twin in (StepUsage, StepRecord, BudgetReport, LimitStop, ModelUsage, RunResult):
        twin.__doc__ = getattr(result, twin.__name__).__doc__


_share_docstrings()
