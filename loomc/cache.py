"""Entries in the user's cache folder keyed by content: what a process derived from a file (its
AST, a policy's data and positions) kept for the next process that reads the same bytes.

One folder for every cache: ``LOOMC_CACHE_DIR``, else ``$XDG_CACHE_HOME/loomc`` or
``~/.cache/loomc``; ``LOOMC_CACHE_DIR`` set empty turns every cache off, ``LOOMC_NO_CACHE=1``
every content cache (the parser tables of :mod:`loomc.syntax.tables` stay). An entry is used
only from a folder that belongs to the current user and nobody else may write to.

A cache can only ever save time. An entry is one line ``FORMAT KEY SHA256`` and a payload: read
back only when the format and the key are the ones asked for and the payload's SHA-256 matches,
so a truncated, corrupted, renamed or foreign entry is a miss, never wrong data; payloads are
JSON, which cannot run code. Entries are written to a temporary name and renamed (a concurrent
reader sees a whole entry or none); a folder that cannot be made or written (a read-only home,
a full disk) just means no entry. A folder holding :data:`MAX_ENTRIES` loses its oldest half at
the next write.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import sha256 as sha256
else:
    try:  # the interpreter's own SHA-256: `hashlib` loads OpenSSL first, ~3 ms CPU per start
        from _sha256 import sha256
    except ImportError:  # another Python (3.12 calls it `_sha2`) or a build without it
        from hashlib import sha256

MAX_ENTRIES = 2000
"""Entries kept in one cache's folder before a write prunes the oldest half (a few KiB each)."""

MAX_ENTRY_BYTES = 16 * 1024 * 1024
"""The largest entry read or written: anything bigger (a planted file, a link to a device) is a
miss after reading at most this much."""


def cache_dir() -> Path | None:
    """The folder every loomc cache lives under, or None when caching is turned off."""
    chosen = os.environ.get("LOOMC_CACHE_DIR")
    if chosen is not None:
        return Path(chosen) if chosen else None
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no $HOME and no passwd entry (a container's uid)
            return None
    return Path(base) / "loomc"


def content_caches_off() -> bool:
    """True when ``LOOMC_NO_CACHE`` is set to anything but empty or ``0``."""
    return os.environ.get("LOOMC_NO_CACHE", "") not in ("", "0")


def folder(kind: str) -> Path | None:
    """The folder of one content cache (``ast``, ``policy``), or None when it is off."""
    if content_caches_off():
        return None
    base = cache_dir()
    return None if base is None else base / kind


def private(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else."""
    owner_ok = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return owner_ok and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def content_key(fingerprint: bytes, text: str) -> str:
    """The key of ``text`` under ``fingerprint`` (what else the derived data depends on)."""
    return sha256(fingerprint + text.encode("utf-8", "surrogatepass")).hexdigest()


def read(where: Path, fmt: str, key: str) -> bytes | None:
    """The verified payload of entry ``key`` in ``where``, or None on any kind of miss."""
    try:
        if not private(where.stat()):
            return None
        with (where / f"{key}.json").open("rb") as f:
            raw = f.read(MAX_ENTRY_BYTES + 1)
        if len(raw) > MAX_ENTRY_BYTES:
            return None
        header, _, payload = raw.partition(b"\n")
        name, entry_key, digest = header.decode("ascii").split(" ")
    except (OSError, ValueError):  # missing, unreadable, not an entry
        return None
    if name != fmt or entry_key != key or sha256(payload).hexdigest() != digest:
        return None
    return payload


def write(where: Path, fmt: str, key: str, payload: bytes) -> None:
    """Save ``payload`` as entry ``key`` in ``where``; any failure to write is ignored."""
    data = f"{fmt} {key} {sha256(payload).hexdigest()}\n".encode("ascii") + payload
    if len(data) > MAX_ENTRY_BYTES:
        return
    if save(where / f"{key}.json", data):  # a private folder: pruning is ours to do
        with contextlib.suppress(OSError):
            prune(where)


def save(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` in a private folder (made if missing), whole or not at all:
    through a temporary name renamed over it. False when it cannot (a read-only home, a full
    disk, a folder others may write to): a cache is never needed."""
    import tempfile

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private(path.parent.stat()):
            return False
        fd, tmp = tempfile.mkstemp(prefix=".entry-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        return False
    return True


def prune(where: Path, limit: int = MAX_ENTRIES) -> None:
    """Remove the oldest half of the entries in ``where`` when it holds ``limit`` or more."""
    entries = [e for e in os.scandir(where) if e.name.endswith(".json")]
    if len(entries) < limit:
        return
    entries.sort(key=lambda e: e.stat().st_mtime)
    for entry in entries[: len(entries) // 2]:
        Path(entry.path).unlink(missing_ok=True)
