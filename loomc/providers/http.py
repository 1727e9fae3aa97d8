"""What the HTTP adapters share: ``HTTPProvider`` (one request, streamed or not, read within
its bounds) and ``ReadEvents`` (one network read's stream events).

``HTTPProvider.complete`` is the one point where provider text enters loomc: answers, streamed
tokens, frames and partial answers leave it with every registered key removed. Its client (keys
from ``env:NAME``, TLS, transport, timeouts) is ``loomc.providers.client``'s; its failures, typed
for the executor's retries, are ``loomc.providers.failures``'.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Literal

import anyio
import httpx

from loomc.policy.models import ProviderConfig
from loomc.providers.base import (
    Completion,
    CompletionRequest,
    Message,
    ProviderTimeout,
    StreamCallback,
    StreamDropped,
    StreamEvent,
    StreamRedactor,
    TokenUsage,
    estimate_tokens,
    redact_data,
    redact_secrets,
)
from loomc.providers.body import MAX_RESPONSE_BYTES, read_error_body
from loomc.providers.client import build_client, plain_transport, request_timeout, resolve_refs
from loomc.providers.failures import status_error
from loomc.providers.reader import BodyReader, ReplyReader, ResponseReader
from loomc.providers.transport import PlainHTTPTransport

# a request's headers before and after its Content-Length, as httpx orders them
_HeadParts = tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]
# the lean path's request head before and after its Content-Length line, the (host, port) it
# goes to, and a request naming its URL for errors and status messages
_LeanHead = tuple[bytes, bytes, tuple[str, int], httpx.Request]


class HTTPProvider:
    """The httpx client life cycle both HTTP adapters share: built on first use, closed once."""

    default_base_url: str | None = None
    default_headers: Mapping[str, str] = {}
    # ``complete(..., within_s=)`` bounds the whole call (an adapter whose ``_complete`` reads
    # through ``exchange`` with its ``deadline``): ``loomc.exec.metered`` then needs no scope
    keeps_deadlines = False

    def __init__(self, name: str, cfg: ProviderConfig, env: Mapping[str, str]) -> None:
        self.name = name
        self.cfg = cfg
        self._env = env
        self._client: httpx.AsyncClient | None = None
        self._transport: httpx.AsyncBaseTransport | None = None
        self._urls: dict[str, httpx.URL] = {}  # a path -> its URL under the client's base
        self._heads: dict[str, _HeadParts] = {}  # a path -> its headers (``_head_parts``)
        self._lean: dict[str, _LeanHead] = {}  # a path -> its request head's bytes (``exchange``)
        self._extra_body: dict[str, Any] | None = None
        # the most one response body may hold (loomc.providers.body)
        self.max_response_bytes = cfg.max_response_bytes or MAX_RESPONSE_BYTES

    @property
    def extra_body(self) -> dict[str, Any]:
        """``cfg.extra_body`` with ``env:NAME`` strings resolved (and registered as secrets)."""
        if self._extra_body is None:
            self._extra_body = resolve_refs(self.name, dict(self.cfg.extra_body), self._env)
        return self._extra_body

    async def complete(
        self,
        request: CompletionRequest,
        on_event: StreamCallback | None = None,
        *,
        within_s: float | None = None,
    ) -> Completion:
        """The adapter's ``_complete`` with every registered key removed from what it returns.

        Answers, streamed tokens (held back across chunk boundaries), frames, receipts and the
        partial text of a dropped stream are redacted here, once, before any sink, journal,
        receipt or report sees them. Error messages are redacted when the error is built.

        ``within_s`` (``keeps_deadlines`` adapters, asked by ``loomc.exec.metered``): the whole
        call ends in ``ProviderTimeout`` past it, as the caller's cancel scope would have cut
        it off. On the lean path that is one deadline on the connection (one timer a call,
        no scope: ~3 % of a streamed run's CPU); elsewhere a cancel scope here.
        """
        deadline: float | None = None
        if within_s is not None:
            loop = self._lean_loop() if self.keeps_deadlines else None
            if loop is None:
                with anyio.CancelScope(deadline=anyio.current_time() + within_s):
                    return await self.complete(request, on_event)
                raise ProviderTimeout(
                    f"{self.name}: no response in time (deadline)",
                    provider=self.name,
                    model=request.model,
                )
            deadline = loop.time() + within_s
        redactor = StreamRedactor()
        sink = on_event

        async def forward(event: StreamEvent) -> None:
            assert sink is not None
            if event.kind == "token":
                text = redactor.feed(event.text)
                if text:
                    await sink(StreamEvent(kind="token", text=text))
            else:
                await sink(
                    StreamEvent(
                        kind=event.kind,
                        text=redact_secrets(event.text),
                        frame=redact_data(event.frame),
                    )
                )

        try:
            completion = await self._complete(
                request, forward if sink is not None else None, deadline
            )
        except StreamDropped as exc:
            exc.partial = redact_secrets(exc.partial)
            raise
        finally:
            rest = redactor.flush()
        if sink is not None and rest:
            await sink(StreamEvent(kind="token", text=rest))
        receipt = completion.receipt
        if receipt is not None:
            receipt = dataclasses.replace(receipt, raw=redact_data(receipt.raw))
        return dataclasses.replace(
            completion,
            content=redact_secrets(completion.content),
            finish_reason=None
            if completion.finish_reason is None
            else redact_secrets(completion.finish_reason),
            receipt=receipt,
            frames=tuple(redact_data(f) for f in completion.frames),
        )

    async def _complete(
        self,
        request: CompletionRequest,
        on_event: StreamCallback | None,
        deadline: float | None = None,
    ) -> Completion:
        """The call; ``deadline`` (the loop's clock, set only on the lean path): see
        ``exchange``."""
        raise NotImplementedError

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            transport = plain_transport(self.cfg.base_url or self.default_base_url or "")
            self._client = build_client(
                self.name,
                self.cfg,
                self._env,
                default_base_url=self.default_base_url,
                default_headers=self.default_headers,
                transport=transport,
            )
            self._transport, self._urls, self._heads, self._lean = transport, {}, {}, {}
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    @contextlib.asynccontextmanager
    async def post(
        self,
        path: str,
        request: CompletionRequest,
        describe: Callable[[str], str] = str,
    ) -> AsyncIterator[httpx.Response]:
        """The response to ``request`` POSTed to ``path``, its body not read yet; a non-2xx
        answer raises its typed error, ``describe`` turning the start of its body into the
        message (the rest of an error page is never read)."""
        client = self.client
        transport = self._transport
        assert transport is not None  # built with the client
        url = self._urls.get(path)
        if url is None:  # merged with the base URL as httpx does, once per path
            url = self._urls[path] = client.build_request("POST", path).url
        # what `client.stream("POST", ...)` sends, byte for byte, without its per-call layers
        # (URL merge, auth and redirect hooks, cookie jar, the response's timing wrapper):
        # ~10 % of a streamed run's CPU at 128 calls in flight (benchmarks/README, serve8)
        extensions = {"timeout": request_timeout(request, client).as_dict()}
        if client.cookies:
            sent = httpx.Request(
                "POST",
                url,
                json=self.body(request),
                headers=client.headers,
                cookies=client.cookies,
                extensions=extensions,
            )
        else:
            # httpx's own request building (its JSON encoder, then a header merge that
            # normalises every header twice) cost ~40 µs a call, ~5 % of a streamed run: the
            # headers it would send are worked out once per path, only the length changes
            content = json.dumps(
                self.body(request), ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode()
            before, after = self._heads.get(path) or self._head_parts(path, url, client)
            sent = httpx.Request(
                "POST",
                url,
                headers=[*before, (b"Content-Length", b"%d" % len(content)), *after],
                stream=httpx.ByteStream(content),
                extensions=extensions,
            )
        try:
            response = await transport.handle_async_request(sent)
        except httpx.RequestError as exc:
            exc.request = sent  # httpx's own transport (https) leaves it to the client
            raise
        response.request = sent
        try:
            if "set-cookie" in response.headers:  # kept for the next call, as the client would
                client.cookies.extract_cookies(response)
            if response.status_code >= 400:
                text = describe(await read_error_body(response))
                raise status_error(response, text, provider=self.name, model=request.model)
            yield response
        finally:
            await response.aclose()

    def _lean_loop(self) -> asyncio.AbstractEventLoop | None:
        """The running loop when this call can take the lean path (``exchange``), else None."""
        client = self.client
        transport = self._transport
        if not isinstance(transport, PlainHTTPTransport) or client.cookies:
            return None  # a cookie jar: its Cookie header is httpx's to build
        return transport.lean(client.base_url)

    @contextlib.asynccontextmanager
    async def exchange(
        self,
        path: str,
        request: CompletionRequest,
        deadline: float | None = None,
        describe: Callable[[str], str] = str,
    ) -> AsyncIterator[BodyReader]:
        """``post``, read as a ``BodyReader``: on the lean path (plain http on asyncio, no
        cookie jar) the request's bytes go straight to the connection and the body is read off
        its buffer, with no httpx ``Request``/``Response`` per call; elsewhere through ``post``.
        The bytes sent are ``post``'s, byte for byte; a non-2xx answer raises the same error;
        an encoded body (``Content-Encoding``) or a cookie the upstream sets goes through
        httpx's ``Response`` as before. ``deadline`` (the loop's clock): every wait of the
        call ends in ``ReadTimeout`` past it (``Connection.arm``); without it each wait has
        the request's read timeout, as httpx's would."""
        loop = self._lean_loop()
        limit, model = self.max_response_bytes, request.model
        if loop is None:
            async with self.post(path, request, describe) as response:
                yield ResponseReader(response, limit, self.name, model)
            return
        client = self.client
        transport = self._transport
        assert isinstance(transport, PlainHTTPTransport)
        head, tail, key, shown = self._lean.get(path) or self._lean_head(path, client)
        content = json.dumps(
            self.body(request), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode()
        data = b"".join((head, b"Content-Length: %d\r\n" % len(content), tail, content))
        if request.timeout_s is None:
            connect_s, read_s = client.timeout.connect, client.timeout.read
        else:
            connect_s = read_s = request.timeout_s
        if deadline is not None:
            read_s = None  # the deadline bounds every wait
        reply = await transport.send(loop, key, data, shown, connect_s, deadline, read_s)
        try:
            if (
                reply.status_code >= 400
                or reply.header(b"content-encoding") is not None
                or reply.header(b"set-cookie") is not None
            ):
                response = reply.response()
                if "set-cookie" in response.headers:  # kept for the next call
                    client.cookies.extract_cookies(response)
                if response.status_code >= 400:
                    text = describe(await read_error_body(response))
                    raise status_error(response, text, provider=self.name, model=model)
                yield ResponseReader(response, limit, self.name, model)
            else:
                yield ReplyReader(reply, limit, self.name, model)
            if reply.body.conn.expired:  # it passed while a sink held the call
                raise httpx.ReadTimeout("no data from the server in time", request=shown)
        finally:
            reply.body.close()

    def _lean_head(self, path: str, client: httpx.AsyncClient) -> _LeanHead:
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = client.build_request("POST", path).url
        before, after = self._heads.get(path) or self._head_parts(path, url, client)
        head = b"POST %s HTTP/1.1\r\n" % url.raw_path
        head += b"".join(b"%s: %s\r\n" % (name, value) for name, value in before)
        tail = b"".join(b"%s: %s\r\n" % (name, value) for name, value in after) + b"\r\n"
        shown = httpx.Request("POST", url)
        parts = self._lean[path] = (head, tail, (url.host, url.port or 80), shown)
        return parts

    def _head_parts(self, path: str, url: httpx.URL, client: httpx.AsyncClient) -> _HeadParts:
        """The headers httpx sends with a JSON body to ``url`` (its own request, built once),
        either side of the Content-Length."""
        raw = httpx.Request("POST", url, json={}, headers=client.headers).headers.raw
        at = [name.lower() for name, _ in raw].index(b"content-length")
        parts = self._heads[path] = (raw[:at], raw[at + 1 :])
        return parts

    def body(self, request: CompletionRequest) -> dict[str, Any]:
        """The request's JSON on this provider's wire."""
        raise NotImplementedError


class ReadEvents:
    """The stream events one network read produced, in order: adjacent answer text joins into
    one ``token`` event and adjacent reasoning into one ``reasoning`` event (never the two
    together); a frame goes between them where it arrived.

    Why: an upstream's frames mostly arrive many to a read (a local model's whole answer, 16
    frames, in one), and every event costs the redactor, the meter, the run's ``Event`` and
    each sink. An adapter parses one read, then hands these on before it reads again, so no
    text waits for bytes that have not arrived."""

    __slots__ = ("_events", "_kind", "_parts")

    def __init__(self) -> None:
        self._events: list[StreamEvent] = []
        self._kind: Literal["token", "reasoning", ""] = ""
        self._parts: list[str] = []

    def text(self, kind: Literal["token", "reasoning"], text: str) -> None:
        if kind != self._kind:
            self._close()
            self._kind = kind
        self._parts.append(text)

    def frame(self, frame: dict[str, Any]) -> None:
        self._close()
        self._events.append(StreamEvent(kind="frame", frame=frame))

    def _close(self) -> None:
        if self._parts:
            kind: Literal["token", "reasoning"] = "token" if self._kind == "token" else "reasoning"
            text = self._parts[0] if len(self._parts) == 1 else "".join(self._parts)
            self._events.append(StreamEvent(kind=kind, text=text))
            self._parts = []
        self._kind = ""

    @property
    def events(self) -> list[StreamEvent]:
        """Everything the read produced (its last run of text closed)."""
        self._close()
        return self._events


def wire_messages(request: CompletionRequest) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in request.messages]


def estimated_usage(messages: tuple[Message, ...], completion: str) -> TokenUsage:
    """When the provider reports nothing, count conservatively and say so: never zero."""
    return TokenUsage(
        prompt_tokens=sum(estimate_tokens(m.content) for m in messages),
        completion_tokens=max(1, estimate_tokens(completion)),
        estimated=True,
    )
