"""A provider's httpx client: its keys resolved from ``env:NAME``, its TLS context, its transport
and its timeouts.

Keys are resolved when a client is first built (``api_key``, and any ``env:NAME`` written
inside a header value or an ``extra_body`` string) and registered with ``redact``, so that no
message, trace or report can carry them; an unset variable is a configuration error, never sent
literally. ``loomc.providers.http.HTTPProvider`` builds one client per provider with these.
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Mapping
from typing import Any

import httpx

from loomc.policy.models import ProviderConfig
from loomc.providers.base import CompletionRequest, ProviderConfigError, register_secret
from loomc.providers.transport import PlainHTTPTransport

DEFAULT_TIMEOUT_S = 60.0


def resolve_key(name: str, cfg: ProviderConfig, env: Mapping[str, str]) -> str | None:
    """``env:NAME`` → the variable's value; a literal key never gets this far (LOOM6xx)."""
    ref = cfg.api_key
    if ref is None:
        return None
    var = ref[4:] if ref.startswith("env:") else None
    if not var:
        raise ProviderConfigError(
            f"provider {name!r}: api_key must be an env:NAME reference", provider=name
        )
    value = env.get(var)
    if not value:
        raise ProviderConfigError(
            f"provider {name!r}: environment variable {var} is not set", provider=name
        )
    register_secret(value)
    return value


_ENV_IN_TEXT = re.compile(r"\benv:([A-Za-z_][A-Za-z0-9_]*)\b")


def resolve_refs(name: str, value: Any, env: Mapping[str, str]) -> Any:
    """Replace each ``env:NAME`` inside strings (``Bearer env:TOKEN``) with the variable's value.

    Every resolved value is registered as a secret; an unset variable is a config error, never
    sent literally.
    """
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            resolved = env.get(m.group(1))
            if not resolved:
                raise ProviderConfigError(
                    f"provider {name!r}: environment variable {m.group(1)} is not set",
                    provider=name,
                )
            register_secret(resolved)
            return resolved

        return _ENV_IN_TEXT.sub(sub, value)
    if isinstance(value, Mapping):
        return {k: resolve_refs(name, v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_refs(name, v, env) for v in value]
    return value


_TLS: dict[tuple[str, str | None, str | None], ssl.SSLContext] = {}


def tls_context(base_url: str) -> ssl.SSLContext:
    """The TLS context of a client for ``base_url``, shared by every client of this process.

    Loading the CA bundle costs ~30 ms, most of building a client, and a loopback ``http://``
    provider never needs it. An ``https`` client gets the verified context httpx would build
    (certifi's bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), built on first use. A plain-http
    client gets a context that verifies against no CA at all: it never uses TLS, and were it
    ever pointed at an https URL it would fail closed, never connect unverified.
    """
    if base_url.startswith("https://"):
        key = ("https", os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    else:
        key = ("http", None, None)
    context = _TLS.get(key)
    if context is None:
        context = (
            httpx.create_ssl_context()
            if key[0] == "https"
            else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies (CERT_REQUIRED), trusts none
        )
        _TLS[key] = context
    return context


def build_client(
    name: str,
    cfg: ProviderConfig,
    env: Mapping[str, str],
    *,
    default_base_url: str | None,
    default_headers: Mapping[str, str] | None = None,
    auth_header: bool = True,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    base_url = (cfg.base_url or default_base_url or "").rstrip("/")
    if not base_url.startswith(("http://", "https://")):
        raise ProviderConfigError(
            f"provider {name!r}: base_url must be an http(s) URL, got {base_url or 'nothing'!r}",
            provider=name,
        )
    headers = {
        "User-Agent": "loomc",
        **(default_headers or {}),
        **resolve_refs(name, dict(cfg.headers), env),
    }
    key = resolve_key(name, cfg, env)
    if key is not None and auth_header:
        headers["Authorization"] = f"Bearer {key}"
    timeout_s = cfg.timeout / 1000 if cfg.timeout else DEFAULT_TIMEOUT_S
    return httpx.AsyncClient(
        base_url=base_url + "/",
        headers=headers,
        timeout=httpx.Timeout(timeout_s),
        # Retries belong to the executor (it reserves budget for each attempt), never to httpx.
        # An eval or a server keeps ~128 calls in flight against one provider: httpx's default
        # pool (100 connections, 20 kept alive) would queue past 100 and reconnect past 20, and
        # one pool's bookkeeping costs O(calls in flight) per call; see loomc.providers.pool.
        # Plain http goes through loomc.providers.transport (no httpcore); https through the shards.
        transport=transport or plain_transport(base_url),
        trust_env=False,
    )


def plain_transport(base_url: str) -> PlainHTTPTransport:
    """A client's transport: loomc's lean one for http, httpx's sharded one behind it."""
    return PlainHTTPTransport(retries=0, verify=tls_context(base_url))


def request_timeout(request: CompletionRequest, client: httpx.AsyncClient) -> httpx.Timeout:
    """The step's timeout bounds connect and each read; the run deadline nests outside."""
    if request.timeout_s is None:
        return client.timeout
    return httpx.Timeout(request.timeout_s)
