"""The live trace: reasoning and provider frames are shown, and a stuck stderr never holds the
run past its deadline (writes go through a bounded queue; tokens are dropped and counted)."""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

from loomc.cli.live import TOKEN_BACKLOG, BackgroundWriter, LiveTrace
from loomc.exec.events import Event, EventKind

ROOT = Path(__file__).resolve().parents[2]


def _feed(trace: LiveTrace, events: list[Event]) -> None:
    async def go() -> None:
        for ev in events:
            await trace.emit(ev)

    anyio.run(go)


def test_reasoning_and_frames_are_shown_apart_from_the_answer() -> None:
    out = io.StringIO()
    trace = LiveTrace(stream=out)
    _feed(
        trace,
        [
            Event(EventKind.STEP_STARTED, "r", "verify", {"role": "critic", "model": "dot/m"}),
            Event(EventKind.REASONING, "r", "verify", {"text": "Thinking about "}),
            Event(EventKind.REASONING, "r", "verify", {"text": "[bold]races[/]."}),
            Event(EventKind.TOKEN, "r", "verify", {"text": "Use a lock."}),
            Event(
                EventKind.PROVIDER_FRAME,
                "r",
                "verify",
                {"frame": {"type": "privacy", "mode": "zero-retention", "pii_redacted": 1}},
            ),
            Event(EventKind.WARNING, "r", None, {"code": "LOOM401", "message": "worst case 3 > 1"}),
        ],
    )
    assert trace.close(5)
    lines = out.getvalue().splitlines()
    assert lines[1] == "Thinking about [bold]races[/]."  # its own line, markup not interpreted
    assert lines[2] == "Use a lock."
    assert lines[3] == '◆ verify privacy {"mode":"zero-retention","pii_redacted":1}'
    assert lines[4] == "warning[LOOM401]: worst case 3 > 1"


class _Stuck(io.StringIO):
    """A stderr that never returns from ``write`` until released (a pipe nobody reads)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def write(self, text: str) -> int:
        self.release.wait()
        return super().write(text)


def test_a_stuck_stream_never_blocks_emit_and_drops_tokens_counted() -> None:
    stuck = _Stuck()
    trace = LiveTrace(stream=stuck)
    chunk = "x" * 1000
    events = [Event(EventKind.TOKEN, "r", "s", {"text": chunk}) for _ in range(200)]
    started = time.monotonic()
    _feed(trace, [*events, Event(EventKind.STEP_FINISHED, "r", "s", {"status": "ok"})])
    assert time.monotonic() - started < 1.0  # 200 KB to a stuck stream: emit never waited
    assert trace.out.dropped >= 200 * 1000 - TOKEN_BACKLOG
    stuck.release.set()
    assert trace.close(5)
    text = stuck.getvalue()
    assert "characters of streamed text not shown" in text and "■ s ok" in text


def test_background_writer_survives_a_closed_stream() -> None:
    stream = io.StringIO()
    writer = BackgroundWriter(stream)
    stream.close()
    writer.write("hello\n")
    assert writer.wait(5) and writer.broken


def test_a_stderr_pipe_nobody_reads_does_not_stall_the_run(tmp_path: Path) -> None:
    """The CLI with stderr on a pipe that is never read: the answer (stdout) arrives within
    the deadline plus start-up, although the streamed tokens are many times the pipe buffer."""
    policy = (ROOT / "policies" / "default.yaml").read_text()
    flood = " ".join(["token"] * 60_000)  # ~360 KB streamed: a 64 KB pipe fills at once
    policy = policy.replace("      rules: []", f"      rules: []\n      default_response: {flood}")
    path = tmp_path / "flood.yaml"
    path.write_text(policy)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    started = time.monotonic()
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loomc",
            "run",
            "hello",
            "--tier",
            "strict",
            "--policy",
            str(path),
            "--project",
            str(ROOT),
            "--max-latency-ms",
            "3000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    ) as proc:
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            waited = time.monotonic() - started
            assert ready, "no answer on stdout after 30 s: the run is stuck on stderr"
            assert proc.stdout.readline().strip()
            assert waited < 3.0 + 8.0  # the deadline, plus interpreter start-up on a busy machine
        finally:
            proc.kill()


def test_a_trace_to_a_pipe_is_plain_text_without_rich() -> None:
    """Not a terminal (a pipe, a file, CI): plain lines written directly, rich never imported
    (it costs ~25 ms of every cold run)."""
    code = (
        "import io, sys, anyio\n"
        "from loomc.cli.live import LiveTrace\n"
        "from loomc.exec.events import Event, EventKind\n"
        "out = io.StringIO()\n"
        "t = LiveTrace(stream=out)\n"
        "async def go():\n"
        "    await t.emit(Event(EventKind.RUN_STARTED, 'r', None, {'pipeline': 'general',"
        " 'tier': 'balanced', 'risk': {'level': 'low', 'kind': 'general', 'signals': []}}))\n"
        "    await t.emit(Event(EventKind.STEP_FINISHED, 'r', 'direct', {'status': 'failed',"
        " 'elapsed_ms': 3, 'usage': {'total_tokens': 9}, 'error': '[red]x[/]'}))\n"
        "anyio.run(go)\n"
        "assert t.close(5)\n"
        "print(repr(out.getvalue()), 'rich' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])},
    )
    lines = (
        "general tier balanced · risk low (general) no signals\n"
        "■ direct failed 3 ms · 9 tokens [red]x[/]\n"
    )
    assert done.stdout.split()[-1] == "False"
    assert done.stdout.startswith(repr(lines))


def test_a_trace_to_a_terminal_is_styled_by_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM_PROGRAM", raising=False)
    master, replica = os.openpty()
    with os.fdopen(replica, "w", encoding="utf-8", closefd=True) as tty:
        trace = LiveTrace(stream=tty)
        assert trace.console is not None and trace.console.is_terminal
        _feed(
            trace,
            [Event(EventKind.STEP_STARTED, "r", "draft", {"role": "[bold]x", "model": "m\x1b"})],
        )
        assert trace.close(5)
        ready, _, _ = select.select([master], [], [], 5)
        written = os.read(master, 4096).decode() if ready else ""
    os.close(master)
    assert "\x1b[36mdraft" in written  # the step's name in cyan
    assert "[bold]x · m\\x1b" in written  # untrusted text shown as text, its escape visible
