"""No byte loomc writes ever holds a piece of an API key.

A distinctive 34-character key is exported; a real server on 127.0.0.1 echoes it into streamed
and whole answers, gateway frames, error bodies (where a 300-character excerpt cuts it) and error
objects. Every command runs as a user runs it (a subprocess), on success and failure paths, with
``--trace``, journals, receipts and every report format. Then stdout, stderr and every file under
the project are searched for any 8 consecutive characters of the key: none may appear.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.security.echo_server import EchoServer

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-loomLEAK-7f3a9c2e1b4d8f6a0c5e9b"  # 34 characters, none of them in loomc's sources
ENV_NAME = "LOOMC_LEAK_TEST_KEY"
PIECES = {KEY[i : i + 8] for i in range(len(KEY) - 7)}

pytestmark = pytest.mark.slow


def _policy(name: str, base_url: str, model: str, retries: int = 0) -> str:
    workers = "\n".join(
        f"  {w}: {{model: gw/{model}, group: {g}, p95_latency: 5s, max_tokens: 300}}"
        for w, g in (("router", "a"), ("drafter", "a"), ("critic", "b"), ("finalizer", "c"))
    )
    return f"""version: 1
name: {name}
providers:
  gw:
    type: openai-compatible
    base_url: {base_url}
    api_key: env:{ENV_NAME}
    headers:
      X-Auth-Token: "Bearer env:{ENV_NAME}"
    extra_body:
      metadata: {{user_token: "env:{ENV_NAME}"}}
workers:
{workers}
defaults: {{timeout: 10s, retries: {retries}, input_tokens: 4000}}
"""


@pytest.fixture(scope="module")
def server() -> Iterator[EchoServer]:
    srv = EchoServer().start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, server: EchoServer) -> Path:
    root = tmp_path_factory.mktemp("leaks")
    shutil.copytree(ROOT / "pipelines", root / "pipelines")
    (root / "policies").mkdir()
    policies = {
        "default": ("echo-ok", 0),
        "failing": ("echo-error", 0),
        "failing-body": ("echo-body-error", 0),
        "failing-plain": ("echo-error-plain", 0),
    }
    for name, (model, retries) in policies.items():
        (root / "policies" / f"{name}.yaml").write_text(
            _policy(name, server.base_url, model, retries), encoding="utf-8"
        )
    (root / "data.jsonl").write_text(
        '{"id": "mice", "prompt": "What is the plural of mouse?", '
        '"checks": [{"type": "contains", "value": "mice"}]}\n'
        '{"id": "time", "prompt": "Convert 14:00 UTC to CEST.", "checks": []}\n',
        encoding="utf-8",
    )
    (root / "out").mkdir()
    return root


def _loomc(project: Path, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        ENV_NAME: KEY,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "200",
        "FORCE_COLOR": "1",  # the live trace renders as on a terminal
        "HOME": str(project / "home"),
    }
    return subprocess.run(
        [sys.executable, "-m", "loomc", *argv],
        cwd=project,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _leaks(text: str) -> list[str]:
    return sorted(p for p in PIECES if p in text)


COMMANDS: list[tuple[str, ...]] = [
    ("check", "."),
    ("check", ".", "--format", "json"),
    ("check", ".", "--format", "sarif"),
    ("check", ".", "--format", "github"),
    (
        "compile",
        "pipelines/general.loom",
        "--policy",
        "policies/default.yaml",
        "--output",
        "out/plan.json",
    ),
    ("plan", "pipelines/general.loom", "--json"),
    ("run", "What is the plural of mouse?", "--trace", "out/ok.trace.jsonl"),
    ("run", "What is the plural of mouse?", "--json", "--tier", "strict"),
    ("run", "What is the plural of mouse?", "--no-stream", "--trace", "out/whole.trace.jsonl"),
    ("run", "Say hi.", "--policy", "policies/failing.yaml", "--trace", "out/f1.trace.jsonl"),
    ("run", "Say hi.", "--policy", "policies/failing.yaml", "--json"),
    ("run", "Say hi.", "--policy", "policies/failing-body.yaml", "--trace", "out/f2.trace.jsonl"),
    (
        "run",
        "Say hi.",
        "--policy",
        "policies/failing-plain.yaml",
        "--no-stream",
        "--json",
        "--tier",
        "lean",
    ),
    (
        "eval",
        "--dataset",
        "data.jsonl",
        "--strategies",
        "lean,balanced,strict",
        "--include-answers",
        "--judge-model",
        "critic",
        "--output",
        "out/receipt.json",
        "--artifacts",
        "out/report",
    ),
    (
        "eval",
        "--dataset",
        "data.jsonl",
        "--strategies",
        "lean",
        "--include-answers",
        "--output",
        "out/receipt.html",
    ),
    (
        "eval",
        "--dataset",
        "data.jsonl",
        "--strategies",
        "lean,strict",
        "--include-answers",
        "--policy",
        "policies/failing.yaml",
        "--output",
        "out/failing.json",
    ),
    (
        "eval",
        "--dataset",
        "data.jsonl",
        "--strategies",
        "lean",
        "--include-answers",
        "--policy",
        "policies/failing-body.yaml",
        "--output",
        "out/failing-body.json",
    ),
    ("report", "out/receipt.json", "--output", "out/again.html"),
    ("report", "out/receipt.json", "--output", "out/again.md"),
    ("report", "out/receipt.json", "--output", "out/again.svg"),
    ("report", "out/receipt.json", "--output", "out/again.json"),
]


def test_no_piece_of_the_key_is_ever_written(project: Path, server: EchoServer) -> None:
    found: dict[str, list[str]] = {}
    codes: dict[str, int] = {}
    for argv in COMMANDS:
        done = _loomc(project, *argv)
        name = " ".join(argv)
        codes[name] = done.returncode
        for stream, text in (("stdout", done.stdout), ("stderr", done.stderr)):
            if leaked := _leaks(text):
                found[f"{name} ({stream})"] = leaked
        assert "Traceback" not in done.stderr, f"{name}:\n{done.stderr[-2000:]}"
    written = [p for p in project.rglob("*") if p.is_file()]
    for path in written:
        if leaked := _leaks(path.read_bytes().decode("utf-8", "replace")):
            found[str(path.relative_to(project))] = leaked
    assert not found, found

    # The runs really happened and really carried the key where the user asked for it.
    assert codes["run What is the plural of mouse? --trace out/ok.trace.jsonl"] == 0, codes
    assert codes["run Say hi. --policy policies/failing.yaml --json"] != 0
    assert {r["body"].get("model") for r in server.requests} >= {
        "echo-ok",
        "echo-error",
        "echo-body-error",
        "echo-error-plain",
    }, "every failure path reached the server"
    sent = [r for r in server.requests if r["body"].get("model") == "echo-ok"]
    assert sent and all(r["headers"]["authorization"] == f"Bearer {KEY}" for r in sent)
    assert all(r["headers"]["x-auth-token"] == f"Bearer {KEY}" for r in sent), "env:NAME resolved"
    assert all(r["body"]["metadata"]["user_token"] == KEY for r in sent)
    names = {p.name for p in written}
    for expected in (
        "ok.trace.jsonl",
        "receipt.json",
        "receipt.json.journal.jsonl",
        "report.html",
        "report.svg",
        "report.md",
        "report.json",
        "receipt.html",
        "failing.json.journal.jsonl",
        "again.html",
        "plan.json",
    ):
        assert expected in names, sorted(names)
    # The answers were delivered, minus the key: the redaction marks where it was.
    trace = (project / "out" / "ok.trace.jsonl").read_text(encoding="utf-8")
    assert "kept for [REDACTED]" in trace
    receipt = (project / "out" / "receipt.json").read_text(encoding="utf-8")
    assert "your key: [REDACTED]. Its middle: [REDACTED]. (mock answer: mice)" in receipt
