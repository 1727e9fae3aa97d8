"""The planners' errors, apart so that every planner module can raise them without cycles."""

from __future__ import annotations

from loomc.errors import LoomcError


class PlannerError(LoomcError, RuntimeError):
    """A planner could not propose anything (no feasible plan, model unavailable, ...)."""


class PlannerUnavailable(PlannerError):
    """The planner cannot run at all — a configuration problem, not a bad proposal: model or
    adapter missing, the adapter's pinned base model does not match, the endpoint is down.
    `loomc run` / `loomc eval` exit non-zero on it unless a fallback is explicitly allowed."""
