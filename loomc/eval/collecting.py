"""The cyclic garbage collector's young generation, collected less often while an eval runs.

An eval at concurrency 128 keeps ~128 runs' objects alive at any moment (their results, records,
ledgers, coroutine frames), and every run allocates a few hundred container objects more. With
the default threshold (a young collection every 700 net allocations) the collector walks those
live objects ~16 times per 1,000 runs and frees almost nothing: their lifetimes end by reference
counting, not in cycles. Measured on the 50 ms bench (`benchmarks/README.md`, "evalcpu3"): 5-7 %
of an eval's CPU, in pauses of 0.5-3 ms that hold up every run in flight at once.

:func:`fewer_collections` raises the young generation's threshold for the eval's duration only
and puts back the caller's setting after, also when the eval raises. Evals that overlap (two in
one process, from tasks or threads) share one raised setting: the first to enter saves the
caller's, the last to leave restores it. A threshold the caller changed during the eval is left
as they set it; a collector the caller disabled (or a threshold of 0) is not touched. Objects are
never frozen (``gc.freeze`` moves the caller's objects too, and cannot be undone exactly)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 10_000  # net allocations between young collections while an eval runs

_lock = threading.Lock()
_depth = 0  # evals inside the scope now
_saved: tuple[int, int, int] | None = None  # the caller's setting, while raised
_ours: tuple[int, int, int] | None = None  # the setting put in place, to see a caller's change


@contextmanager
def fewer_collections(young: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """Collect the young generation every ``young`` net allocations inside the block (never
    more often than the caller's setting), restoring the caller's threshold on the way out."""
    _enter(young)
    try:
        yield
    finally:
        _leave()


def _enter(young: int) -> None:
    global _depth, _saved, _ours
    with _lock:
        _depth += 1
        if _depth > 1:
            return  # an overlapping eval raised it already
        before = gc.get_threshold()
        if not gc.isenabled() or before[0] == 0 or before[0] >= young:
            return  # the caller chose: collector off, or as rare already
        _saved, _ours = before, (young, before[1], before[2])
        gc.set_threshold(*_ours)


def _leave() -> None:
    global _depth, _saved, _ours
    with _lock:
        _depth -= 1
        if _depth > 0 or _saved is None:
            return
        if gc.get_threshold() == _ours:  # a threshold the caller set meanwhile stays theirs
            gc.set_threshold(*_saved)
        _saved = _ours = None
