"""loomc's research track, beside the product and outside its wheel.

The `loom-conductor-v2` corpus (byte-exact at the published seed) and the leak-free v3 corpus,
the router baseline and reference guard, scoring and paired statistics, the learned ranker, LoRA
training, and the functions behind `loomc conductor generate|predict|guard|score|stats`
(`loomc_research.conductor`). It imports `loomc` (the plan contract, planners, outcome model and
search); `loomc` reaches it only lazily, from `loomc/cli/conductor.py`. See research/README.md.
"""
