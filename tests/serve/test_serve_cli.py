"""`loomc serve` refuses unsafe or impossible configurations before it listens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from servekit import KEY_VAR, ROOT, SECRET, write_policy

from loomc.policy.load import load_policy


def serve(
    policy: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'research'}", **(env or {})}
    if env is None:
        full.pop(KEY_VAR, None)
    return subprocess.run(
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
            str(policy.with_suffix(".db")),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=full,
    )


def test_no_keys_means_loopback_only(tmp_path: Path) -> None:
    done = serve(write_policy(tmp_path / "p.yaml"), "--host", "0.0.0.0")
    assert done.returncode == 2
    assert "refusing to serve on 0.0.0.0 without keys" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_keys_unset_variable_stops_the_server_without_naming_a_secret(tmp_path: Path) -> None:
    policy = write_policy(tmp_path / "p.yaml", {"keys": [{"name": "ci", "key": f"env:{KEY_VAR}"}]})
    done = serve(policy)
    assert done.returncode == 2 and f"environment variable {KEY_VAR} is not set" in done.stderr


@pytest.mark.parametrize("key", [SECRET, "env:lower-case-dash"])
def test_literal_keys_are_refused_by_the_policy_loader(tmp_path: Path, key: str) -> None:
    policy = write_policy(tmp_path / "p.yaml", {"keys": [{"name": "ci", "key": key}]})
    source, diags = load_policy(policy)
    assert source is None
    assert any("env:NAME reference" in d.message for d in diags)
    assert all(SECRET not in d.message for d in diags)
    done = serve(policy)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{policy}:" in done.stderr and "env:NAME reference" in done.stderr
