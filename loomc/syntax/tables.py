"""The LALR parser for the grammar, built once per grammar and kept in the user's cache.

Building lark's LALR tables from ``loom.lark`` takes about 60 ms, every time a process starts;
loading them takes a few. So the built parser is saved (``Lark.save``) under a key made of the
grammar text, the options, lark's version and Python's, and later processes load it: a changed
grammar or an upgraded lark gets a new key, never stale tables.

The cache is a convenience, never a requirement: when the folder cannot be created or written
(a read-only home, a sandbox) the parser is built in memory as before, and a file that cannot be
read back (truncated, from a foreign lark) is rebuilt and replaced. Files are written to a
temporary name and renamed, so a concurrent reader sees a whole file or none. A saved parser is
a pickle, so it is read only from a folder that belongs to the current user and that nobody else
may write to (``~/.cache/loomc``, or ``$XDG_CACHE_HOME/loomc``); ``LOOMC_CACHE_DIR`` chooses
another folder, and setting it empty turns the cache off.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "contextual",
    "propagate_positions": True,
    "maybe_placeholders": False,
}
"""The one set of options the grammar is compiled with (part of the cache key)."""


def cache_dir() -> Path | None:
    """Where saved parsers live, or None when the cache is turned off."""
    chosen = os.environ.get("LOOMC_CACHE_DIR")
    if chosen is not None:
        return Path(chosen) if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "loomc"


def cache_key(grammar: str, lark_version: str) -> str:
    """What the saved tables depend on: grammar text, options, lark's and Python's versions."""
    options = ",".join(f"{k}={v}" for k, v in sorted(OPTIONS.items()))
    python = ".".join(map(str, sys.version_info[:2]))
    text = "\0".join((grammar, options, lark_version, python))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def build_parser(grammar: str) -> Any:
    """A ready ``Lark`` parser for ``grammar``: loaded from the cache when a saved one fits,
    else built (and saved for the next process when the cache folder is usable)."""
    import lark

    folder = cache_dir()
    path = None
    if folder is not None:
        path = folder / f"parser-{cache_key(grammar, lark.__version__)}.lark"
        loaded = _load(path)
        if loaded is not None:
            return loaded
    parser = lark.Lark(grammar, **OPTIONS)
    if path is not None:
        _save(parser, path)
    return parser


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else (a pickle runs what it says)."""
    owner_ok = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return owner_ok and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _load(path: Path) -> Any | None:
    import lark

    try:
        if not _private(path.parent.stat()):
            return None
        with path.open("rb") as f:
            if not _private(os.fstat(f.fileno())):
                return None
            return lark.Lark.load(f)
    except FileNotFoundError:
        return None
    except Exception:  # a damaged or foreign file: rebuild and replace it
        return None


def _save(parser: Any, path: Path) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(path.parent.stat()):
            return
        fd, tmp = tempfile.mkstemp(prefix=".parser-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                parser.save(f)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return  # read-only or full disk: the parser in memory is all we needed


__all__ = ["OPTIONS", "build_parser", "cache_dir", "cache_key"]
