"""Diagnostics: the one currency every stage uses to report a problem in the user's files.

Stages collect diagnostics instead of raising, so one `loomc check` reports every problem at once
(sqlglot's habit), and every diagnostic carries a stable code, a span and a hint (the habit none
of the model codebases has alone). Codes live in `loomc.codes`, where a test keeps them unique
and documented.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from loomc.errors import LoomcError
from loomc.frozen import Frozen


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


class Span(Frozen, order=True):
    """A 1-based, end-inclusive-line / end-exclusive-column region of one source file; line 0
    means the file (or folder) as a whole, where no line is at fault (an unknown pipeline name
    given on the command line points at ``pipelines/``, not at a line of it)."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    @classmethod
    def point(cls, file: str | Path, line: int = 1, column: int = 1) -> Span:
        return cls(str(file), line, column, line, column + 1)

    @classmethod
    def whole(cls, file: str | Path) -> Span:
        return cls(str(file), 0, 0, 0, 0)

    @property
    def where(self) -> str:
        """``file:line:col``, or just ``file`` for a whole-file span."""
        return f"{self.file}:{self.line}:{self.column}" if self.line else self.file

    def to_json(self) -> dict[str, str | int]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
        }


class Related(Frozen):
    """Another place that bears on a diagnostic (the first definition of a duplicate name)."""

    span: Span
    message: str


class Diagnostic(Frozen):
    """One problem found in the user's files: a stable code (``loomc.codes``), a severity, the
    message, where it is, an optional hint and related places."""

    code: str
    severity: Severity
    message: str
    span: Span
    hint: str | None = None
    related: tuple[Related, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.span.file, self.span.line, self.span.column, self.code)

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "file": self.span.file,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "hint": self.hint,
            "related": [{"message": r.message, **r.span.to_json()} for r in self.related],
        }


class DiagnosticError(LoomcError):
    """Raised only at API boundaries that cannot return diagnostics (e.g. loading for `run`)."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        first = diagnostics[0] if diagnostics else None
        super().__init__(
            f"{first.span.where}: {first.code} {first.message}" if first else "no diagnostics"
        )
