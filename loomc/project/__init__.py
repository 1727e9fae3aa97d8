"""The project stage: a folder of `.loom` files and YAML policies, loaded, compiled and checked.

It sits above ``check`` and below everything that runs: ``exec``-level callers (eval, the
conductor, the public API) get compiled, checked pipelines from a :class:`Project` and never
parse or compile on their own.

- ``workspace``: :class:`Project` (load once, compile each pipeline x tier once, reuse).
- ``checking``: ``loomc check`` as a function over paths (every pipeline x every policy).
- ``regress``: the ``--against REF`` budget-regression gate.
- ``plan_table``: the worst-case table that ``loomc plan`` prints.
"""

from loomc.project.workspace import Project, load_project

__all__ = ["Project", "load_project"]
