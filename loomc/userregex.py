"""User-written regular expressions, matched with a time bound.

Patterns written by users (``matches`` guards in ``.loom`` files, ``regex`` checks in eval
datasets, mock rule patterns in policies) run against text nobody controls (a prompt, a model's
answer). With ``re`` a pattern such as ``(a|aa)+$`` backtracks exponentially: a few dozen
characters take minutes, and ``re`` cannot be interrupted. They are matched here with the
third-party ``regex`` module instead, whose match functions take a ``timeout`` (seconds, for the
whole call) and raise ``TimeoutError`` when it passes; this module turns that into
:class:`PatternTimeout`, which each feature reports in its own way.

The bound is per decision, not per pattern: a guard of k ``matches``, the rules a mock call
scans, a row's ``regex`` checks share one :class:`MatchBudget`, so k hostile patterns cost 1 s, not
k. Matching releases the GIL (``regex``'s ``concurrent``), so a guard evaluated in a worker
thread leaves the event loop free while it runs.

Validation stays with ``re``: where a pattern is checked (``loomc check``, the policy loader, an
eval dataset) ``re.compile`` decides what is valid and words its errors, as before, and imports
nothing. A pattern is compiled with ``regex`` (``VERSION0``, ``re``'s syntax and semantics) only
when it is first matched, so ``regex`` (~10 ms to import) is loaded only by a run or an eval that
matches one.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

from loomc.errors import LoomcError

TIMEOUT_S = 1.0
"""How long one match of a user pattern may take. Ordinary patterns on the largest inputs loomc
accepts take milliseconds; a pattern that needs 1 s backtracks exponentially, and the next
character would double it. It is the time one decision's patterns share (``MatchBudget``): how
long a run waits on a guard, a mock call on its rules, an eval row on its checks."""


class UserPatternError(LoomcError):
    """A user pattern could not be matched; ``str()`` is the one-line reason (without the
    pattern, which each feature names in its own words), ``pattern`` the pattern."""

    def __init__(self, pattern: str, message: str) -> None:
        super().__init__(message)
        self.pattern = pattern


class PatternTimeout(UserPatternError):
    """A match ran past its time bound (``timeout_s``); ``shared`` when earlier patterns of the
    same decision had spent part of it."""

    def __init__(self, pattern: str, timeout_s: float, *, shared: bool = False) -> None:
        message = (
            f"patterns took longer than {timeout_s:g} s together"
            if shared
            else f"pattern took longer than {timeout_s:g} s"
        )
        super().__init__(pattern, message)
        self.timeout_s = timeout_s
        self.shared = shared


class MatchBudget:
    """The time one decision's patterns share: ``seconds`` in all, counted from the first match
    charged to it (building one costs no clock read)."""

    __slots__ = ("_end", "seconds", "used")

    def __init__(self, seconds: float = TIMEOUT_S) -> None:
        self.seconds = seconds
        self.used = 0  # matches charged so far
        self._end: float | None = None

    def take(self) -> float:
        """Seconds left for the next match (0 or less: none)."""
        now = time.monotonic()
        if self._end is None:
            self._end = now + self.seconds
        self.used += 1
        return self._end - now


class UserPattern:
    """A compiled user pattern whose matches are time-bounded."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str, compiled: Any) -> None:
        self.pattern = pattern
        self._compiled = compiled

    def search(self, text: str, budget: MatchBudget | None = None) -> Any:
        """``re.search``'s answer (a match or None), or :class:`PatternTimeout` once ``budget``
        (a fresh one of ``TIMEOUT_S`` when None) is spent."""
        budget = budget or MatchBudget()
        left = budget.take()
        shared = budget.used > 1
        if left <= 0:
            raise PatternTimeout(self.pattern, budget.seconds, shared=shared)
        try:
            return self._compiled.search(text, timeout=left, concurrent=True)
        except TimeoutError:
            raise PatternTimeout(self.pattern, budget.seconds, shared=shared) from None


def compile(pattern: str, *, ignorecase: bool = False) -> UserPattern:
    """``pattern`` compiled for time-bounded matching (cached). Raises :class:`UserPatternError`
    when ``regex`` refuses it. Callers have validated it with ``re.compile``, so that is a
    pattern ``re`` accepts and ``regex`` does not, which VERSION0 is meant to rule out."""
    return _compiled(pattern, ignorecase)


@lru_cache(maxsize=256)
def _compiled(pattern: str, ignorecase: bool) -> UserPattern:
    import regex

    flags = regex.VERSION0 | (regex.IGNORECASE if ignorecase else 0)
    try:
        return UserPattern(pattern, regex.compile(pattern, flags))
    except (regex.error, RecursionError, OverflowError) as exc:
        raise UserPatternError(
            pattern, f"pattern not supported by the matcher: {str(exc)[:120]}"
        ) from None
