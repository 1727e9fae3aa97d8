"""Run Python code in a fresh process and read back the JSON object it prints last
(``tests/`` is on sys.path).

Why a process: what a cold start imports and reads (numpy, weights, tables, records, which
router a profiler holds) is only visible before this test process has done it itself.
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


def run_fresh(code: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter in the checkout's root; its last stdout line is a
    JSON object, returned. A failing process fails the test with its stderr's tail."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    got: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def run_and_list_opened(body: str) -> dict[str, Any]:
    """``run_fresh`` with ``open`` spied on first: ``body`` may read ``opened`` (the paths opened
    so far) and ``sys``, and prints one JSON object as its last line."""
    return run_fresh(_SPY + body)
