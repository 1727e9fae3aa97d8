"""Checks on a policy file itself: secrets, pricing hygiene, provider settings."""

from __future__ import annotations

from collections.abc import Iterator

from loomc.diagnostics import Diagnostic, Severity
from loomc.policy.load import PolicySource
from loomc.policy.models import ENV_REF

_NEEDS_URL = {"openai-compatible"}
_SECRET_HEADERS = ("authorization", "api-key", "x-api-key", "cookie")


def check_policy(source: PolicySource) -> list[Diagnostic]:
    return [*_secrets(source), *_pricing(source), *_urls(source)]


def _secrets(source: PolicySource) -> Iterator[Diagnostic]:
    for name, provider in source.policy.providers.items():
        if provider.api_key is not None and not ENV_REF.match(provider.api_key):
            yield Diagnostic(
                "LOOM601",
                Severity.ERROR,
                f"provider {name!r} has a literal API key; keys must be env:NAME references",
                source.span("providers", name, "api_key"),
                f"write `api_key: env:{name.upper().replace('-', '_')}_API_KEY` and export it",
            )
        for header, value in provider.headers.items():
            if header.lower() in _SECRET_HEADERS and not ENV_REF.match(
                value.split()[-1] if value else ""
            ):
                yield Diagnostic(
                    "LOOM601",
                    Severity.ERROR,
                    f"provider {name!r} header {header!r} holds a literal credential",
                    source.span("providers", name, "headers", header),
                    "use `api_key: env:NAME`, or an env:NAME reference as the header value",
                )


def _pricing(source: PolicySource) -> Iterator[Diagnostic]:
    used = {w.model for w in source.policy.workers.values()}
    for model in source.policy.pricing:
        if model not in used:
            yield Diagnostic(
                "LOOM604",
                Severity.WARNING,
                f"pricing for {model!r}, which no worker uses",
                source.span("pricing", model),
                "remove it or fix the model name",
            )


def _urls(source: PolicySource) -> Iterator[Diagnostic]:
    for name, provider in source.policy.providers.items():
        if provider.type in _NEEDS_URL and not provider.base_url:
            yield Diagnostic(
                "LOOM605",
                Severity.ERROR,
                f"provider {name!r} of type {provider.type} needs a base_url",
                source.span("providers", name),
                "add `base_url: http://127.0.0.1:PORT/v1` (or the gateway's URL)",
            )
