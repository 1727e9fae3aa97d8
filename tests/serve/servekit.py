"""Real `loomc serve` servers on 127.0.0.1 for the serve tests: a subprocess (the CLI, as users
run it) or an in-process uvicorn thread (when a test injects a provider to count its calls)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
import yaml

ROOT = Path(__file__).resolve().parents[2]
KEY_VAR = "LOOMC_TEST_SERVE_KEY"
SECRET = "sk-loomc-test-0123456789abcdef"


T = TypeVar("T")


def eventually(get: Callable[[], T], ok: Callable[[T], bool], timeout: float = 5.0) -> T:
    """``get()`` once ``ok`` holds of it, or its last value after ``timeout`` seconds: a served
    run's trace is written behind its response (``loomc/serve/behind.py``), milliseconds later."""
    deadline = time.monotonic() + timeout
    while True:
        got = get()
        if ok(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.01)


def write_policy(
    path: Path, serve: Mapping[str, Any] | None = None, mock: Mapping[str, Any] | None = None
) -> Path:
    """The default mock policy with a ``serve`` section (and mock script changes)."""
    policy = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    if serve is not None:
        policy["serve"] = dict(serve)
    if mock is not None:
        policy["providers"]["mock"]["mock"].update(mock)
    path.write_text(yaml.safe_dump(policy, sort_keys=False))
    return path


class ServeProcess:
    """`python -m loomc serve` in its own process; ``url`` once it listens."""

    def __init__(
        self,
        policy: Path,
        store: Path,
        env: Mapping[str, str] | None = None,
        args: tuple[str, ...] = (),
        store_url: str | None = None,
    ) -> None:
        self.store = store
        self.log = store.with_suffix(".log")
        self._log_file = self.log.open("w")
        # this tree first; the caller's PYTHONPATH after it (a folder with optional packages)
        path = [str(ROOT), str(ROOT / "research"), *filter(None, [os.environ.get("PYTHONPATH")])]
        full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), **(env or {})}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "loomc",
                "serve",
                str(ROOT),
                "--policy",
                str(policy),
                "--port",
                "0",
                "--store",
                store_url or str(store),
                "--log-level",
                "info",
                *args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
            env=full_env,
            cwd=ROOT,
        )
        self.url = self._wait()

    def _wait(self) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = self.log.read_text() if self.log.exists() else ""
            found = re.search(r"listening on (http://\S+)/v1", text)
            if found and "Application startup complete" in text:
                return found.group(1)
            if self.proc.poll() is not None:
                self._log_file.close()
                raise RuntimeError(f"loomc serve exited {self.proc.returncode}: {text}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("loomc serve did not start")

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log_file.close()
        return self.log.read_text()


class InProcessServer:
    """An app from ``create_app`` under uvicorn in a thread of this process."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="critical", lifespan="on", access_log=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _pg_bin() -> Path:
    """LOOMC_PG_BIN, else the newest Debian PostgreSQL (15 in the base image, newer after
    `apt-get install postgresql` on another release)."""
    if os.environ.get("LOOMC_PG_BIN"):
        return Path(os.environ["LOOMC_PG_BIN"])
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else Path("/usr/lib/postgresql/15/bin")


PG_BIN = _pg_bin()


class PostgresCluster:
    """A throwaway PostgreSQL cluster in a temporary folder on 127.0.0.1 (trust auth, user
    ``loomc``); run as the ``postgres`` user when the tests run as root (postgres refuses root)."""

    def __init__(self, folder: Path) -> None:
        import shutil
        import socket

        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._as: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._pg("initdb", "-D", str(folder / "data"), "-A", "trust", "-U", "loomc")
        self._pg(
            "pg_ctl",
            "-D",
            str(folder / "data"),
            "-l",
            str(folder / "log"),
            "-w",
            "-o",
            f"-p {self.port} -k {folder} -c listen_addresses=127.0.0.1 "
            "-c max_connections=200 -c fsync=off",
            "start",
        )
        self.url = f"postgresql://loomc@127.0.0.1:{self.port}/postgres"

    def _pg(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self._as, str(PG_BIN / tool), *args], check=True, capture_output=True, timeout=60
        )

    def fresh(self, name: str) -> str:
        """A new empty database's URL (one per test keeps tests apart)."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://loomc@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        self._pg("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "stop")
