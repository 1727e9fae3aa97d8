"""What a run needs of its pipeline and of each step, worked out once per compiled pipeline.

A compiled ``Pipeline`` is frozen and reused run after run (a project compiles each pipeline x
tier once; an eval runs thousands of cases on a handful of them), so everything the executor
derives from the pipeline alone is the same for every run: the enforced budget, the step order
and whether it is a chain, the input bound's fixed part, the checker's limit warnings and, per
step, its system message, its worst case (what the ledger reserves per attempt), its retry
policy and its request's fixed fields. Deriving them per run and per step cost about a tenth of
an eval run's CPU; here they are derived on a pipeline's first run and looked up after.

Entries are keyed by the pipeline's identity and hold the pipeline itself, so an id is never
reused while its entry lives; the table is bounded (the oldest entry goes first), so a caller
that builds a pipeline per run (``loomc run --max-*`` with new ceilings) keeps memory flat.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from loomc.checker.rules import limit_warnings
from loomc.checker.worstcase import step_attempt_cost
from loomc.exec.metered import JITTER, RetryPolicy
from loomc.exec.prompting import system_message
from loomc.exec.schedule import input_tokens, is_chain
from loomc.ir.model import Pipeline, StepNode
from loomc.providers.base import estimate_tokens
from loomc.units import Budget, Usage

_ENTRIES = 256  # pipelines remembered: a project's pipelines x tiers, with room to spare


@dataclass(frozen=True, slots=True)
class PreparedStep:
    """One step's fixed part: the same for every run of its pipeline."""

    step: StepNode
    system: str  # the system message (instruction, role frame, the untrusted-data rule)
    system_tokens: int  # its token estimate
    reserve: Usage  # one attempt's worst case: what the ledger reserves before sending
    retry: RetryPolicy
    timeout_s: float
    unpriced: bool  # the run enforces a money ceiling and this step's model has no pricing
    # the StepRecord fields every record of this step starts with
    identity: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PreparedPipeline:
    """A pipeline's fixed part (see the module docstring)."""

    pipeline: Pipeline
    enforced: Budget  # the tightest of the promise and the run-time limits
    order: list[str]  # topological order (shared by every run: never mutated)
    chain: bool  # each step depends on the one before it: run inline, no task per step
    input_base: int  # the input bound's estimate without the prompt's own tokens
    warnings: tuple[Any, ...]  # the checker's limit warnings (Diagnostics)
    steps: dict[str, PreparedStep]


_PREPARED: dict[int, PreparedPipeline] = {}
_LOCK = threading.Lock()  # taken on a miss only: a hit is one dict lookup


def prepared(pipeline: Pipeline) -> PreparedPipeline:
    """The fixed part of ``pipeline``, worked out on its first run."""
    found = _PREPARED.get(id(pipeline))
    if found is not None and found.pipeline is pipeline:
        return found
    made = _prepare(pipeline)
    with _LOCK:  # event loops in other threads (serve, Studio) share the table
        while len(_PREPARED) >= _ENTRIES:  # the oldest first
            del _PREPARED[next(iter(_PREPARED))]
        _PREPARED[id(pipeline)] = made
    return made


def _prepare(pipeline: Pipeline) -> PreparedPipeline:
    enforced = pipeline.enforced
    order = pipeline.graph.topological_order()
    steps = {}
    for step in pipeline.graph.steps():
        worst = step_attempt_cost(pipeline, step)
        system = system_message(pipeline, step)
        steps[step.id] = PreparedStep(
            step=step,
            system=system,
            system_tokens=estimate_tokens(system),
            reserve=Usage(
                calls=1,
                tokens=(worst.input_tokens or 0) + (worst.output_tokens or 0),
                credits=step.credits,
                cost=worst.cost or Decimal(0),
            ),
            retry=RetryPolicy(
                step.attempts, pipeline.backoff_base_ms, pipeline.backoff_max_ms, JITTER
            ),
            timeout_s=step.timeout_ms / 1000,
            unpriced=enforced.cost is not None and step.pricing is None,
            identity={
                "id": step.id,
                "role": step.role,
                "worker": step.worker,
                "model": step.model,
            },
        )
    return PreparedPipeline(
        pipeline=pipeline,
        enforced=enforced,
        order=order,
        chain=is_chain(pipeline, order),
        input_base=input_tokens(pipeline, ""),  # the prompt's own estimate is added per run
        warnings=tuple(limit_warnings(pipeline)) if pipeline.limits != Budget() else (),
        steps=steps,
    )
