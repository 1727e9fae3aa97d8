"""Model and provider text never drives the terminal: no escape sequence reaches it, and rich
markup in an error prints as text (issue 13, item 10)."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from loomc.cli.live import LiveTrace
from loomc.cli.main import main
from loomc.cli.terminal import markup, plain
from loomc.exec.events import Event, EventKind

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # write "rm -rf ~" to the clipboard
TITLE = "\x1b]0;owned\x07"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b2J"
ATTACK = f"{OSC52}{TITLE}{CLEAR}{C1_CSI}\r\u202eevil\ud800 done"
CONTROLS = set(map(chr, [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]))


# Bidi embeddings, overrides (U+202A-U+202E) and isolates (U+2066-U+2069) reorder what a
# terminal shows (Trojan Source); all nine are escaped, not only the right-to-left override
# (Hypothesis found U+202A escaped where this oracle had expected it kept).
BIDI = set(map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]))


def _unsafe(text: str) -> set[str]:
    return {ch for ch in text if ch in CONTROLS or ch in BIDI or "\ud800" <= ch <= "\udfff"}


@given(st.text() | st.lists(st.sampled_from([*sorted(BIDI), "a", " ", "\n"])).map("".join))
def test_plain_keeps_printable_text_and_escapes_the_rest(text: str) -> None:
    out = plain(text)
    assert not _unsafe(out)
    if not _unsafe(text):
        assert out == text
    out.encode("utf-8")  # a terminal can always be written


def test_markup_escapes_rich_tags() -> None:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(f"■ step {markup('[/][link=http://x]boom[/link] [bold]')} end")
    assert "[/][link=http://x]boom[/link] [bold] end" in console.file.getvalue()  # type: ignore[attr-defined]


def _trace(events: list[Event]) -> tuple[str, str]:
    stderr = io.StringIO()
    console = Console(file=stderr, width=400, color_system=None)
    raw = io.StringIO()  # the token stream
    trace = LiveTrace(console=console, stream=raw)

    async def go() -> None:
        for e in events:
            await trace.emit(e)

    anyio.run(go)
    assert trace.close(5.0)
    return raw.getvalue(), stderr.getvalue()


def test_live_trace_escapes_tokens_errors_and_reasons() -> None:
    events = [
        Event(EventKind.STEP_STARTED, "r", "s1", {"role": "drafter", "model": "m/x"}),
        Event(EventKind.TOKEN, "r", "s1", {"text": "\x1b]52;c;"}),  # split across tokens
        Event(EventKind.TOKEN, "r", "s1", {"text": "cm0=\x07 hi"}),
        Event(
            EventKind.STEP_FINISHED,
            "r",
            "s1",
            {"status": "error", "error": f"HTTP 500: [/]{ATTACK}[red]", "usage": {}},
        ),
        Event(
            EventKind.STEP_RETRY,
            "r",
            "s1",
            {"attempt": 1, "delay_ms": 5, "error": "[bold]x" + TITLE},
        ),
        Event(EventKind.STEP_SKIPPED, "r", "s2", {"reason": "[/dim]" + CLEAR}),
        Event(EventKind.BUDGET_STOP, "r", "s2", {"reason": "[link=x]" + OSC52}),
    ]
    tokens, lines = _trace(events)
    assert not _unsafe(tokens) and not _unsafe(lines)
    assert "\\x1b]52;c;cm0=\\x07 hi" in tokens
    assert "■ s1 error 0 ms · 0 tokens HTTP 500: [/]\\x1b]52" in lines  # the line is kept
    assert "retry 1 in 5 ms: [bold]x\\x1b]0;owned\\x07" in lines
    assert "s2 skipped: [/dim]\\x1b[2J" in lines
    assert "budget stop at s2: [link=x]\\x1b]52" in lines


POLICY = """version: 1
name: hostile
providers:
  mock:
    type: mock
    mock:
      latency_ms: 0
      rules:
        - response: "answer \\e]52;c;cm0gLXJmIH4=\\a\\e]0;owned\\a\\e[2J\\x9b2J [/] end"
workers:
  finalizer: {model: mock/finalizer-small, max_tokens: 100}
"""
PIPELINE = """pipeline general {
  step answer : finalizer(finalizer) { task "t" max_tokens 100 }
  answer answer
}
"""


@pytest.mark.parametrize("stream", [True, False])
def test_run_prints_a_hostile_answer_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stream: bool
) -> None:
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "policies").mkdir()
    (tmp_path / "pipelines" / "general.loom").write_text(PIPELINE)
    (tmp_path / "policies" / "default.yaml").write_text(POLICY)
    argv = ["run", "hello", "--project", str(tmp_path)] + ([] if stream else ["--no-stream"])
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert not _unsafe(out) and not _unsafe(err)
    assert "answer \\x1b]52;c;cm0gLXJmIH4=\\x07" in out
    assert "[/] end" in out
