"""Build providers from policy configs, lazily and once per name, and close them together."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from loomc.policy.models import ProviderConfig
from loomc.providers.base import Provider, ProviderConfigError

if TYPE_CHECKING:
    from loomc.policy.models import Policy


def build_provider(
    name: str, cfg: ProviderConfig, env: Mapping[str, str] | None = None
) -> Provider:
    """Keys are not resolved here: adapters read ``env:NAME`` at request time."""
    environ: Mapping[str, str] = os.environ if env is None else env
    if cfg.type == "mock":
        from loomc.providers.mock import MockProvider

        return MockProvider(name, cfg.mock)
    if cfg.type == "ollama":
        from loomc.providers.ollama import OllamaProvider

        return OllamaProvider(name, cfg, env=environ)
    if cfg.type in ("openai-compatible", "openrouter", "lmstudio", "dot"):
        from loomc.providers.openai_compat import OpenAICompatProvider

        return OpenAICompatProvider(name, cfg, env=environ)
    raise ProviderConfigError(f"provider {name!r}: unknown type {cfg.type!r}")


class ProviderPool:
    """Providers by policy name, built on first use so unused ones never need their keys."""

    def __init__(
        self,
        providers: Mapping[str, ProviderConfig] | Policy,
        env: Mapping[str, str] | None = None,
    ) -> None:
        configs = providers if isinstance(providers, Mapping) else providers.providers
        self._configs: dict[str, ProviderConfig] = dict(configs)
        self._env = env
        self._built: dict[str, Provider] = {}

    def get(self, name: str) -> Provider:
        if name not in self._built:
            cfg = self._configs.get(name)
            if cfg is None:
                known = ", ".join(sorted(self._configs)) or "none"
                raise ProviderConfigError(f"unknown provider {name!r} (known: {known})")
            self._built[name] = build_provider(name, cfg, self._env)
        return self._built[name]

    def for_model(self, model_ref: str) -> tuple[Provider, str]:
        """Split ``provider/model-id`` and return the provider with the bare model id."""
        provider, sep, model = model_ref.partition("/")
        if not sep or not model:
            raise ProviderConfigError(f"model {model_ref!r} is not 'provider/model-id'")
        return self.get(provider), model

    def put(self, name: str, provider: Provider) -> None:
        """Inject a ready provider (tests, or a shared mock whose attempt counts matter)."""
        self._built[name] = provider

    async def aclose(self) -> None:
        built, self._built = list(self._built.values()), {}
        for provider in built:
            await provider.aclose()

    async def __aenter__(self) -> ProviderPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
