"""Read a user's files: source text (unreadable, binary and non-UTF-8 files become diagnostics)
and JSONL rows (the one strict reader that eval, risk and research share)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`(line number, object)` per non-blank line of any JSONL file, stopping at the first bad
    line with a ValueError naming `file:line` (`load_dataset` instead collects every problem)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text: {exc.reason}") from None
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}:{exc.colno}: invalid JSON: {exc.msg}") from None
        except RecursionError:  # a line nested past the decoder's limit
            raise ValueError(f"{path}:{number}: nested too deeply") from None
        except ValueError:  # an integer past Python's 4,300-digit conversion limit
            raise ValueError(f"{path}:{number}: a number too long to read") from None
        if not isinstance(value, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object")
        yield number, value


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a bad line raises ValueError naming `file:line`."""
    return [row for _, row in iter_jsonl(path)]
