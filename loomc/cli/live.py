"""The CLI's live trace: one line per step start/finish, streamed tokens in between.

The trace must never hold the run back: a terminal that scrolls slowly, or a stderr pipe that
nobody reads, would otherwise block the event loop inside ``write`` and keep the run going long
past its deadline. So every write goes to a bounded queue drained by one daemon thread; when the
queue is full, streamed tokens are dropped (and counted, and the count is shown once the stream
catches up) and step lines beyond a larger bound too. Reasoning tokens are shown dim and apart
from the answer; provider frames (Dot's privacy and billing frames) get a line of their own.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
from typing import IO, TYPE_CHECKING, Any

from loomc.cli.terminal import plain
from loomc.exec.events import Event, EventKind

if TYPE_CHECKING:
    from rich.console import Console

TOKEN_BACKLOG = 64 * 1024  # characters of streamed text queued before tokens are dropped
LINE_BACKLOG = 1024 * 1024  # characters queued before even step lines are dropped
FRAME_CHARS = 160  # a provider frame is summarised to this many characters


class BackgroundWriter:
    """A file-like object whose ``write`` never blocks: text goes to a queue that a daemon
    thread writes to ``stream``. ``droppable`` text is dropped when ``TOKEN_BACKLOG`` is
    queued already (``dropped`` counts the characters); other text when ``LINE_BACKLOG`` is."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.dropped = 0
        self.broken = False
        self._queue: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._backlog = 0
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError, OSError):
            return False

    def fileno(self) -> int:
        return self.stream.fileno()

    def write(self, text: str, droppable: bool = False) -> int:
        if not text or self.broken:
            return len(text)
        with self._lock:
            limit = TOKEN_BACKLOG if droppable else LINE_BACKLOG
            if self._backlog + len(text) > limit:
                self.dropped += len(text)
                return len(text)
            self._backlog += len(text)
            self._idle.clear()
        self._queue.put(text)
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="loomc-live", daemon=True)
            self._thread.start()
        return len(text)

    def flush(self) -> None:
        """Nothing to do here: the writer thread flushes after each write."""

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the queue to drain; whether it did."""
        return self._idle.wait(timeout_s)

    def _drain(self) -> None:
        while True:
            text = self._queue.get()
            try:
                if not self.broken:
                    self.stream.write(text)
                    self.stream.flush()
            except (OSError, ValueError):
                self.broken = True  # a closed or broken stderr: the run goes on without it
            with self._lock:
                self._backlog -= len(text)
                if self._backlog == 0:
                    self._idle.set()


Part = str | tuple[str, str]  # text, or (text, rich style); every text is shown as text


class LiveTrace:
    """The event sink behind ``loomc run``'s trace. On a terminal (or with a ``console``
    given) lines are styled by rich; anywhere else (a pipe, a file, CI logs) they are plain
    text written directly, and rich is never imported: it costs ~25 ms of every cold run."""

    def __init__(
        self, console: Console | None = None, tokens: bool = True, stream: IO[str] | None = None
    ) -> None:
        self.out = BackgroundWriter(stream or sys.stderr)
        if console is None and self.out.isatty():
            from rich.console import Console

            console = Console(file=self.out, highlight=False)  # type: ignore[arg-type]
        self.console = console
        self.tokens = tokens
        self._streaming: EventKind | None = None  # TOKEN or REASONING while a stream is open
        self._shown_drops = 0

    def close(self, timeout_s: float = 2.0) -> bool:
        """Let what is queued reach stderr (bounded wait); whether it all did."""
        return self.out.wait(timeout_s)

    def _print(self, *parts: Part) -> None:
        """One line; untrusted text is made safe (``plain``) and never read as markup."""
        pieces = [(plain(p), "") if isinstance(p, str) else (plain(p[0]), p[1]) for p in parts]
        if self.console is None:
            self.out.write("".join(text for text, _ in pieces) + "\n")
            return
        from rich.text import Text

        self.console.print(Text.assemble(*pieces))

    def _end_stream(self) -> None:
        if self._streaming is not None:
            self.out.write("\n")
            self._streaming = None
        if self.out.dropped > self._shown_drops:
            n = self.out.dropped - self._shown_drops
            self._shown_drops = self.out.dropped
            self._print(
                (f"… {n} characters of streamed text not shown (stderr is not keeping up)", "dim")
            )

    def _stream(self, kind: EventKind, text: str) -> None:
        if self._streaming is not None and self._streaming is not kind:
            self.out.write("\n")
        text = plain(text)
        if kind is EventKind.REASONING and self.console is not None and self.console.is_terminal:
            text = f"\x1b[2m{text}\x1b[22m"  # dim: thinking, not the answer
        self.out.write(text, droppable=True)
        self._streaming = kind

    async def emit(self, event: Event) -> None:
        d = event.data
        if event.kind in (EventKind.TOKEN, EventKind.REASONING):
            if self.tokens:
                self._stream(EventKind(event.kind), str(d.get("text", "")))
            return
        self._end_stream()
        self._line(event, d)

    def _line(self, event: Event, d: dict[str, Any]) -> None:
        step = str(event.step)
        if event.kind == EventKind.RUN_STARTED:
            risk = d.get("risk", {})
            self._print(
                (str(d.get("pipeline")), "bold"),
                " tier ",
                (str(d.get("tier") or "-"), "bold"),
                f" · risk {risk.get('level')} ({risk.get('kind')}) ",
                _why(risk),
            )
        elif event.kind == EventKind.WARNING:
            where = f"{d['where']}: " if d.get("where") else ""
            self._print(where, (f"warning[{d.get('code')}]", "yellow"), f": {d.get('message')}")
        elif event.kind == EventKind.STEP_STARTED:
            self._print("▶ ", (step, "cyan"), f" {d.get('role')} · {d.get('model')}")
        elif event.kind == EventKind.PROVIDER_FRAME:
            self._print((f"◆ {step} {_frame(d.get('frame'))}", "dim"))
        elif event.kind == EventKind.STEP_FINISHED:
            usage = d.get("usage") or {}
            est = " (estimated)" if usage.get("estimated") else ""
            ok = d.get("status") == "ok"
            status = ("ok", "green") if ok else (str(d.get("status")), "red")
            extra = f" {d.get('error')}" if d.get("error") else ""
            self._print(
                "■ ",
                (step, "cyan"),
                " ",
                status,
                f" {d.get('elapsed_ms', 0)} ms · {usage.get('total_tokens', 0)} tokens{est}{extra}",
            )
        elif event.kind == EventKind.STEP_SKIPPED:
            self._print("· ", (f"{step} skipped: {d.get('reason')}", "dim"))
        elif event.kind == EventKind.STEP_RETRY:
            self._print(
                "↻ ",
                (step, "yellow"),
                f" retry {d.get('attempt')} in {d.get('delay_ms')} ms: {d.get('error')}",
            )
        elif event.kind == EventKind.BUDGET_STOP:
            self._print(("budget stop", "red"), f" at {step}: {d.get('reason')}")


def _frame(frame: object) -> str:
    """A provider frame in one short line: its type, then its fields as compact JSON."""
    if not isinstance(frame, dict):
        return "frame"
    kind = str(frame.get("type", "frame"))
    rest = {k: v for k, v in frame.items() if k != "type"}
    text = json.dumps(rest, default=str, separators=(",", ":"), ensure_ascii=True)
    if len(text) > FRAME_CHARS:
        text = text[: FRAME_CHARS - 1] + "…"
    return f"{kind} {text}"


def _why(risk: dict[str, Any]) -> str:
    """What the profile rests on, in one line: its signals, or where a learned profiler found
    none, its first reasons (the probability against the threshold and the nearest labelled
    example), so a decision is never shown without its evidence."""
    signals = [str(s) for s in risk.get("signals") or []]
    if signals:
        return ", ".join(signals)
    reasons = [str(r) for r in risk.get("reasons") or []][:2]
    return "; ".join(reasons) or "no signals"
