"""`loomc check` as a function: find the files, parse, compile against every policy, analyse.

Each pipeline is checked against each policy of the project (or the one given), so a change to
an example gateway policy is proven as well as the default one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from loomc.checker.policy_rules import check_policy, check_sources
from loomc.checker.rules import check_pipeline
from loomc.checker.worstcase import WorstCase, worst_case
from loomc.diagnostics import Diagnostic, Severity, Span
from loomc.frozen import replace
from loomc.ir.compile import compile_modules
from loomc.ir.model import Pipeline
from loomc.policy.load import PolicySource, load_policy
from loomc.project.workspace import find_files, load_modules
from loomc.units import Budget


class CheckResult:
    """What ``loomc check`` found (a plain class: no ``dataclasses`` on the check path)."""

    def __init__(
        self,
        diagnostics: list[Diagnostic] | None = None,
        pipelines: list[tuple[str, Pipeline]] | None = None,  # (policy file, pipeline)
        files: int = 0,
    ) -> None:
        self.diagnostics = [] if diagnostics is None else diagnostics
        self.pipelines = [] if pipelines is None else pipelines
        self.files = files

    def __repr__(self) -> str:
        return (
            f"CheckResult(diagnostics={self.diagnostics!r}, pipelines={self.pipelines!r}, "
            f"files={self.files!r})"
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        mine = (self.diagnostics, self.pipelines, self.files)
        return mine == (other.diagnostics, other.pipelines, other.files)

    __hash__ = None  # type: ignore[assignment]

    @property
    def errors(self) -> int:
        return sum(d.is_error for d in self.diagnostics)

    def worst_cases(self) -> list[tuple[str, Pipeline, WorstCase]]:
        return [(pol, p, worst_case(p)) for pol, p in self.pipelines if p.graph.is_acyclic()]


def _resolve(paths: list[Path]) -> tuple[list[Path], list[Path], list[Diagnostic]]:
    loom: list[Path] = []
    policies: list[Path] = []
    diags: list[Diagnostic] = []
    for path in paths:
        if path.is_dir() and any(path.glob("*.loom")) and not (path / "pipelines").is_dir():
            loom += sorted(path.glob("*.loom"))  # a pipelines folder given directly
            policies += find_files(path.resolve().parent)[1]
        elif path.is_dir():
            found_loom, found_pol = find_files(path)
            if not found_loom:
                diags.append(
                    Diagnostic(
                        "LOOM701",
                        Severity.ERROR,
                        f"no pipelines found in {path / 'pipelines'}",
                        Span.point(str(path)),
                        "a project root holds pipelines/*.loom and policies/*.yaml",
                    )
                )
            loom += found_loom
            policies += found_pol
        elif path.suffix in (".yaml", ".yml"):
            policies.append(path)
        elif path.exists():
            loom.append(path)
            root = path.resolve().parent.parent
            policies += find_files(root)[1]
        else:
            diags.append(
                Diagnostic(
                    "LOOM103",
                    Severity.ERROR,
                    f"no such file or directory: {path}",
                    Span.point(str(path)),
                )
            )
    return sorted(set(loom)), sorted(set(policies)), diags


PolicyRule = Callable[[PolicySource], list[Diagnostic]]


def check_paths(
    paths: list[Path],
    policy: Path | None = None,
    overrides: Budget | None = None,
    policy_rules: Sequence[PolicyRule] = (),
) -> CheckResult:
    """``policy_rules``: more checks of each policy, from stages above this one (the risk
    stage's ``risk.options``: this layer cannot import what those options may hold)."""
    loom, policies, diags = _resolve(paths or [Path(".")])
    if policy is not None:
        policies = [policy]
    result = CheckResult(diagnostics=diags, files=len(loom) + len(policies))
    modules, parse_diags = load_modules(loom)
    result.diagnostics += parse_diags
    result.diagnostics += check_sources(modules)
    if not policies and loom:
        result.diagnostics.append(
            Diagnostic(
                "LOOM701",
                Severity.ERROR,
                "no policy file found",
                Span.point(str(loom[0])),
                "add policies/default.yaml or pass --policy FILE",
            )
        )
    for pol_path in policies:
        source, pol_diags = load_policy(pol_path)
        result.diagnostics += pol_diags
        if source is None:
            continue
        result.diagnostics += check_policy(source)
        for rule in policy_rules:
            result.diagnostics += rule(source)
        compiled, comp_diags = compile_modules(modules, source, overrides)
        result.diagnostics += comp_diags
        variants: dict[str, list[tuple[str | None, list[Diagnostic]]]] = {}
        for pipeline in compiled:
            result.pipelines.append((str(pol_path), pipeline))
            variants.setdefault(pipeline.name, []).append((pipeline.tier, check_pipeline(pipeline)))
        for found in variants.values():
            result.diagnostics += merge_tiers(found)
    result.diagnostics = _dedupe(result.diagnostics)
    return result


def merge_tiers(variants: list[tuple[str | None, list[Diagnostic]]]) -> list[Diagnostic]:
    """One diagnostic for one problem: the same finding at several tiers of a pipeline (same
    code, span and hint, messages equal but for the tier) is reported once, naming the tiers."""
    groups: dict[tuple[object, ...], tuple[Diagnostic, str, list[str]]] = {}
    for tier, diags in variants:
        for d in diags:
            marker = f" at tier {tier}"
            template = d.message.replace(marker, "\0") if tier is not None else d.message
            key = (d.code, d.severity, d.span, d.hint, d.related, template)
            if key in groups:
                groups[key][2].append(str(tier))
            else:
                groups[key] = (d, template, [] if tier is None else [tier])
    out = []
    for d, template, tiers in groups.values():
        if len(tiers) > 1:
            d = replace(d, message=template.replace("\0", f" at tiers {', '.join(tiers)}"))
        out.append(d)
    return out


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen: set[tuple[str, str, int, int, str]] = set()
    out = []
    for d in sorted(diags, key=lambda d: (*d.sort_key(), d.message)):
        key = (d.code, d.span.file, d.span.line, d.span.column, d.message)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out
