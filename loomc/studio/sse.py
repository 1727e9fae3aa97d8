"""One server-sent-event response for every streaming route: serve's chat completions and the
Studio's live runs (serve sits above the Studio in the stage order, so it imports this).

The producer gets a ``write`` that sends one ``data:`` frame; it is cancelled when the client
disconnects, so a run's in-flight calls stop while the ledger keeps what they used booked. A
client gone mid-write is not an error. ``on_error`` (the Studio's) hears any other failure of
the producer and may still write a last frame; without it the failure propagates to the app's
error handling, as before.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

Item = dict[str, Any] | str
Write = Callable[[Item], Awaitable[None]]


def frame(item: Item) -> str:
    """A string goes as is (``[DONE]``); anything else as compact JSON (no NaN: it is not
    JSON; values JSON lacks, like Decimal, as their text)."""
    if isinstance(item, str):
        return item
    return json.dumps(item, separators=(",", ":"), default=str, allow_nan=False)


class EventStream(Response):
    def __init__(
        self,
        produce: Callable[[Write], Awaitable[None]],
        *,
        cache_control: str = "no-cache",
        on_error: Callable[[BaseExceptionGroup[Exception], Write], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(media_type="text/event-stream")
        self.produce, self.cache_control, self.on_error = produce, cache_control, on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", self.cache_control.encode()),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )

        async def write(item: Item) -> None:
            body = f"data: {frame(item)}\n\n".encode()
            await send({"type": "http.response.body", "body": body, "more_body": True})

        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            try:
                await self.produce(write)
            except* OSError:  # the client went away mid-write (maybe inside a task group)
                pass
            except* Exception as group:
                if self.on_error is None:
                    raise
                await self.on_error(group, write)
            tg.cancel_scope.cancel()
        with contextlib.suppress(OSError):  # uvicorn's ClientDisconnected is an OSError
            await send({"type": "http.response.body", "body": b"", "more_body": False})
