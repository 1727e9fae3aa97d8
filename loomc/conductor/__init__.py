"""The conductor: planners propose a plan for one run, the guard decides whether it runs.

`PLANNER_NAMES` lives here, import-free, so the CLI can list the planners without loading them
(`loomc.conductor.planners.PLANNER_NAMES` is the same tuple)."""

PLANNER_NAMES: tuple[str, ...] = ("risk", "search", "learned")
