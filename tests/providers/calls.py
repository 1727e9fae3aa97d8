"""One request through a real adapter, collecting its stream events, then closing it."""

from __future__ import annotations

import anyio

from loomc.providers.base import Completion, CompletionRequest, Provider, StreamEvent


def complete(
    provider: Provider, request: CompletionRequest, events: list[StreamEvent] | None = None
) -> Completion:
    async def main() -> Completion:
        async def on_event(ev: StreamEvent) -> None:
            if events is not None:
                events.append(ev)

        try:
            return await provider.complete(request, on_event)
        finally:
            await provider.aclose()

    return anyio.run(main)
