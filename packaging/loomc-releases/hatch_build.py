"""The build hook that puts the archived releases' files into the loomc-releases wheel.

Why a hook and not a list: which files are archived is loomc's to say
(``loomc.risk.releases.archived_names``: every release's files but the wheel's releases'), so
the hook asks it, from the checkout this folder sits in, and takes each file from
``loomc/risk/data``. A list kept here would drift from the code the day the default moves.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class ArchiveHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        checkout = Path(self.root).resolve().parents[1]
        sys.path.insert(0, str(checkout))
        try:
            from loomc.risk.files import DATA
            from loomc.risk.releases import archived_names
        finally:
            sys.path.remove(str(checkout))
        names = archived_names()
        if not names or not all((DATA / n).is_file() for n in names):
            raise RuntimeError(f"build from a loomc checkout: {DATA} lacks archived files")
        for name in names:
            build_data["force_include"][str(DATA / name)] = f"loomc_releases/data/{name}"
