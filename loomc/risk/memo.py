"""Each per-prompt analysis done once per profile call, however many features and rules read it.

Why: one semantic profile reads the same facts about a prompt several times over: the keyword
rules' view in the features and again in the decision, the cues in the features and again in
the reasons, whether code is present in the code-hazard columns, the purpose columns and the
``hazard-floor`` rule, the task families in the task columns and again for a long prompt's
purpose. Each is a pure function of the prompt's text (regular expressions, nothing else), so
inside :func:`one_pass` the first answer is kept and the later calls return it (issue 17: the
static stage's CPU per prompt).

Why scoped to a call and not an LRU cache across calls: a process profiling the same prompt
again (an eval's cells, the bench's releases interleaved prompt by prompt) should pay what a
fresh prompt pays, so nothing a later call sees depends on what an earlier one profiled, and
nothing outlives the call. A batch keeps at most ``LIMIT`` answers (then starts afresh): an
eval of 100,000 prompts holds a few thousand small tuples, not millions. Outside
:func:`one_pass` every function computes as before. The answers are tuples and booleans:
nothing a caller could change under another.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

LIMIT = 4096  # answers kept in one pass before it starts afresh
_MEMO: ContextVar[dict[tuple[Any, ...], Any] | None] = ContextVar("loomc_risk_memo", default=None)


@contextmanager
def one_pass() -> Iterator[None]:
    """Within it, each ``per_prompt`` function answers once per prompt (nested: the outer pass)."""
    if _MEMO.get() is not None:
        yield
        return
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def in_pass() -> bool:
    """Whether a :func:`one_pass` is open here (its answers are kept)."""
    return _MEMO.get() is not None


def _remember(memo: dict[tuple[Any, ...], Any], key: tuple[Any, ...], value: T) -> T:
    if len(memo) >= LIMIT:
        memo.clear()
    memo[key] = value
    return value


def per_prompt(fn: Callable[[str], T]) -> Callable[[str], T]:
    """``fn(prompt)``, kept for the rest of the current :func:`one_pass` (see the module doc)."""

    @functools.wraps(fn)
    def wrapper(prompt: str) -> T:
        memo = _MEMO.get()
        if memo is None:
            return fn(prompt)
        key = (fn, prompt)
        if key in memo:
            return memo[key]  # type: ignore[no-any-return]
        return _remember(memo, key, fn(prompt))

    return wrapper


def per_prompt_of(owner: object, name: object, prompt: str, compute: Callable[[], T]) -> T:
    """``compute()``, kept per (``owner``, ``name``, ``prompt``) for the current pass: a method's
    answer (``KeywordProfiler``'s, whose rules are its instance's; ``owner`` hashes by identity)."""
    memo = _MEMO.get()
    if memo is None:
        return compute()
    key = (owner, name, prompt)
    if key in memo:
        return memo[key]  # type: ignore[no-any-return]
    return _remember(memo, key, compute())


def recalled(owner: object, name: object, prompt: str) -> Any | None:
    """What :func:`keep` kept for (``owner``, ``name``, ``prompt``) in the current pass, else
    None: for a batch computed at once (an encoder's), where ``per_prompt_of`` would compute one
    prompt at a time."""
    memo = _MEMO.get()
    return None if memo is None else memo.get((owner, name, prompt))


def keep(owner: object, name: object, prompt: str, value: Any) -> None:
    """Keep ``value`` (read-only: not a thing a later reader could change) for the current pass."""
    memo = _MEMO.get()
    if memo is not None:
        _remember(memo, (owner, name, prompt), value)
