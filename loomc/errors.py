"""The root of every error loomc raises on purpose, so a caller can catch them all at once.

Exception tree (httpx's habit of drawing it where the root is defined; each class lives with
the stage that raises it, and keeps the builtin base it had before, so ``except ValueError``
still catches a ``PlanParseError``)::

    LoomcError
    ├── DiagnosticError            loomc.diagnostics: a source that does not compile or check
    ├── ProviderError              loomc.providers.base: a model call failed
    │   ├── RateLimited            429; carries retry_after_s
    │   ├── ProviderTimeout        no answer (or no next chunk) in time
    │   ├── HTTPStatusError        any other non-2xx; .status, .retryable for 5xx
    │   ├── StreamDropped          connection closed mid-stream; .partial holds what arrived
    │   ├── ConnectionFailed       the server could not be reached
    │   ├── MalformedResponse      a body or frame that could not be parsed
    │   │   └── ResponseTooLarge   a body past the provider's max_response_bytes
    │   └── ProviderConfigError    missing env var, bad base URL (never retried)
    ├── PlanParseError (ValueError)      loomc.conductor.plan: a malformed plan proposal
    ├── PlannerError (RuntimeError)      loomc.conductor.errors: no plan could be proposed
    │   └── PlannerUnavailable           the planner cannot run at all (model, pin, endpoint)
    ├── GuardError (RuntimeError)        loomc.conductor.guard: no plan passed the checker
    ├── GuardUndecided                   loomc.exec.guards: a guard's pattern ran past its bound
    ├── UserPatternError                 loomc.userregex: a user pattern could not be matched
    │   └── PatternTimeout               it ran past its time bound (userregex.TIMEOUT_S)
    └── eval input and state
        ├── DatasetError                 loomc.eval.dataset: a dataset file with problems
        ├── CheckError (ValueError)      loomc.eval.checks: a case check that is not valid
        ├── StrategyError (ValueError)   loomc.eval.strategies: an unknown strategy name
        ├── JudgeConfigError (ValueError)  loomc.eval.judge: --judge-model names nothing
        ├── ReceiptError                 loomc.eval.receipt: a receipt that cannot be loaded
        └── EvalAborted                  loomc.eval.runner: a cell failed unexpectedly
    ├── RiskSettingsError (ValueError)   loomc.risk.base: a policy's risk options name no profiler
    │   └── LoraError                    loomc.risk.lora: a LoRA delta tuned on another MiniLM
    ├── PlanRejected (RuntimeError)      loomc.api.running: a planner's run could not start
    ├── PlanningFailed (RuntimeError)    loomc.api.conducting: an eval's planner could not plan
    ├── BudgetRefused (RuntimeError)     loomc.api.evaluating: an eval's worst case passes its totals
    ├── StoreError                       loomc.store.base: a store that cannot be opened or written
    ├── BudgetExhausted                  loomc.store.base: a period budget cannot cover a run
    ├── OtelUnavailable                  loomc.store.otel: --otel without the otel extra
    ├── CalibrationRefused               loomc.api.calibrating: too few samples, or a failing policy
    └── ServeConfigError                 loomc.serve.auth: an unsafe or impossible `loomc serve`

Budget refusals are not exceptions: the ledger returns a ``Refused`` value and the run records
a stop reason (``loomc.exec.result.StopReason``), so completed outputs are kept.
"""

from __future__ import annotations

__all__ = ["LoomcError"]


class LoomcError(Exception):
    """Base class of every exception loomc raises deliberately."""
