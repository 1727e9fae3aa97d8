"""Corpus and prediction files in the published `loom-conductor-v2` layout.

Reading is the product's one JSONL reader (`loomc.eval.dataset.iter_jsonl` / `read_jsonl`);
writing is row JSON (sorted keys, ASCII only), one `\\n`-terminated line per row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from loomc.sources import iter_jsonl, read_jsonl

__all__ = ["iter_jsonl", "iter_lines", "read_jsonl", "row_json", "write_jsonl"]


def row_json(value: Any) -> str:
    """One corpus line: sorted keys, default `, `/`: ` separators, ASCII only (no newline)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True)


def iter_lines(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield row_json(row) + "\n"


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Row-JSON lines, UTF-8, `\\n`-terminated (the published corpus layout)."""
    with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
        handle.writelines(iter_lines(rows))
