"""The CLI's live trace: one line per step start/finish, streamed tokens in between (rich)."""

from __future__ import annotations

import sys

from rich.console import Console

from loomc.cli.terminal import markup, plain
from loomc.exec.events import Event, EventKind


class LiveTrace:
    def __init__(self, console: Console | None = None, tokens: bool = True) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.tokens = tokens
        self._streaming = False

    def _end_stream(self) -> None:
        if self._streaming:
            sys.stderr.write("\n")
            self._streaming = False

    async def emit(self, event: Event) -> None:
        d = event.data
        if event.kind == EventKind.TOKEN:
            if self.tokens:
                sys.stderr.write(plain(d.get("text", "")))
                sys.stderr.flush()
                self._streaming = True
            return
        self._end_stream()
        if event.kind == EventKind.RUN_STARTED:
            risk = d.get("risk", {})
            tier = d.get("tier") or "-"
            self.console.print(
                f"[bold]{markup(d.get('pipeline'))}[/] tier [bold]{markup(tier)}[/] · risk "
                f"{markup(risk.get('level'))} ({markup(risk.get('kind'))}) "
                f"{markup(', '.join(risk.get('signals') or []) or 'no signals')}"
            )
        elif event.kind == EventKind.STEP_STARTED:
            self.console.print(f"▶ [cyan]{markup(event.step)}[/] {markup(d.get('role'))} · {markup(d.get('model'))}")
        elif event.kind == EventKind.STEP_FINISHED:
            usage = d.get("usage") or {}
            est = " (estimated)" if usage.get("estimated") else ""
            status = "[green]ok[/]" if d.get("status") == "ok" else f"[red]{markup(d.get('status'))}[/]"
            extra = f" {markup(d.get('error'))}" if d.get("error") else ""
            self.console.print(
                f"■ [cyan]{markup(event.step)}[/] {status} {d.get('elapsed_ms', 0)} ms · "
                f"{usage.get('total_tokens', 0)} tokens{est}{extra}"
            )
        elif event.kind == EventKind.STEP_SKIPPED:
            self.console.print(f"· [dim]{markup(event.step)} skipped: {markup(d.get('reason'))}[/]")
        elif event.kind == EventKind.STEP_RETRY:
            self.console.print(
                f"↻ [yellow]{markup(event.step)}[/] retry {d.get('attempt')} in "
                f"{d.get('delay_ms')} ms: {markup(d.get('error'))}"
            )
        elif event.kind == EventKind.BUDGET_STOP:
            self.console.print(f"[red]budget stop[/] at {markup(event.step)}: {markup(d.get('reason'))}")
