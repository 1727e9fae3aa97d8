"""The answer stream's fast path (a token of the step being streamed sent as it is) sends
exactly what comparing the whole text at every event sent: a Hypothesis property over event
sequences of a three-step answer chain (tokens, retries, skips, failed and finished steps)."""

from __future__ import annotations

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.exec.events import Event, EventKind
from loomc.exec.result import StepStatus
from loomc.serve.answer import AnswerStream

CHAIN = ["a", "b", "c"]


class Reference:
    """The answer stream as it was written first: the whole text compared at every event."""

    def __init__(self) -> None:
        self.text = dict.fromkeys(CHAIN, "")
        self.out: set[str] = set()
        self.sent = ""
        self.sends: list[str] = []

    def emit(self, event: Event) -> None:
        step = event.step
        if step not in self.text:
            return
        if event.kind is EventKind.TOKEN:
            self.text[step] += str(event.data.get("text", ""))
        elif event.kind is EventKind.STEP_RETRY:
            self.text[step] = ""
        elif event.kind in (EventKind.STEP_SKIPPED, EventKind.BUDGET_STOP) or (
            event.kind is EventKind.STEP_FINISHED and event.data.get("status") != StepStatus.OK
        ):
            self.out.add(step)
        front = next((s for s in CHAIN if s not in self.out), None)
        if front is None:
            return
        target = self.text[front]
        if target.startswith(self.sent) and len(target) > len(self.sent):
            self.sends.append(target[len(self.sent) :])
            self.sent = target


def _event(kind: str, step: str, text: str) -> Event:
    if kind == "token":
        return Event(EventKind.TOKEN, "r", step, {"text": text})
    if kind == "retry":
        return Event(EventKind.STEP_RETRY, "r", step, {})
    if kind == "skip":
        return Event(EventKind.STEP_SKIPPED, "r", step, {})
    status = StepStatus.OK if kind == "ok" else "failed"
    return Event(EventKind.STEP_FINISHED, "r", step, {"status": status})


events = st.lists(
    st.tuples(
        st.sampled_from(["token"] * 6 + ["retry", "skip", "ok", "failed"]),
        st.sampled_from([*CHAIN, "other"]),
        st.sampled_from(["", "x", "yz", "x"]),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(sequence=events)
def test_the_fast_path_sends_what_the_whole_comparison_sent(
    sequence: list[tuple[str, str, str]],
) -> None:
    sends: list[str] = []
    stream = AnswerStream(CHAIN, sends.append)
    reference = Reference()

    async def feed() -> None:
        for kind, step, text in sequence:
            event = _event(kind, step, text)
            await stream.emit(event)
            reference.emit(event)

    anyio.run(feed)
    assert sends == reference.sends and stream.sent == reference.sent
