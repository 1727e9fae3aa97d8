"""Real servers on 127.0.0.1 for the HTTP adapters: the replay server and LiteLLM's proxy."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from litellm_config import LITELLM_CONFIG
from replay import ReplayServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def replay() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    yield server
    server.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _litellm_binary() -> str | None:
    for candidate in (
        os.environ.get("LOOMC_LITELLM"),
        str(ROOT / ".venv-litellm/bin/litellm"),
        shutil.which("litellm"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.fixture(scope="session")
def litellm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """LiteLLM's proxy with mock models; CI must have it (scripts/setup --all installs it)."""
    binary = _litellm_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("LiteLLM proxy missing: run scripts/setup --all (.venv-litellm)")
        pytest.skip("LiteLLM proxy not installed (scripts/setup --all)")
    workdir = tmp_path_factory.mktemp("litellm")
    config = workdir / "config.yaml"
    config.write_text(LITELLM_CONFIG, encoding="utf-8")
    port = _free_port()
    log = (workdir / "server.log").open("wb")
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "NO_PROXY": "*",
        "LITELLM_LOG": "ERROR",
    }
    proc = subprocess.Popen(
        [binary, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=workdir,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    # ~5 s on an idle machine; a first start on a busy 2-core CI box can take far longer.
    deadline = time.monotonic() + 180
    try:
        while True:
            if proc.poll() is not None:
                log.flush()
                pytest.fail("LiteLLM exited: " + (workdir / "server.log").read_text()[-2000:])
            try:
                if httpx.get(f"{base}/health/liveliness", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                log.flush()
                tail = (workdir / "server.log").read_text(errors="replace")[-1500:]
                pytest.fail(f"LiteLLM did not become ready in 180 s; its log ends:\n{tail}")
            time.sleep(0.25)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
