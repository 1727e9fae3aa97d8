"""The `loom-conductor-v2` research core: corpus generator, oracle, baselines, guard, scoring.

Everything here is byte-compatible with the published corpus at seed 20260716; see
`research/README.md` for the map and the v3 corpus that removes the v2 leaks.
"""
