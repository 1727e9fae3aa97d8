"""Load a script of `research/` as a module: research is not a package on `sys.path` (it
imports its siblings by name, run as `PYTHONPATH=research`), so tests load it by file.

`tests/` is on sys.path (the rootdir conftest lives here), so any test imports this as
`research_script`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

RESEARCH = Path(__file__).resolve().parents[1] / "research"


def research_script(name: str) -> ModuleType:
    """``research/NAME.py`` executed as a fresh module called ``name``, registered in
    ``sys.modules`` first as an import would be (a script's dataclasses look their module up
    there while the class is built)."""
    spec = importlib.util.spec_from_file_location(name, RESEARCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
