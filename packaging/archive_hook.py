"""The build hook that fills an archive wheel (loomc-releases-v4, -v22, ...) with its era's files.

Why a hook and not a list: which files are archived, and in which era's distribution, is
loomc's to say (``loomc.risk.releases.archived_names``: every release's files but the wheel's
releases', each in the era of the first release that reads it), so the hook asks it, from the
checkout this folder sits in, and takes each file from ``loomc/risk/data``. A list kept here
would drift from the code the day the default moves. One hook serves every era's folder: the
project's name says which era it builds.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class ArchiveHook(BuildHookInterface):  # type: ignore[type-arg,unused-ignore]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        here = Path(__file__).resolve().parent
        checkout = here.parent
        if not (checkout / "loomc" / "risk" / "releases.py").is_file():
            raise RuntimeError(
                f"build {self.metadata.name} from a loomc checkout's packaging/ folder: "
                f"{checkout} holds no loomc package to ask which files it ships"
            )
        sys.path.insert(0, str(checkout))
        try:
            from loomc.risk.files import ARCHIVES, DATA, archive_package
            from loomc.risk.releases import archived_names
        finally:
            sys.path.remove(str(checkout))
        distribution = self.metadata.name
        if distribution not in ARCHIVES:
            raise RuntimeError(
                f"{distribution} is not one of loomc's archives ({', '.join(ARCHIVES)})"
            )
        names = archived_names(distribution)
        if not names or not all((DATA / n).is_file() for n in names):
            raise RuntimeError(f"build from a loomc checkout: {DATA} lacks {distribution}'s files")
        package = archive_package(distribution)
        build_data["force_include"][str(here / "archive_init.py")] = f"{package}/__init__.py"
        for name in names:
            build_data["force_include"][str(DATA / name)] = f"{package}/data/{name}"
