"""The project that ships inside loomc: the reference pipelines, the mock policy and the demo's
dataset, so `loomc run hi` and `loomc demo` work in a folder with no project, and `loomc init`
has files to copy.

In a wheel they live in ``loomc/defaults/`` (pyproject force-include); in a checkout they are the
checkout's own ``pipelines/``, ``policies/`` and ``evals/``, the same files.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def packaged_root() -> Path | None:
    """The folder holding the packaged ``pipelines/``, ``policies/default.yaml``, ``evals/``."""
    for root in (_PACKAGE / "defaults", _PACKAGE.parent):
        if (root / "pipelines").is_dir() and (root / "policies" / "default.yaml").is_file():
            return root
    return None


def is_project(root: Path) -> bool:
    """A folder is a project once it has ``pipelines/`` or ``policies/`` of its own."""
    return (root / "pipelines").is_dir() or (root / "policies").is_dir()


def fallback_root(root: Path) -> Path | None:
    """The packaged project to use instead of ``root``, or None when ``root`` is a project."""
    return None if is_project(root) else packaged_root()
