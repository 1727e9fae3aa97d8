"""A server-sent-events parser over a stream of lines (the WHATWG rules a robust client needs).

Real servers differ: LiteLLM ends with ``data: [DONE]``, ``transformers serve`` just closes,
OpenRouter interleaves ``: OPENROUTER PROCESSING`` comments, some omit the blank line after the
last event. Comments and unknown fields are skipped; multi-line ``data`` is joined with newlines.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None
    terminated: bool = True  # False: the stream ended before this event's blank line


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[SSEEvent]:
    data: list[str] = []
    event = ""
    last_id: str | None = None
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield SSEEvent("\n".join(data), event or "message", last_id)
            data, event = [], ""
            continue
        if line.startswith(":"):
            continue  # comment / keep-alive
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id":
            last_id = value
    if data:  # a final event without its blank line: still deliver it
        yield SSEEvent("\n".join(data), event or "message", last_id, terminated=False)
