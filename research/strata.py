"""The weights of training rows by stratum: the rows of ordinary-traffic files (``everyday-*``)
and those of every other (hard) file, each stratum weighing its share of a cost or a likelihood.

Why apart from ``router_fit``: both trainers weigh by it (``train_router.py`` the heads'
fit and thresholds, ``train_lexical.py`` the lexical model's fit), and ``band_for_keep.py``
re-chooses a band with the weights a file's meta records. Since round 40 a round's rule judges
ordinary and hard traffic a half each, while the pooled training rows are 86 % hard files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from loomc.risk.evaluate import load_rows


def stratum_weights(strata: Sequence[str], shares: Mapping[str, float]) -> np.ndarray:
    """Per-row weights under which each stratum weighs its share of the routing cost and every
    row weighs the same within its stratum: the cost a round's rule judges by (since round 40,
    ordinary and hard traffic a half each, each as a mean over its prompts). Scaled to a mean of
    1, so that shares equal to the strata's own row shares give every row 1, the unweighted
    cost. Why: the pooled training rows are 86% hard files, so an unweighted cost chooses the
    thresholds for hard traffic while the rule (and real traffic) weighs ordinary traffic more."""
    names = np.array(list(strata))
    if set(names) != set(shares):
        raise ValueError(f"strata {sorted(set(names))} but shares for {sorted(shares)}")
    if any(v <= 0 for v in shares.values()):
        raise ValueError("every stratum's share must be above 0")
    total = sum(shares.values())
    w = np.zeros(len(names))
    for name, share in shares.items():
        rows = names == name
        w[rows] = share / total / rows.sum()
    return w * len(names)


ORDINARY_PREFIX = "everyday-"  # the files of ordinary traffic (evals/routing/README.md)


def strata_of(paths: Sequence[Path]) -> list[str]:
    """Each training row's stratum, in the files' order: ``ordinary`` for the rows of
    ordinary-traffic files (``everyday-*``), ``hard`` for every other file's."""
    return [
        "ordinary" if p.name.startswith(ORDINARY_PREFIX) else "hard"
        for p in paths
        for _ in load_rows(p)
    ]


def ordinary_weights(paths: Sequence[Path], share: float | None) -> np.ndarray | None:
    """The rows' weights when ordinary traffic weighs ``share`` of the cost (None: unweighted)."""
    if share is None:
        return None
    if not 0 < share < 1:
        raise ValueError(f"--ordinary-weight must lie strictly between 0 and 1, got {share}")
    strata = strata_of(paths)
    if len(set(strata)) < 2:
        raise ValueError("--ordinary-weight needs both everyday-* files and others")
    return stratum_weights(strata, {"ordinary": share, "hard": 1 - share})
