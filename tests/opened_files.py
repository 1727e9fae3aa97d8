"""Run Python code in a fresh process and report the files it opened (``tests/`` is on sys.path).

Why a process: what a cold start reads (weights, tables, records) is only visible before this
test process has read it, and ``open`` is spied on there, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_SPY = (
    "import builtins, io, json, sys\n"
    "opened = []\n"
    "real = io.open\n"
    "def spy(f, *a, **k):\n"
    "    opened.append(str(f)); return real(f, *a, **k)\n"
    "builtins.open = io.open = spy\n"
)


def run_and_list_opened(body: str) -> dict[str, Any]:
    """Run ``body`` after ``open`` is spied on; ``body`` prints one JSON object as its last line
    (it may read ``opened``, the list of paths opened so far, and ``sys``)."""
    out = subprocess.run(
        [sys.executable, "-c", _SPY + body], cwd=ROOT, check=True, capture_output=True, text=True
    )
    got: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return got
