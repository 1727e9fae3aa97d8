"""A fresh Python process's memory, read from /proc: what loading something really costs.

Why a child: the test process has imported and freed much already, so its own VmHWM says
nothing about one load. The child runs ``body`` after the prelude below, with ``vm(field)`` (a
``/proc/self/status`` field in MiB) defined, and must print one JSON object as its last line.
Linux only (callers skip where ``/proc/self/status`` is missing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HAS_PROC = Path("/proc/self/status").exists()

PRELUDE = """
import json
from pathlib import Path
def vm(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
"""


def run_child(body: str) -> dict[str, Any]:
    """Run ``PRELUDE + body`` in a fresh interpreter at the repository root; its last line."""
    out = subprocess.run(
        [sys.executable, "-c", PRELUDE + body],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    got: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return got
