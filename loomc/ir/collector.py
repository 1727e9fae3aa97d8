"""Diagnostics collected while compiling: the compiler never raises on a user's mistake, it
reports every one and compiles as far as it can."""

from __future__ import annotations

from loomc.diagnostics import Diagnostic, Severity, Span


class Collector:
    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def __call__(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    def error(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.items.append(Diagnostic(code, Severity.ERROR, message, span, hint))

    def warn(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.items.append(Diagnostic(code, Severity.WARNING, message, span, hint))
