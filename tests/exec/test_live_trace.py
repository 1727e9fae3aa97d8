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


def _seconds_to_answer(argv: list[str], env: dict[str, str], cwd: Path, stderr: int) -> float:
    """Seconds from start until the CLI's answer is readable on stdout (at most 60)."""
    started = time.monotonic()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=cwd) as proc:
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            waited = time.monotonic() - started
            assert ready, "no answer on stdout after 60 s: the run is stuck on stderr"
            assert proc.stdout.readline().strip()
            return waited
        finally:
            proc.kill()


def test_a_stderr_pipe_nobody_reads_does_not_stall_the_run(tmp_path: Path) -> None:
    """The CLI with stderr on a pipe that is never read: the answer (stdout) arrives within
    the deadline of the same run with stderr discarded (measured just before, so a busy
    machine's slower start-up and policy parse count on both sides), although the streamed
    tokens are many times the pipe buffer."""
    policy = (ROOT / "policies" / "default.yaml").read_text()
    flood = " ".join(["token"] * 60_000)  # ~360 KB streamed: a 64 KB pipe fills at once
    policy = policy.replace("      rules: []", f"      rules: []\n      default_response: {flood}")
    path = tmp_path / "flood.yaml"
    path.write_text(policy)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "LOOMC_NO_CACHE": "1",  # both runs parse the policy: the second gains nothing from the first
    }
    argv = [sys.executable, "-m", "loomc", "run", "hello", "--tier", "strict"]
    argv += ["--policy", str(path), "--project", str(ROOT), "--max-latency-ms", "3000"]
    unblocked = _seconds_to_answer(argv, env, tmp_path, subprocess.DEVNULL)
    blocked = _seconds_to_answer(argv, env, tmp_path, subprocess.PIPE)
    assert blocked < unblocked * 1.5 + 3.0, (blocked, unblocked)  # + the run's 3 s deadline


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


def test_the_run_line_shows_what_the_risk_decision_rests_on() -> None:
    def first_line(risk: dict[str, object]) -> str:
        out = io.StringIO()
        trace = LiveTrace(stream=out)
        data = {"pipeline": "general", "tier": "balanced", "risk": risk}
        _feed(trace, [Event(EventKind.RUN_STARTED, "r", None, data)])
        assert trace.close(5)
        return out.getvalue().splitlines()[0]

    learned: dict[str, object] = {
        "level": "high",
        "kind": "general",
        "signals": [],
        "reasons": [
            "P(escalate)=0.87 >= 0.17: escalate",
            "nearest: rt-general-001 (escalate/high, sim 0.99)",
            "nearest: rh-health-024 (direct/low, sim 0.91)",
        ],
    }
    assert first_line(learned) == (
        "general tier balanced · risk high (general) P(escalate)=0.87 >= 0.17: escalate; "
        "nearest: rt-general-001 (escalate/high, sim 0.99)"
    )
    keyed: dict[str, object] = {
        **learned,
        "signals": ["payment", "race"],
        "reasons": ["payment\x1b[31m"],
    }
    assert first_line(keyed).endswith("risk high (general) payment, race")
    hostile: dict[str, object] = {**learned, "reasons": ["nearest: \x1b[2Jx"]}
    assert "\x1b" not in first_line(hostile)
