"""Is a provider's server there? One GET to its base URL with a short timeout (``loomc doctor``).

Any HTTP answer, even 401 or 404, means the server is reachable: the probe sends no key and no
model call, so it costs nothing and proves only that the address answers.
"""

from __future__ import annotations

import httpx

from loomc.policy.models import ProviderConfig
from loomc.providers.client import tls_context
from loomc.providers.ollama import DEFAULT_BASE_URL as OLLAMA_BASE_URL
from loomc.providers.openai_compat import PRESETS


def base_url(cfg: ProviderConfig) -> str | None:
    """The URL the provider would call: its ``base_url`` or its type's default."""
    if cfg.base_url:
        return cfg.base_url
    if cfg.type == "ollama":
        return OLLAMA_BASE_URL
    preset = PRESETS.get(cfg.type)
    return preset.base_url if preset else None


async def probe(url: str, timeout_s: float) -> str | None:
    """None when ``url`` answers HTTP within ``timeout_s``, else why not (one line)."""
    try:
        async with httpx.AsyncClient(
            timeout=timeout_s, follow_redirects=False, verify=tls_context(url)
        ) as client:
            await client.get(url)
    except httpx.TimeoutException:
        return f"no answer within {timeout_s:g} s"
    except httpx.HTTPError as exc:
        return f"unreachable ({type(exc).__name__})"
    return None
