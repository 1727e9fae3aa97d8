"""A loomc project on disk: `pipelines/*.loom` and `policies/*.yaml`, loaded and compiled.

The CLI, the runtime, eval and serve all go through one :class:`Project`: the files are read and
parsed once, each set of ceilings compiles every pipeline x tier once (a server answering many
requests, or an eval compiling per case, never re-parses or re-compiles), and every diagnostic of
the checker comes with the pipeline it concerns.
"""

from __future__ import annotations

from pathlib import Path

from loomc.checker.policy_rules import check_policy, check_sources
from loomc.checker.rules import check_pipeline
from loomc.diagnostics import Diagnostic, DiagnosticError, Severity, Span
from loomc.ir.compile import compile_modules
from loomc.ir.model import Pipeline
from loomc.policy.load import PolicySource, load_policy
from loomc.policy.models import Policy
from loomc.project.defaults import fallback_root
from loomc.sources import read_source
from loomc.syntax.ast import Module
from loomc.syntax.parser import parse_file, parse_text
from loomc.text import did_you_mean
from loomc.units import Budget

_Compiled = tuple[list[Pipeline], list[Diagnostic]]

COMPILE_CACHE_SIZE = 32
"""Sets of ceilings whose compiled graphs a Project keeps (least recently used dropped first)."""


class Project:
    """Parsed pipelines plus one policy. Build it with :func:`load_project` (or
    ``Project.load``); compile with :meth:`compile`, which caches per set of ceilings.

    `.loom` files are parsed when first needed: compiling one pipeline (``loomc run``) parses
    only the files that could bear on it (those that mention its name, and, transitively, the
    names they define, so a pipeline defined twice is still found twice); ``modules``,
    ``diagnostics`` and :meth:`pipelines` parse them all. Either way the findings are the same.

    A plain class written as the dataclass it was (same ``__init__``, ``repr`` and equality over
    the public fields): ``dataclasses`` is not imported on the path of ``loomc check``.
    """

    _FIELDS = (
        "root",
        "policy_source",
        "paths",
        "policy_diagnostics",
        "policy_findings",
        "packaged",
    )

    def __init__(
        self,
        root: Path,
        policy_source: PolicySource,
        paths: list[Path],  # the project's .loom files, in the order they are compiled
        policy_diagnostics: list[Diagnostic] | None = None,  # loading the policy
        policy_findings: list[Diagnostic] | None = None,  # checking it
        packaged: bool = False,  # the folder held no project: the packaged defaults were loaded
    ) -> None:
        self.root = root
        self.policy_source = policy_source
        self.paths = paths
        self.policy_diagnostics = [] if policy_diagnostics is None else policy_diagnostics
        self.policy_findings = [] if policy_findings is None else policy_findings
        self.packaged = packaged
        self._parsed: dict[Path, tuple[Module | None, list[Diagnostic]]] = {}
        self._texts: dict[Path, str | None] = {}
        self._compiled: dict[Budget | None, _Compiled] = {}
        self._partly: dict[tuple[Budget | None, tuple[Path, ...]], _Compiled] = {}

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"Project({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    @classmethod
    def load(cls, root: Path | str = ".", policy: Path | str | None = None) -> Project:
        """Same as :func:`load_project`."""
        return load_project(root, policy)

    @property
    def policy(self) -> Policy:
        return self.policy_source.policy

    @property
    def modules(self) -> list[Module]:
        """Every module that parsed, in path order (parses the rest first)."""
        return self._modules(self.paths)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Policy, parse and source findings of the whole project (parses the rest first)."""
        return self._diagnostics(self.paths)

    def replace_policy(self, policy: Policy) -> None:
        """Swap the validated policy (e.g. a per-call credit override); drops compiled graphs."""
        self.policy_source.policy = policy
        self._compiled.clear()
        self._partly.clear()

    def pipelines(self, overrides: Budget | None = None) -> tuple[list[Pipeline], list[Diagnostic]]:
        """Every pipeline x tier under ``overrides`` and the compiler's diagnostics (cached)."""
        key = overrides if overrides != Budget() else None
        found = self._compiled.pop(key, None)
        if found is None:
            found = compile_modules(self.modules, self.policy_source, key)
            while len(self._compiled) >= COMPILE_CACHE_SIZE:  # a server sees many ceilings
                del self._compiled[next(iter(self._compiled))]  # least recently used
        self._compiled[key] = found  # most recently used last
        return found

    def tiers(self) -> list[str]:
        """The tiers the policy declares, in its order (the one vocabulary for tiers)."""
        return list(self.policy.tiers)

    def pipeline_names(self) -> list[str]:
        return [p.name.value for m in self.modules for p in m.pipelines]

    def _parse(self, path: Path) -> tuple[Module | None, list[Diagnostic]]:
        found = self._parsed.get(path)
        if found is None:
            text = self._text(path)  # None: unreadable or binary, parse_file says so
            found = parse_file(path) if text is None else parse_text(text, str(path), cache=True)
            self._parsed[path] = found
        return found

    def _text(self, path: Path) -> str | None:
        if path not in self._texts:
            self._texts[path], _ = read_source(path, "LOOM103", "file")
        return self._texts[path]

    def _modules(self, paths: list[Path]) -> list[Module]:
        return [m for m in (self._parse(p)[0] for p in paths) if m is not None]

    def _diagnostics(self, paths: list[Path]) -> list[Diagnostic]:
        parse = [d for p in paths for d in self._parse(p)[1]]
        found = check_sources(self._modules(paths))
        return [*self.policy_diagnostics, *parse, *self.policy_findings, *found]

    def _relevant(self, name: str) -> list[Path] | None:
        """The files that can bear on pipeline ``name``: those mentioning it and, transitively,
        the pipelines they define (a duplicate elsewhere is an error here); None when none
        defines it (then every file is read, for the error and its suggestions)."""
        chosen: set[Path] = set()
        wanted, done = {name}, set[str]()
        while wanted - done:
            word = (wanted - done).pop()
            done.add(word)
            for path in self.paths:
                text = self._text(path)
                if path not in chosen and (text is None or word in text):
                    chosen.add(path)
                    module = self._parse(path)[0]
                    wanted |= {p.name.value for p in module.pipelines} if module else set()
        paths = [p for p in self.paths if p in chosen]
        defined = {p.name.value for m in self._modules(paths) for p in m.pipelines}
        return paths if name in defined else None

    def variants(self, pipeline_name: str) -> list[Pipeline]:
        """Every tier of pipeline ``pipeline_name`` as compiled (unchecked; empty for an
        unknown name), reading only the files that bear on it, as :meth:`compile` does."""
        return self._variants(pipeline_name, None)[0]

    def _variants(
        self, pipeline_name: str, overrides: Budget | None
    ) -> tuple[list[Pipeline], list[Diagnostic]]:
        """The compiled tiers of ``pipeline_name`` and every diagnostic that may bear on them."""
        paths = None if len(self._parsed) == len(self.paths) else self._relevant(pipeline_name)
        if paths is None:  # all parsed already (a server), or the name is unknown
            compiled, diags = self.pipelines(overrides)
            known = self.diagnostics
        else:  # `loomc run`: only the files that bear on this pipeline
            key = overrides if overrides != Budget() else None
            part = self._partly.get((key, tuple(paths)))
            if part is None:
                if len(self._partly) >= COMPILE_CACHE_SIZE:
                    self._partly.clear()
                part = compile_modules(self._modules(paths), self.policy_source, key)
                self._partly[(key, tuple(paths))] = part
            compiled, diags = part
            known = self._diagnostics(paths)
        return [p for p in compiled if p.name == pipeline_name], known + diags

    def compile(
        self, pipeline_name: str, tier: str | None, overrides: Budget | None = None
    ) -> Pipeline:
        """One pipeline x tier, checked; raises DiagnosticError listing every error."""
        candidates, diagnostics = self._variants(pipeline_name, overrides)
        errors = [d for d in diagnostics if d.is_error]
        if not candidates:
            hint = did_you_mean(pipeline_name, self.pipeline_names())
            unread = [d for d in self.diagnostics if d.is_error]  # a file that did not parse
            raise DiagnosticError(
                [
                    *unread,
                    Diagnostic(
                        "LOOM203",
                        Severity.ERROR,
                        f"unknown pipeline {pipeline_name!r}",
                        Span.whole(self.root / "pipelines"),
                        hint or f"pipelines: {', '.join(self.pipeline_names())}",
                    ),
                ]
            )
        chosen = next((p for p in candidates if p.tier == tier), None)
        if chosen is None:
            chosen = next((p for p in candidates if p.tier is None), None)
        if chosen is None:
            tiers = [p.tier or "-" for p in candidates]
            raise DiagnosticError(
                [
                    Diagnostic(
                        "LOOM215",
                        Severity.ERROR,
                        f"pipeline {pipeline_name!r} has no tier {tier!r}",
                        candidates[0].span or Span.point(str(self.root)),
                        f"tiers: {', '.join(tiers)}",
                    )
                ]
            )
        errors = [d for d in errors if d.span.file in (chosen.source, self.policy_source.path)]
        errors += [d for d in check_pipeline(chosen) if d.is_error]
        if errors:
            raise DiagnosticError(errors)
        return chosen


def find_files(root: Path) -> tuple[list[Path], list[Path]]:
    loom = sorted((root / "pipelines").glob("*.loom")) if (root / "pipelines").is_dir() else []
    yaml_files = (
        sorted([*(root / "policies").glob("*.yaml"), *(root / "policies").glob("*.yml")])
        if (root / "policies").is_dir()
        else []
    )
    return loom, yaml_files


def default_policy_path(root: Path) -> Path:
    return root / "policies" / "default.yaml"


def load_project(root: Path | str = ".", policy: Path | str | None = None) -> Project:
    """Load a project; raises DiagnosticError only when nothing usable can be loaded."""
    root = Path(root)
    packaged = fallback_root(root)  # a folder with no project: run the packaged defaults
    if packaged is not None:
        root = packaged
    policy_path = Path(policy) if policy else default_policy_path(root)
    source, policy_diags = load_policy(policy_path)
    if source is None:
        raise DiagnosticError(policy_diags)
    return Project(
        root,
        source,
        find_files(root)[0],
        policy_diags,
        check_policy(source),
        packaged=packaged is not None,
    )


def load_modules(paths: list[Path]) -> tuple[list[Module], list[Diagnostic]]:
    modules: list[Module] = []
    diags: list[Diagnostic] = []
    for path in paths:
        module, found = parse_file(path)
        diags.extend(found)
        if module is not None:
            modules.append(module)
    return modules, diags
