"""Which MiniLM a LoRA delta was trained on, checked when a profiler is built: without numpy and
without reading the 90 MB weights, where the installer recorded their hash.

Why: a release with a LoRA delta (v12) must refuse, at build and in one line, an installed base
other than the one its delta was tuned on (``loomc.risk.lora``). Hashing the whole
``model.safetensors`` for that, and reading the delta with numpy, cost ~0.2 s of CPU per process
(0.23 s to build v12's profiler against v9's 0.05): a cold ``loomc run`` whose prompt the static
stage decides never reads MiniLM, and its budget is 0.3 s. pip's ``RECORD`` in the package's
``.dist-info`` holds the file's sha256 as installed; comparing that with the delta's meta (read
by ``loomc.risk.npz``) is a few small reads. The record is parsed here rather than through
``importlib.metadata``: importing that costs ~40 ms of CPU, more than this whole check, and
it needs the distribution's name where a path is what the profiler has. Where no ``RECORD`` names the file (a MiniLM folder
given by path, an editable install) the whole file is hashed, as before. Either way the encoder
hashes the file it actually reads when it loads (``Delta.check_base``), so a file changed after
installation is still refused before a number is computed from it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import threading
from pathlib import Path

from loomc.risk.npz import NpzFormatError, read_members

_HASHES: dict[tuple[Path, int, int], str] = {}
_HASH_LOCK = threading.Lock()


def file_sha256(path: Path) -> str:
    """sha256 of ``path``, once per process for a given (path, size, mtime)."""
    st = path.stat()
    key = (path.resolve(), st.st_size, st.st_mtime_ns)
    with _HASH_LOCK:
        if key not in _HASHES:
            # One 64 KiB buffer, read into: a fresh 1 MiB bytes per read is above glibc's
            # 128 KiB mmap threshold, and freeing it raises the threshold for the rest of
            # the process, so an eval's later blocks up to 1 MiB were carved from the heap
            # (mem14). Same bytes hashed, same digest.
            h = hashlib.sha256()
            buf = bytearray(1 << 16)
            view = memoryview(buf)
            with path.open("rb") as fh:
                while n := fh.readinto(buf):
                    h.update(view[:n])
            _HASHES[key] = h.hexdigest()
        return _HASHES[key]


def recorded_sha256(model_file: Path) -> str | None:
    """The sha256 (hex) that the installer's ``RECORD`` gives for ``model_file``, or None.

    The file must sit inside an installed package (``site/PACKAGE/.../file``) whose
    ``site/PACKAGE-*.dist-info/RECORD`` lists it as ``PACKAGE/.../file,sha256=<urlsafe b64>,size``
    with the file's current size."""
    try:
        resolved = model_file.resolve()
        size = resolved.stat().st_size
    except OSError:
        return None
    for package in resolved.parents:
        site = package.parent
        if site == package:
            break
        relative = resolved.relative_to(site).as_posix()
        for info in sorted(site.glob(f"{package.name}-*.dist-info")):
            found = _from_record(info / "RECORD", relative, size)
            if found is not None:
                return found
    return None


def _from_record(record: Path, relative: str, size: int) -> str | None:
    try:
        lines = record.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        name, _, rest = line.partition(",")
        if name != relative:
            continue
        digest, _, listed = rest.partition(",")
        algo, _, value = digest.partition("=")
        if algo != "sha256" or listed != str(size):
            return None
        try:
            return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()
        except (binascii.Error, ValueError):
            return None
    return None


def delta_base_sha256(delta: Path) -> str | None:
    """The base sha256 a delta file's meta names, read without numpy (None when it cannot be
    read so: the full reader then reports what is wrong with it)."""
    try:
        meta = json.loads(read_members(delta, ("meta",))["meta"].texts()[0])
        return str(meta["base_sha256"])
    except (OSError, NpzFormatError, ValueError, KeyError, IndexError, TypeError):
        return None


def check_base_at_build(delta: Path, model_file: Path) -> None:
    """Refuse (``LoraError``) an installed base other than the one ``delta`` was tuned on."""
    want, got = delta_base_sha256(delta), recorded_sha256(model_file)
    if want is not None and got is not None and want == got:
        return
    from loomc.risk.lora import Delta  # numpy; the whole file hashed (or the delta unreadable)

    Delta(delta).check_base(model_file)
