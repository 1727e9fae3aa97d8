"""What the Studio tests share: a project folder, `loomc studio` as users start it (its own
process, its own temp folder, its log kept), and reading a run's server-sent events."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_RECEIPT = ROOT / "tests" / "report" / "golden" / "demo.json"
LONG = "\n".join(f"Point {i}: a line of the long scripted answer." for i in range(1, 81))


def make_project(folder: Path) -> Path:
    """The reference pipelines, the default mock policy (and the Dot gateway's, which `loomc
    check` warns about) and one eval receipt in reports/."""
    (folder / "policies").mkdir(parents=True)
    shutil.copytree(ROOT / "pipelines", folder / "pipelines")
    policy = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    policy["providers"]["mock"]["mock"]["rules"] = [
        {"pattern": "long answer please", "response": LONG},
        {"pattern": "slow answer please", "latency_ms": 3000},
    ]
    (folder / "policies" / "default.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    # the Dot gateway's policy has no pricing: `loomc check` warns about it
    shutil.copy(ROOT / "policies" / "dot.yaml", folder / "policies" / "dot.yaml")
    (folder / "reports").mkdir()
    shutil.copy(GOLDEN_RECEIPT, folder / "reports" / "demo.json")
    return folder


def events(body: str) -> list[dict[str, Any]]:
    """The ``data:`` frames of an SSE body, parsed."""
    out = []
    for frame in body.split("\n\n"):
        for line in frame.splitlines():
            if line.startswith("data: "):
                out.append(json.loads(line[6:]))
    return out


class StudioProcess:
    """`python -m loomc studio PROJECT --port 0` with TMPDIR and HOME inside ``folder``, so
    every file the server writes lands where a test can read it back."""

    def __init__(self, project: Path, folder: Path) -> None:
        self.folder = folder
        self.tmp = folder / "server-tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.store = folder / "store.db"
        self.out = folder / "studio.out"
        self.log = folder / "studio.log"
        env = {
            **os.environ,
            "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'research'}",
            "TMPDIR": str(self.tmp),
            "HOME": str(self.tmp),
        }
        self._out, self._log = self.out.open("w"), self.log.open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "loomc",
                "studio",
                str(project),
                "--port",
                "0",
                "--store",
                str(self.store),
                "--log-level",
                "info",
            ],
            stdout=self._out,
            stderr=self._log,
            env=env,
            cwd=folder,
        )
        self.url = self._wait()

    def _wait(self) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = re.search(r"loomc studio: (http://\S+)/studio/", self.out.read_text())
            if found and "Application startup complete" in self.log.read_text():
                return found.group(1)
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"loomc studio exited {self.proc.returncode}: {self.log.read_text()}"
                )
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("loomc studio did not start")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()
        self._log.close()


def files_holding(needle: bytes, *folders: Path) -> list[Path]:
    """Every file under ``folders`` whose bytes contain ``needle`` (SQLite pages, WAL, logs)."""
    hits = []
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                try:
                    if needle in path.read_bytes():
                        hits.append(path)
                except OSError:
                    continue
    return hits
