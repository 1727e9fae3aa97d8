"""`loomc check --against REF`: the budget-regression gate for pull requests.

The same files are read at the Git ref (via ``git archive``, no checkout of the work tree), checked
there, and every worst case is compared: each one that moved is reported, and one that now passes
a ceiling — the ref's ceiling or the current one — is an error, so raising a budget to make a
costlier pipeline pass still needs a reviewer to see it.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from pathlib import Path

from loomc.diagnostics import Diagnostic, Severity, Span
from loomc.project.checking import CheckResult, check_paths
from loomc.units import Dimension, format_quantity

_DIMS = (Dimension.CALLS, Dimension.TOKENS, Dimension.CREDITS, Dimension.COST, Dimension.LATENCY)


def _git_root(start: Path) -> Path | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(start), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return Path(out.stdout.strip())


def compare_against(
    ref: str, paths: list[Path], current: CheckResult, policy: Path | None
) -> list[Diagnostic]:
    paths = paths or [Path(".")]
    anchor = paths[0] if paths[0].is_dir() else paths[0].parent
    root = _git_root(anchor)
    where = Span.point(str(anchor))
    if root is None:
        return [
            Diagnostic("LOOM702", Severity.ERROR, f"{anchor} is not inside a Git repository", where)
        ]
    with tempfile.TemporaryDirectory(prefix="loomc-against-") as tmp:
        try:
            blob = subprocess.run(
                ["git", "-C", str(root), "archive", "--format=tar", ref],
                capture_output=True,
                check=True,
            ).stdout
        except subprocess.CalledProcessError as exc:
            msg = exc.stderr.decode(errors="replace").strip().splitlines()
            return [
                Diagnostic(
                    "LOOM702",
                    Severity.ERROR,
                    f"cannot read ref {ref!r}: {msg[-1] if msg else 'git archive failed'}",
                    where,
                    "fetch the ref first, e.g. `git fetch origin main`",
                )
            ]
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            tar.extractall(tmp, filter="data")
        mapped = [Path(tmp) / p.resolve().relative_to(root) for p in paths]
        mapped_policy = Path(tmp) / policy.resolve().relative_to(root) if policy else None
        old = check_paths([p for p in mapped if p.exists()], mapped_policy)
        before = {(Path(pol).name, p.key): (p, wc) for pol, p, wc in old.worst_cases()}
    out: list[Diagnostic] = []
    for pol, p, wc in current.worst_cases():
        prior = before.get((Path(pol).name, p.key))
        if prior is None:
            continue
        old_p, old_wc = prior
        for dim in _DIMS:
            new, was = wc.get(dim), old_wc.get(dim)
            if new == was:
                continue
            span = p.budget_spans.get(dim.value) or p.span or Span.point(pol)
            label = f"{p.key} ({Path(pol).stem})"
            moved = f"{format_quantity(dim, was)} -> {format_quantity(dim, new)}"
            limits = [c for c in (old_p.budget.get(dim), p.budget.get(dim)) if c is not None]
            broken = new is None or any(new > c for c in limits)
            if broken and limits:
                out.append(
                    Diagnostic(
                        "LOOM703",
                        Severity.ERROR,
                        f"worst-case {dim.value} of {label} moved {moved} against {ref}, past the "
                        f"ceiling {format_quantity(dim, min(limits))}",
                        span,
                        "lower the cost of the change, or raise the ceiling in a reviewed change",
                    )
                )
            else:
                out.append(
                    Diagnostic(
                        "LOOM704",
                        Severity.NOTE,
                        f"worst-case {dim.value} of {label} moved {moved} against {ref}",
                        span,
                    )
                )
    return out
