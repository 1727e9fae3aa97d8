"""A policy file's YAML, read once: its data and key positions kept in the user's cache folder,
keyed by the file's content, so a later process reading the same bytes neither imports yaml
(~20 ms) nor composes the document again (a few ms per policy).

What is kept is what :func:`loomc.policy.load.load_policy_text` derives from the YAML before it
validates: the constructed data and the position of every key. Validation itself runs on every
load, hit or miss, so the policy, its findings and its errors are the ones the YAML gives. Only
data that JSON holds exactly is kept (string keys; strings, integers, finite floats, booleans,
null, lists and mappings): a policy with a date, a set, binary data or a non-string key is read
from its YAML every time, and so is one holding a key-shaped string (LOOM601 reports it; the
cache folder gets no copy of it). The entry's key covers the text, loomc's version, the reader's code
and the yaml package's version; entries are verified as :mod:`loomc.cache` describes.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

from loomc import __version__, cache
from loomc.diagnostics import Span
from loomc.secrets import looks_like_key

FORMAT = "loomc-policy-1"

Positions = dict[tuple[str, ...], Span]


@functools.cache
def fingerprint() -> bytes:
    """The format, loomc's version, the reading code and the installed yaml's version."""
    from importlib.machinery import PathFinder

    digest = cache.sha256(f"{FORMAT}\0{__version__}\0".encode())
    here = Path(__file__).resolve().parent
    files = [here / "load.py", here / "bounded_yaml.py", here / "cached.py"]
    spec = PathFinder.find_spec("yaml")
    files.append(Path(spec.origin) if spec and spec.origin else here / "no-yaml")
    for path in files:
        try:
            digest.update(path.read_bytes())
        except OSError:  # a module without its source: its name and the version must do
            digest.update(path.name.encode())
        digest.update(b"\0")
    return digest.digest()


def load(text: str, name: str) -> tuple[Any, Positions] | None:
    """The data and key positions of policy ``text`` read as file ``name``, or None."""
    where = cache.folder("policy")
    if where is None:
        return None
    payload = cache.read(where, FORMAT, cache.content_key(fingerprint(), text))
    if payload is None:
        return None
    try:
        entry = json.loads(payload)
        positions = {
            tuple(path): Span(name, line, column, end_line, end_column)
            for path, (line, column, end_line, end_column) in entry["positions"]
        }
        return entry["data"], positions
    except Exception:  # an entry this module did not write: read the YAML instead
        return None


def store(text: str, data: Any, positions: Positions) -> None:
    """Keep ``data`` and ``positions`` (spans in one file) for ``text`` when JSON holds them
    exactly; call it before validation, which may build from the data."""
    where = cache.folder("policy")
    if where is None or not exact(data) or looks_like_key(text):  # no copy of a key (LOOM601)
        return
    entry = {
        "data": data,
        "positions": [
            [list(path), [s.line, s.column, s.end_line, s.end_column]]
            for path, s in positions.items()
        ],
    }
    try:
        payload = json.dumps(entry, separators=(",", ":"), allow_nan=False).encode("ascii")
    except (TypeError, ValueError, RecursionError):  # what `exact` let through by mistake
        return
    cache.write(where, FORMAT, cache.content_key(fingerprint(), text), payload)


def exact(value: Any, depth: int = 0) -> bool:
    """Whether JSON gives ``value`` back equal and of the same types."""
    if depth > 200:  # past what the bounded reader lets through; and json's own recursion
        return False
    if value is None or type(value) in (str, bool, int):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(exact(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) is str and exact(v, depth + 1) for k, v in value.items())
    return False
