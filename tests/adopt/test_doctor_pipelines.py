"""`loomc doctor` against real sockets on 127.0.0.1 (one answering, one closed), and
`loomc pipelines` against the shipped project."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from loomc.api.doctor import doctor
from loomc.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


class _Unauthorized(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(401)  # a gateway without a key answers 401: still reachable
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _policy(tmp_path: Path, up: str, down: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(
        "version: 1\nproviders:\n"
        f"  up: {{type: openai-compatible, base_url: '{up}', api_key: env:UP_KEY}}\n"
        f"  down: {{type: openai-compatible, base_url: '{down}', api_key: env:DOWN_KEY}}\n"
        "workers:\n  a: {model: up/m}\n  b: {model: down/m}\n"
    )
    return path


def test_doctor_names_missing_keys_and_unreachable_servers(server: str, tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{_closed_port()}/v1"
    policy = _policy(tmp_path, server, down)
    secret = "sk-live-value-never-shown"
    found = doctor(ROOT, policy, timeout_s=2, env={"UP_KEY": secret})
    by = {(f.subject, f.detail): f.ok for f in found}
    assert by[("provider up (openai-compatible)", "UP_KEY is set")] is True
    assert by[("provider down (openai-compatible)", "DOWN_KEY is not set")] is False
    assert by[("provider up (openai-compatible)", f"{server}: reachable")] is True
    assert any(not f.ok and f.detail.startswith(f"{down}: unreachable") for f in found)
    assert all(secret not in f.detail for f in found)


def test_doctor_cli_exit_codes(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["doctor"]) == 0  # the mock policy: nothing to reach, no key
    monkeypatch.setenv("UP_KEY", "sk-up-value-1234")
    monkeypatch.setenv("DOWN_KEY", "sk-down-value-5678")
    policy = _policy(tmp_path, server, server)
    assert main(["doctor", "--policy", str(policy)]) == 0
    capsys.readouterr()
    policy = _policy(tmp_path, server, f"http://127.0.0.1:{_closed_port()}")
    assert main(["doctor", "--policy", str(policy), "--timeout", "1"]) == 1
    out = capsys.readouterr().out
    assert (
        "FAIL provider down" in out and "ok   provider up (openai-compatible): UP_KEY is set" in out
    )
    assert "value" not in out  # keys by name only
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nproviders: {}\nworkers: {w: {model: nope}}\n")
    assert main(["doctor", "--policy", str(bad)]) == 1


def test_pipelines_lists_what_can_run_with_worst_cases(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, shared_dir: Path
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["pipelines", "--json"]) == 0
    rows = {(r["pipeline"], r["tier"]): r for r in json.loads(capsys.readouterr().out)}
    assert (
        rows[("general", "strict")]["runnable"]
        and rows[("general", "strict")]["worst"]["calls"] == 3
    )
    assert rows[("baseline", None)]["worst"]["calls"] == 1
    config = shared_dir / "reference" / "seed-configs" / "dot-code.config.json"
    assert main(["pipelines", "--config", str(config)]) == 0
    table = capsys.readouterr().out
    assert "code-review    balanced  yes" in table and " - " in table  # no USD: cost unknown
