"""Checks on a policy file itself: secrets, pricing hygiene, provider settings."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from loomc.diagnostics import Diagnostic, Severity, Span
from loomc.policy.load import PolicySource
from loomc.policy.models import ENV_REF
from loomc.secrets import find_keys_in_source, looks_like_key
from loomc.syntax.ast import Module

_NEEDS_URL = {"openai-compatible"}
# A header whose name says it carries a credential: its value must reference env:NAME.
_SECRET_HEADER = re.compile(r"(?i)key|token|auth|secret|cookie|passw|credential|signature")
# A body field or query parameter that carries a credential (``max_tokens`` does not).
_SECRET_FIELD = re.compile(
    r"(?i)(^|[-_.])(api[-_]?key|key|keys|secret|password|passwd|token|access[-_]?token"
    r"|auth|authorization|credentials?|sig|signature)$|apikey|secret"
)
_ENV_INSIDE = re.compile(r"\benv:[A-Za-z_][A-Za-z0-9_]*\b")


def check_policy(source: PolicySource) -> list[Diagnostic]:
    return [*_secrets(source), *_pricing(source), *_urls(source)]


def check_sources(modules: list[Module]) -> list[Diagnostic]:
    """LOOM606: a key-shaped string written in a `.loom` file (task text, instruction, comment).

    Pipelines are committed and compiled into plan artifacts; a key in them is a leak even if no
    provider ever sees it. The artifact writer also removes such strings (``scrub_source_keys``).
    """
    out: list[Diagnostic] = []
    for module in modules:
        # lines counted on from the previous key, not from the file's start for each key:
        # 33,000 keys on a 1,000,000-character line took 5 s in `str.count` alone
        line, line_start, pos = 1, 0, 0
        for match in find_keys_in_source(module.source):
            newlines = module.source.count("\n", pos, match.start())
            if newlines:
                line += newlines
                line_start = module.source.rfind("\n", pos, match.start()) + 1
            pos = match.start()
            col = match.start() - line_start + 1
            out.append(
                Diagnostic(
                    "LOOM606",
                    Severity.ERROR,
                    "a .loom file holds a literal API key or token",
                    Span(module.path, line, col, line, col + len(match.group())),
                    "remove it (and revoke it: it may be in version control); keys belong in "
                    "the environment, referenced from the policy as `api_key: env:NAME`",
                )
            )
    return out


def _literal(source: PolicySource, path: tuple[str, ...], what: str, hint: str) -> Diagnostic:
    return Diagnostic(
        "LOOM601", Severity.ERROR, f"{what} holds a literal credential", source.span(*path), hint
    )


def _secrets(source: PolicySource) -> Iterator[Diagnostic]:
    for name, provider in source.policy.providers.items():
        var = f"{name.upper().replace('-', '_')}_API_KEY"
        if provider.api_key is not None and not ENV_REF.match(provider.api_key):
            yield Diagnostic(
                "LOOM601",
                Severity.ERROR,
                f"provider {name!r} has a literal API key; keys must be env:NAME references",
                source.span("providers", name, "api_key"),
                f"write `api_key: env:{var}` and export it",
            )
        for header, value in provider.headers.items():
            secret_name = _SECRET_HEADER.search(header) is not None
            if (secret_name and value.strip() and not _ENV_INSIDE.search(value)) or (
                looks_like_key(_ENV_INSIDE.sub("", value))
            ):
                yield _literal(
                    source,
                    ("providers", name, "headers", header),
                    f"provider {name!r} header {header!r}",
                    f"write the value with an env:NAME reference (`Bearer env:{var}`) and export "
                    "it, or use `api_key: env:NAME`",
                )
        for path in _secret_fields(provider.extra_body, ()):
            yield _literal(
                source,
                ("providers", name, "extra_body", *path),
                f"provider {name!r} extra_body.{'.'.join(path)}",
                f"write `env:{var}` as the value and export it",
            )
        if provider.base_url:
            yield from _url_secrets(source, name, provider.base_url, var)


def _secret_fields(value: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """Paths in ``extra_body`` whose string value is a literal credential."""
    if isinstance(value, dict):
        for key, item in value.items():
            sub = (*path, str(key))
            if isinstance(item, str):
                literal = _ENV_INSIDE.sub("", item).strip()
                if (
                    _SECRET_FIELD.search(str(key)) and literal and not _ENV_INSIDE.search(item)
                ) or looks_like_key(literal):
                    yield sub
            else:
                yield from _secret_fields(item, sub)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _secret_fields(item, (*path, str(i)) if isinstance(item, str) else path)


def _url_secrets(source: PolicySource, name: str, url: str, var: str) -> Iterator[Diagnostic]:
    try:
        parts = urlsplit(url)
        userinfo = parts.username is not None or parts.password is not None
    except ValueError:
        return
    span = ("providers", name, "base_url")
    if userinfo:
        yield _literal(
            source,
            span,
            f"provider {name!r} base_url (user:password@)",
            f"remove the credentials from the URL and use `api_key: env:{var}`",
        )
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if value and (_SECRET_FIELD.search(key) or looks_like_key(value)):
            yield _literal(
                source,
                span,
                f"provider {name!r} base_url query parameter {key!r}",
                f"remove `?{key}=` from the URL and use `api_key: env:{var}` (or a header "
                f"with `env:{var}`)",
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
