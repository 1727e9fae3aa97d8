"""A real OTLP/HTTP trace receiver on 127.0.0.1: accepts ``POST /v1/traces`` (protobuf, as the
SDK's exporter sends it), decodes it with ``opentelemetry-proto`` and keeps the spans and the raw
bodies (so a test can prove a secret never left the process)."""

from __future__ import annotations

import gzip
import threading
from typing import Any

from asgi_thread import ThreadedASGI, read_body


class OtlpReceiver(ThreadedASGI):
    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.spans: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        status = 404
        if scope["path"] == "/v1/traces" and scope["method"] == "POST":
            headers = dict(scope["headers"])
            if headers.get(b"content-encoding") == b"gzip":
                body = gzip.decompress(body)
            self._decode(body)
            status = 200
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/x-protobuf")],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    def _decode(self, body: bytes) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self._lock:
            self.bodies.append(body)
            for resource in request.resource_spans:
                for scoped in resource.scope_spans:
                    for span in scoped.spans:
                        self.spans.append(
                            {
                                "name": span.name,
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent": span.parent_span_id.hex() or None,
                                "kind": span.kind,
                                "start": span.start_time_unix_nano,
                                "end": span.end_time_unix_nano,
                                "attributes": {a.key: _value(a.value) for a in span.attributes},
                                "scope": scoped.scope.name,
                            }
                        )


def _value(value: Any) -> Any:
    which = value.WhichOneof("value")
    return getattr(value, which) if which else None
