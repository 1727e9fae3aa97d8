"""What ``risk.options`` may hold, checked once for ``loomc check`` and for every profiler built.

Why here and not in the policy schema: the values are the risk stage's (its releases, its
backends, what MiniLM's pass runs in), and the policy layer sits below ``loomc.risk``, so it
cannot name them; ``options`` stays a free mapping there. Why one list of rules for both: before
it, ``loomc run`` refused some bad values only when the profiler got to them (``threads: abc``),
took others silently (``cascade: "no"`` read as true, ``threads: -3``, ``cache: -1``, a misspelt
key, a ``data`` file that is not there falling back to keywords), and ``loomc check`` said nothing
about any of them. Now ``make_profiler`` refuses the first error before a model is called, and
``loomc check`` reports every problem at the option's file:line:col (LOOM608, LOOM609).

An unknown key is a warning, not an error: a policy written for a newer loomc keeps running here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loomc.diagnostics import Diagnostic, Severity
from loomc.risk.releases import (
    BACKENDS,
    DEFAULT_RELEASE,
    INT8_KINDS,
    MINILM_KINDS,
    RELEASES,
    archive_hint,
    missing_files,
)

if TYPE_CHECKING:
    from loomc.policy.load import PolicySource

DTYPES = ("float32", "float64")
# The members a router file holds, each read by ``RouterWeights.from_arrays`` (a file missing
# one is refused there too; tests/risk/test_risk_options.py holds the two lists together).
ROUTER_MEMBERS = (
    "weights",
    "bias",
    "mean",
    "scale",
    "platt_a",
    "platt_b",
    "threshold",
    "signal_threshold",
    "medium_threshold",
    "train_ids",
    "train_labels",
    "train_levels",
    "train_emb",
)
_FRACTIONS = ("threshold", "signal_threshold", "medium_threshold", "band_low", "band_high")
_SWITCHES = ("cascade", "negation", "trivia")
_COUNTS = ("threads", "cache")
KNOWN = ("release", "data", "backend", "dtype", *_FRACTIONS, *_COUNTS, *_SWITCHES)


class OptionProblem:
    """One finding: ``error`` False is a warning (an unknown key). A plain class: a NamedTuple
    costs ~0.3 ms of import on ``loomc check``'s path."""

    __slots__ = ("error", "hint", "key", "message")

    def __init__(self, key: str, message: str, error: bool, hint: str) -> None:
        self.key, self.message, self.error, self.hint = key, message, error, hint


def _shown(value: Any) -> str:
    """A value as an error quotes it: a hostile policy's 5,000-character string is cut."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_file(path: str) -> bool:
    try:
        return Path(path).is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL in it
        return False


def router_file_problem(path: str) -> str | None:
    """Why the file at ``path`` is not a router (not a zip archive, or a member missing), or
    None. Read from the archive's directory alone (``loomc.risk.npz.member_names``): no array
    is read and numpy is not imported, so ``loomc check`` says it before any run loads it."""
    from loomc.risk.npz import NpzFormatError, member_names

    file = Path(path)
    try:
        names: frozenset[str] | set[str] = member_names(file)
    except NpzFormatError:  # a ZIP64 or otherwise unusual archive this reader declines
        import zipfile

        try:
            with zipfile.ZipFile(file) as archive:
                names = {name.removesuffix(".npy") for name in archive.namelist()}
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            return f"{_shown(file.name)} is not a router file (not an .npz archive)"
    except OSError as exc:
        return f"{_shown(file.name)} cannot be read ({exc.strerror or exc})"
    missing = [member for member in ROUTER_MEMBERS if member not in names]
    if missing:
        return f"{_shown(file.name)} is not a router file (no member {missing[0]!r})"
    return None


def _words(value: Any, allowed: Sequence[str]) -> tuple[bool, str, str]:
    known = ", ".join(allowed)
    return (
        isinstance(value, str) and value in allowed,
        f"must be one of {known}, got {_shown(value)}",
        f"use one of {known}",
    )


def _check(key: str, value: Any) -> tuple[bool, str, str]:
    """(ok, what is wrong, hint) for one known option's value."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if key == "release":
        ok, wrong, hint = _words(value, list(RELEASES))  # in release order: v4 ... the newest
        missing = missing_files(value) if ok else []
        if missing:  # an archived release where its era's archive is not installed
            shown = ", ".join(missing)
            return False, f"{value} is not in this install (no {shown})", archive_hint(value)
        return ok, wrong, hint
    if key == "backend":
        return _words(value, BACKENDS)
    if key == "dtype":
        return _words(value, DTYPES)
    if key in _FRACTIONS:
        ok = number and 0 <= value <= 1
        return ok, f"must be between 0 and 1, got {_shown(value)}", "a probability, e.g. 0.5"
    if key in _COUNTS:
        ok = number and isinstance(value, int) and value >= 0
        hint = "threads: 1 (0 leaves BLAS alone); cache: 1024 (0 disables)"
        return ok, f"must be a whole number of at least 0, got {_shown(value)}", hint
    if key in _SWITCHES:
        return (
            isinstance(value, bool),
            f"must be true or false, got {_shown(value)}",
            "write true or false, unquoted",
        )
    ok = isinstance(value, str) and bool(value.strip())  # data: another router file
    return ok, f"must be a file path, got {_shown(value)}", "a router .npz file"


def _unknown(key: str) -> OptionProblem:
    import difflib  # compiles patterns at import: only for a key nobody knows

    near = difflib.get_close_matches(key, KNOWN, n=1)
    hint = f"did you mean `{near[0]}`?" if near else "known: " + ", ".join(KNOWN)
    return OptionProblem(key, f"unknown risk option {_shown(key)} (ignored)", False, hint)


def option_problems(options: Mapping[str, Any], *, files: bool = True) -> list[OptionProblem]:
    """Every problem with ``risk.options``, in the order the keys were written. ``files``: also
    say when ``data`` names no file (``loomc check`` does not: the path is read from the working
    directory of the run, which a check cannot know). A ``data`` file that is there, seen from
    this process's directory, is opened either way: one that is not a router is an error."""
    out: list[OptionProblem] = []
    for key, value in options.items():
        if key not in KNOWN:
            out.append(_unknown(str(key)))
            continue
        ok, wrong, hint = _check(key, value)
        if not ok:
            out.append(OptionProblem(key, f"risk.options.{key} {wrong}", True, hint))
        elif key == "data" and not _is_file(value):
            if files:
                hint = "the path is read from the working directory"
                shown = f"risk.options.data: no such file {_shown(value)}"
                out.append(OptionProblem(key, shown, True, hint))
        elif key == "data" and (problem := router_file_problem(value)) is not None:
            hint = "a router .npz written by research/train_router.py"
            out.append(OptionProblem(key, f"risk.options.data: {problem}", True, hint))
    low: Any = options.get("band_low")
    high: Any = options.get("band_high")
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (low, high))
    if numbers and 0 <= high <= low <= 1:  # both fractions, and the band would hold no prompt
        wrong = f"risk.options.band_low must be below band_high, got {low} and {high}"
        out.append(OptionProblem("band_low", wrong, True, "e.g. band_low: 0.11, band_high: 0.51"))
    int8 = MINILM_KINDS.get(str(options.get("release") or DEFAULT_RELEASE)) in INT8_KINDS
    if options.get("backend") == "onnxruntime" and options.get("dtype") == "float64" and not int8:
        out.append(
            OptionProblem(
                "backend",
                "risk.options.backend onnxruntime runs float32 only, got 'float64'",
                True,
                "drop dtype, or use backend: numpy for float64",
            )
        )
    return out


def first_error(options: Mapping[str, Any]) -> str | None:
    """The first error ``make_profiler`` refuses, or None (warnings are for ``loomc check``)."""
    return next((p.message for p in option_problems(options) if p.error), None)


def option_diagnostics(source: PolicySource) -> list[Diagnostic]:
    """``loomc check``'s findings on a policy's ``risk.options``, at each option's position."""
    out: list[Diagnostic] = []
    for p in option_problems(source.policy.risk.options, files=False):
        code, severity = ("LOOM608", Severity.ERROR) if p.error else ("LOOM609", Severity.WARNING)
        span = source.span("risk", "options", p.key)
        out.append(Diagnostic(code, severity, p.message, span, p.hint))
    return out
