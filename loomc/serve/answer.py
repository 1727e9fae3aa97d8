"""The answer as it streams: the answering step's tokens as content deltas, never a draft.

An event sink over one run. The pipeline's answer is the first step of its ``answer`` chain
that completes; a step's text is sent only once every step before it in the chain is settled
without an answer, so a draft that a later verifier replaces is never streamed. What was sent
is always a prefix of one step's text; :meth:`AnswerStream.rest` sends what the final answer
adds to it, or records that the stream diverged from it.

``send`` is synchronous and must not block: the server's SSE writer queues the text and writes
every delta queued in one turn of the event loop as one socket write (see ``chat.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from loomc.exec.events import Event, EventKind
from loomc.exec.result import StepStatus


class AnswerStream:
    def __init__(self, chain: Sequence[str], send: Callable[[str], None]) -> None:
        self.chain = list(chain)
        self.send = send
        self.text: dict[str, str] = dict.fromkeys(self.chain, "")
        self.out: set[str] = set()
        self.sent = ""
        self.diverged = False
        self.front = self._front()  # the chain's first step not settled without an answer

    def _front(self) -> str | None:
        return next((s for s in self.chain if s not in self.out), None)

    def _flush(self) -> None:
        front = self.front
        if front is None:
            return
        target = self.text[front]
        if target.startswith(self.sent) and len(target) > len(self.sent):
            self.send(target[len(self.sent) :])
            self.sent = target

    async def emit(self, event: Event) -> None:
        step = event.step
        if step not in self.text:
            return
        if event.kind is EventKind.TOKEN:
            text = str(event.data.get("text", ""))
            before = self.text[step]
            self.text[step] = before + text
            if before is self.sent and step == self.front:
                # the step being streamed, all of it sent so far: the token is the delta (the
                # common case, without comparing the whole text at every token)
                if text:
                    self.send(text)
                    self.sent = self.text[step]
                return
        elif event.kind is EventKind.STEP_RETRY:
            self.text[step] = ""  # the next attempt starts over
        elif event.kind in (EventKind.STEP_SKIPPED, EventKind.BUDGET_STOP) or (
            event.kind is EventKind.STEP_FINISHED and event.data.get("status") != StepStatus.OK
        ):
            self.out.add(step)
            self.front = self._front()
        self._flush()

    def rest(self, answer: str) -> None:
        if answer.startswith(self.sent):
            if len(answer) > len(self.sent):
                self.send(answer[len(self.sent) :])
                self.sent = answer
        else:
            self.diverged = True
