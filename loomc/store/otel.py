"""OpenTelemetry export of stored runs, following the GenAI semantic conventions.

A finished run becomes one ``invoke_workflow {pipeline}`` span (INTERNAL) with one child
``chat {model}`` span (CLIENT) per step that called a model, back-dated to the run's own
timestamps from its events, so any OTLP backend (Jaeger, Tempo, Honeycomb, ...) shows loomc runs
as they happened. Attribute names follow the GenAI conventions as of semconv-genai v0.1.0:
``gen_ai.operation.name``, ``gen_ai.provider.name`` (and the pre-1.37 ``gen_ai.system`` for
backends that still read it), ``gen_ai.request.model``, ``gen_ai.response.model``,
``gen_ai.usage.input_tokens``/``output_tokens``; loomc's own figures go under ``loomc.*``
(tier, credits, cost, stop reason, receipt).

Built from the :class:`StoredRun` (not from live objects) so the same export serves runs as
they finish and runs read back from a store. No prompt, answer or key is exported: step outputs
and request bodies stay in the store. The SDK is imported lazily (the ``otel`` extra).
"""

from __future__ import annotations

import os
from typing import Any

from loomc.errors import LoomcError
from loomc.store.base import StoredRun

SCOPE = "loomc"
_NS = 1_000_000_000


class OtelUnavailable(LoomcError):
    """``--otel`` without the ``otel`` extra installed."""


class OtelExporter:
    """Exports stored runs as spans through a ``TracerProvider`` (the SDK's)."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer(SCOPE)

    @classmethod
    def otlp(cls, endpoint: str | None = None) -> OtelExporter:
        """A provider with a batching OTLP/HTTP (protobuf) exporter. ``endpoint`` is the full
        traces URL; without it the SDK reads ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``."""
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            raise OtelUnavailable(
                "OpenTelemetry export needs the otel extra: pip install 'loomc[otel]'"
            ) from None
        # flushed by loomc with a bound (``flush``): an unreachable collector never holds a
        # command at exit for the SDK's own retries
        provider = TracerProvider(
            resource=Resource.create({"service.name": "loomc"}), shutdown_on_exit=False
        )
        options: dict[str, Any] = {"endpoint": endpoint} if endpoint else {}
        if not any(os.environ.get(f"OTEL_EXPORTER_OTLP_{k}TIMEOUT") for k in ("", "TRACES_")):
            options["timeout"] = 3  # seconds, retries included (the SDK's default is 10)
        exporter = OTLPSpanExporter(**options)
        provider.add_span_processor(BatchSpanProcessor(exporter))
        return cls(provider)

    def export(self, run: StoredRun) -> None:
        from opentelemetry import trace

        result = run.result
        start_ns = int(run.ts * _NS)
        end_ns = start_ns + max(0, int(run.elapsed_ms)) * 1_000_000
        model = run.pipeline + (f"@{run.tier}" if run.tier else "")
        steps = [s for s in result.get("steps", []) if int(s.get("attempts") or 0) > 0]
        usage_in = sum(int(s.get("usage", {}).get("prompt_tokens") or 0) for s in steps)
        usage_out = sum(int(s.get("usage", {}).get("completion_tokens") or 0) for s in steps)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.agent.name": model,
            "gen_ai.provider.name": "loomc",
            "gen_ai.system": "loomc",
            "gen_ai.request.model": model,
            "gen_ai.response.model": model,
            "gen_ai.usage.input_tokens": usage_in,
            "gen_ai.usage.output_tokens": usage_out,
            "loomc.run_id": run.run_id,
            "loomc.pipeline": run.pipeline,
            "loomc.source": run.source,
            "loomc.stop_reason": run.stop_reason,
            "loomc.calls": run.calls,
            "loomc.tokens": run.tokens,
            "loomc.receipt_hash": run.receipt_hash,
            "loomc.escalated": bool(result.get("escalated")),
        }
        _optional(attributes, "loomc.tier", run.tier)
        _optional(attributes, "loomc.key", run.key)  # the key's name from the policy, never it
        _optional(attributes, "loomc.credits", run.credits)
        _optional(attributes, "loomc.cost_usd", run.cost)
        _optional(attributes, "loomc.escalation_reason", result.get("escalation_reason"))
        span = self.tracer.start_span(
            f"invoke_workflow {model}",
            kind=trace.SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start_ns,
        )
        if run.stop_reason == "error":
            span.set_status(trace.Status(trace.StatusCode.ERROR, "the run stopped on an error"))
        context = trace.set_span_in_context(span)
        started = _step_starts(run)
        for step in steps:
            self._step(step, context, started.get(step["id"]), start_ns, run.tier)
        span.end(end_time=max(end_ns, start_ns))

    def _step(
        self,
        step: dict[str, Any],
        context: Any,
        started: float | None,
        run_start_ns: int,
        tier: str | None,
    ) -> None:
        from opentelemetry import trace

        model = str(step.get("model", ""))
        provider, _, name = model.partition("/")
        usage = step.get("usage", {})
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.system": provider,
            "gen_ai.request.model": name or model,
            "gen_ai.response.model": name or model,
            "gen_ai.usage.input_tokens": int(usage.get("prompt_tokens") or 0),
            "gen_ai.usage.output_tokens": int(usage.get("completion_tokens") or 0),
            "loomc.step": str(step.get("id")),
            "loomc.role": str(step.get("role")),
            "loomc.worker": str(step.get("worker")),
            "loomc.status": str(step.get("status")),
            "loomc.attempts": int(step.get("attempts") or 0),
            "loomc.tokens_estimated": bool(usage.get("estimated")),
        }
        _optional(attributes, "loomc.tier", tier)
        _optional(attributes, "loomc.credits", step.get("credits"))
        _optional(attributes, "loomc.cost_usd", step.get("cost"))
        _optional(attributes, "loomc.reason", step.get("reason"))
        start_ns = int(started * _NS) if started is not None else run_start_ns
        span = self.tracer.start_span(
            f"chat {name or model}",
            context=context,
            kind=trace.SpanKind.CLIENT,
            attributes=attributes,
            start_time=start_ns,
        )
        if step.get("status") == "failed":
            span.set_status(trace.Status(trace.StatusCode.ERROR, "the step failed"))
        span.end(end_time=start_ns + max(0, int(step.get("elapsed_ms") or 0)) * 1_000_000)

    def flush(self, timeout_ms: int = 3000) -> None:
        """Send what is queued, waiting at most ``timeout_ms`` (spans still queued after it are
        dropped when the process ends: telemetry never holds up a command)."""
        flush = getattr(self.provider, "force_flush", None)
        if flush is not None:
            flush(timeout_ms)

    def shutdown(self) -> None:
        stop = getattr(self.provider, "shutdown", None)
        if stop is not None:
            stop()


def _optional(attributes: dict[str, Any], name: str, value: Any) -> None:
    if value is not None:
        attributes[name] = str(value) if not isinstance(value, bool | int | float) else value


def _step_starts(run: StoredRun) -> dict[str, float]:
    """When each step was last started (a retry restarts it), from the run's events."""
    starts: dict[str, float] = {}
    for event in run.events:
        if event.get("kind") == "step-started" and event.get("step"):
            starts[str(event["step"])] = float(event.get("ts") or run.ts)
    return starts
