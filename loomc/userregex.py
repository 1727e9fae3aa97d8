"""User-written regular expressions, matched with a time bound.

Patterns written by users (``matches`` guards in ``.loom`` files, ``regex`` checks in eval
datasets, mock rule patterns in policies) run against text nobody controls (a prompt, a model's
answer). With ``re`` a pattern such as ``(a|aa)+$`` backtracks exponentially: a few dozen
characters take minutes, and ``re`` cannot be interrupted. They are matched here with the
third-party ``regex`` module instead, whose match functions take a ``timeout`` (seconds, for the
whole call) and raise ``TimeoutError`` when it passes; this module turns that into
:class:`PatternTimeout`, which each feature reports in its own way.

Validation stays with ``re``: where a pattern is checked (``loomc check``, the policy loader, an
eval dataset) ``re.compile`` decides what is valid and words its errors, as before, and imports
nothing. A pattern is compiled with ``regex`` (``VERSION0``, ``re``'s syntax and semantics) only
when it is first matched, so ``regex`` (~10 ms to import) is loaded only by a run or an eval that
matches one.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from loomc.errors import LoomcError

TIMEOUT_S = 1.0
"""How long one match of a user pattern may take. Ordinary patterns on the largest inputs loomc
accepts take milliseconds; a pattern that needs 1 s backtracks exponentially, and the next
character would double it. A guard is evaluated on the event loop, so this also bounds how long
one pattern can hold up every other run in the process."""


class UserPatternError(LoomcError):
    """A user pattern could not be matched; ``str()`` is the one-line reason (without the
    pattern, which each feature names in its own words), ``pattern`` the pattern."""

    def __init__(self, pattern: str, message: str) -> None:
        super().__init__(message)
        self.pattern = pattern


class PatternTimeout(UserPatternError):
    """A match ran past its time bound (``timeout_s``)."""

    def __init__(self, pattern: str, timeout_s: float) -> None:
        super().__init__(pattern, f"pattern took longer than {timeout_s:g} s")
        self.timeout_s = timeout_s


class UserPattern:
    """A compiled user pattern whose matches are time-bounded."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str, compiled: Any) -> None:
        self.pattern = pattern
        self._compiled = compiled

    def search(self, text: str, timeout_s: float = TIMEOUT_S) -> Any:
        """``re.search``'s answer (a match or None), or :class:`PatternTimeout`."""
        return self._run(self._compiled.search, text, timeout_s)

    def match(self, text: str, timeout_s: float = TIMEOUT_S) -> Any:
        return self._run(self._compiled.match, text, timeout_s)

    def fullmatch(self, text: str, timeout_s: float = TIMEOUT_S) -> Any:
        return self._run(self._compiled.fullmatch, text, timeout_s)

    def _run(self, method: Any, text: str, timeout_s: float) -> Any:
        try:
            return method(text, timeout=timeout_s)
        except TimeoutError:
            raise PatternTimeout(self.pattern, timeout_s) from None


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
