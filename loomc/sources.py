"""Read a user's source file as text; unreadable, binary and non-UTF-8 files become diagnostics."""

from __future__ import annotations

from pathlib import Path

from loomc.diagnostics import Diagnostic, Severity, Span


def read_source(path: str | Path, code: str, what: str) -> tuple[str | None, Diagnostic | None]:
    name = str(path)

    def fail(message: str, line: int = 1) -> tuple[None, Diagnostic]:
        return None, Diagnostic(code, Severity.ERROR, message, Span.point(name, line))

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        return fail(f"cannot read {what}: {exc.strerror or exc}")
    if b"\x00" in raw:
        return fail(f"{what} is binary, not text")
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return fail(f"{what} is not valid UTF-8", raw[: exc.start].count(b"\n") + 1)
