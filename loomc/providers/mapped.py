"""A provider under another name with its model ids renamed: one upstream answering for the
models a policy names (the Studio's bring-your-own-key runs send every model of a pipeline to
one provider the user describes, each model mapped to one that provider knows)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from loomc.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderConfigError,
    StreamCallback,
)


class MappedProvider:
    """Answers as ``name``: a request for ``name/model`` goes to ``upstream`` as
    ``models["name/model"]``; an unmapped model is a config error, never a guess."""

    def __init__(self, name: str, upstream: Provider, models: Mapping[str, str]) -> None:
        self.name = name
        self.upstream = upstream
        self.models = dict(models)

    async def complete(
        self, request: CompletionRequest, on_event: StreamCallback | None = None
    ) -> Completion:
        ref = f"{self.name}/{request.model}"
        target = self.models.get(ref)
        if target is None:
            raise ProviderConfigError(f"no model mapped for {ref}", provider=self.name)
        return await self.upstream.complete(replace(request, model=target), on_event)

    async def aclose(self) -> None:
        await self.upstream.aclose()
