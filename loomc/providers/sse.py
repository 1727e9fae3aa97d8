"""A server-sent-events parser over a stream of lines (the WHATWG rules a robust client needs).

Real servers differ: LiteLLM ends with ``data: [DONE]``, ``transformers serve`` just closes,
OpenRouter interleaves ``: OPENROUTER PROCESSING`` comments, some omit the blank line after the
last event. Comments and unknown fields are skipped; multi-line ``data`` is joined with newlines.

``SSEParser`` is fed one network read's lines at a time (``loomc.providers.body.
read_line_batches``) and returns the events they completed as one list, so the adapter can
pass a read's tokens on as one event. It is a plain object, not an async generator: a generator
left at ``[DONE]`` is closed by the event loop's finaliser, a task per call.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs 3x (17 events a run)
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None
    terminated: bool = True  # False: the stream ended before this event's blank line


class SSEParser:
    """Lines in, completed events out; holds the event being read between calls."""

    __slots__ = ("_data", "_event", "_last_id")

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None

    def feed(self, lines: list[str]) -> list[SSEEvent]:
        """The events these lines complete; ``lines`` without their endings (as
        ``loomc.providers.body.LineSplitter`` gives them)."""
        out: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if line[:6] == "data: ":  # nearly every line of a stream: checked first
                data.append(line[6:])
                continue
            if not line:
                if data:
                    out.append(SSEEvent("\n".join(data), self._event or "message", self._last_id))
                    data = self._data = []
                self._event = ""
                continue
            if line[0] == ":":
                continue  # comment / keep-alive
            name, sep, value = line.partition(":")
            if sep and value.startswith(" "):
                value = value[1:]
            if name == "data":
                data.append(value)
            elif name == "event":
                self._event = value
            elif name == "id":
                self._last_id = value
        return out

    def end(self) -> list[SSEEvent]:
        """A final event without its blank line: still delivered, marked unterminated."""
        if not self._data:
            return []
        data, self._data = self._data, []
        return [SSEEvent("\n".join(data), self._event or "message", self._last_id, False)]
