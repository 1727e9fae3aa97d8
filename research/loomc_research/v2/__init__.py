"""The `loom-conductor-v2` research core: corpus generator, router baseline, guard, scoring.

Everything here is byte-compatible with the published corpus at seed 20260716. The oracle and
the outcome model it labels with are the product's `loomc.conductor.search` and
`loomc.conductor.outcome` (the `search` planner is the oracle); see `research/README.md`.
"""
