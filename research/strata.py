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
from typing import Any

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


def rows_and_strata(paths: Sequence[Path]) -> tuple[list[dict[str, Any]], list[str]]:
    """The files' rows in order, each file read once, and each row's stratum: ``ordinary`` for
    the rows of ordinary-traffic files (``everyday-*``), ``hard`` for every other file's."""
    rows: list[dict[str, Any]] = []
    strata: list[str] = []
    for path in paths:
        found = load_rows(path)
        rows.extend(found)
        strata += ["ordinary" if path.name.startswith(ORDINARY_PREFIX) else "hard"] * len(found)
    return rows, strata


def ordinary_weights(strata: Sequence[str], share: float | None) -> np.ndarray | None:
    """The rows' weights when ordinary traffic weighs ``share`` of the cost (None: unweighted)."""
    if share is None:
        return None
    if not 0 < share < 1:
        raise ValueError(f"--ordinary-weight must lie strictly between 0 and 1, got {share}")
    if len(set(strata)) < 2:
        raise ValueError("--ordinary-weight needs both everyday-* files and others")
    return stratum_weights(strata, {"ordinary": share, "hard": 1 - share})
