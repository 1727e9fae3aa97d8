"""TLS: https providers stay verified, plain-http ones never load the CA bundle.

A real https server on 127.0.0.1 (uvicorn, a self-signed certificate made by ``openssl``)
serves the replay app: loomc refuses it until ``SSL_CERT_FILE`` trusts that certificate, as
httpx's own default does; a client built for an ``http://`` URL refuses TLS whatever the
environment trusts (it fails closed)."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
import uvicorn
from replay import ReplayServer

from loomc.policy.models import ProviderConfig
from loomc.providers.base import CompletionRequest, ConnectionFailed, Message
from loomc.providers.client import build_client, tls_context
from loomc.providers.openai_compat import OpenAICompatProvider

LITELLM_TEXT = "The capital of France is Paris. It has been the capital since 987."


@pytest.fixture(scope="module")
def https(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(base URL, certificate) of an https replay server on 127.0.0.1."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    config = uvicorn.Config(
        ReplayServer(),
        host="127.0.0.1",
        port=0,
        log_level="critical",
        lifespan="off",
        ssl_certfile=str(cert),
        ssl_keyfile=str(key),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "https server did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"https://127.0.0.1:{port}", cert
    server.should_exit = True
    thread.join(timeout=5)


def _complete(base_url: str) -> str:
    cfg = ProviderConfig(type="openai-compatible", base_url=f"{base_url}/v1")
    provider = OpenAICompatProvider("tls", cfg, env={})
    request = CompletionRequest(
        model="litellm-usage", messages=(Message("user", "hi"),), max_tokens=64, stream=True
    )

    async def main() -> str:
        try:
            return (await provider.complete(request)).content
        finally:
            await provider.aclose()

    return anyio.run(main)


def test_an_https_provider_refuses_a_certificate_nobody_trusts(
    https: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(ConnectionFailed, match="CERTIFICATE_VERIFY_FAILED"):
        _complete(https[0])


def test_an_https_provider_accepts_the_certificate_ssl_cert_file_trusts(
    https: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(https[1]))
    assert _complete(https[0]) == LITELLM_TEXT


def test_a_plain_http_client_loads_no_ca_and_fails_closed_on_tls(
    https: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(https[1]))  # even where the environment trusts it
    context = tls_context("http://127.0.0.1:1/v1")
    assert context.cert_store_stats()["x509_ca"] == 0
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    cfg = ProviderConfig(type="openai-compatible", base_url="http://127.0.0.1:1/v1")

    async def main() -> None:
        async with build_client("plain", cfg, {}, default_base_url=None) as client:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get(f"{https[0]}/v1/models")

    anyio.run(main)
