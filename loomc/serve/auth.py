"""Bearer keys: resolved once from the environment, compared in constant time, never echoed.

The policy names each key's environment variable (``key: env:NAME``); the secret itself never
passes through a file loomc writes. Resolved secrets are registered with the providers' redactor,
so any text that reaches a log through ``redact`` has them removed too.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass

from loomc.errors import LoomcError
from loomc.policy.models import ServeKey, ServeSettings
from loomc.providers.base import register_secret
from loomc.serve.wire import ApiError


class ServeConfigError(LoomcError):
    """The server cannot start safely (a key's variable is unset, a public bind without keys)."""


@dataclass(frozen=True, slots=True)
class Client:
    """Who is calling: a key's policy entry, or None when the server runs without keys."""

    key: ServeKey | None

    @property
    def name(self) -> str | None:
        return None if self.key is None else self.key.name


class Keys:
    def __init__(self, settings: ServeSettings, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self._secrets: list[tuple[bytes, ServeKey]] = []
        for key in settings.keys:
            var = key.key.removeprefix("env:")
            secret = env.get(var, "")
            if not secret:
                raise ServeConfigError(
                    f"serve key {key.name!r}: environment variable {var} is not set"
                )
            register_secret(secret)
            self._secrets.append((secret.encode(), key))

    @property
    def required(self) -> bool:
        return bool(self._secrets)

    def authenticate(self, header: str | None) -> Client:
        if not self._secrets:
            return Client(None)
        scheme, _, token = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(
                401,
                "missing bearer key: send 'Authorization: Bearer <key>'",
                code="invalid_api_key",
            )
        given = token.strip().encode()
        found = None
        for secret, key in self._secrets:  # every key compared: timing does not tell which
            if hmac.compare_digest(secret, given):
                found = key
        if found is None:
            raise ApiError(401, "incorrect API key provided", code="invalid_api_key")
        return Client(found)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, keys: Keys) -> None:
    """Without keys anyone who can reach the port could spend the budget: loopback only."""
    if not keys.required and not is_loopback(host):
        raise ServeConfigError(
            f"refusing to serve on {host} without keys: declare serve.keys in the policy "
            "(key: env:NAME) or bind 127.0.0.1"
        )
