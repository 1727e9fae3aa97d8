"""The threshold shift of semantic-v6 and later (``train_router.py --delta``): the thresholds a
file serves lowered by a margin below the ones its inner CV chose, which it keeps as
``cv_threshold`` and ``cv_signal_threshold`` for choosing a cascade band.

Why apart from ``router_fit``: the fit and its choices are one job; what a file serves after
them is another, read by ``train_router``, ``band_for_cap`` and the retraining checks.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def shift(arrays: Mapping[str, np.ndarray], delta: float) -> dict[str, np.ndarray]:
    """``arrays`` with both thresholds lowered by ``delta`` (semantic-v6: chosen by
    leave-one-split-out CV so that no held-out file leaves a high prompt unescalated, plus a
    margin). The thresholds the inner CV chose stay as ``cv_threshold`` and
    ``cv_signal_threshold``: the cascade band is chosen on those."""
    out = dict(arrays)
    out.setdefault("cv_threshold", np.float64(arrays["threshold"]))
    out.setdefault("cv_signal_threshold", np.float64(arrays["signal_threshold"]))
    t = max(float(out["cv_threshold"]) - delta, 0.0)
    out["threshold"] = np.float64(t)
    out["signal_threshold"] = np.float64(max(float(out["cv_signal_threshold"]) - delta, 0.0))
    out["medium_threshold"] = np.float64(round(t / 2, 2))
    out["delta"] = np.float64(delta)
    return out


def unshifted(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The thresholds the inner CV chose (``shift`` undone), for choosing a band."""
    out = dict(arrays)
    if "cv_threshold" in arrays:
        out["threshold"] = arrays["cv_threshold"]
        out["signal_threshold"] = arrays["cv_signal_threshold"]
    return out
