"""OpenTelemetry export (GenAI semantic conventions): one ``invoke_workflow`` span per run with
one ``chat`` child per model step, checked with the SDK's in-memory exporter and end to end with
a real OTLP/HTTP receiver on 127.0.0.1 fed by `loomc serve --otel` and `loomc run --otel`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from otlp_receiver import OtlpReceiver
from servekit import KEY_VAR, ROOT, SECRET, InProcessServer, ServeProcess, write_policy

import loomc
from loomc.serve import create_app
from loomc.store import open_store
from loomc.store.otel import OtelExporter

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

GENAI = (
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.system",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
)


def memory_exporter() -> tuple[OtelExporter, InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    return OtelExporter(provider), spans


def split(spans: list[Any]) -> tuple[Any, list[Any]]:
    runs = [s for s in spans if s.name.startswith("invoke_workflow ")]
    assert len(runs) == 1, [s.name for s in spans]
    return runs[0], [s for s in spans if s is not runs[0]]


def test_a_run_is_one_workflow_span_with_a_chat_span_per_model_step(tmp_path: Path) -> None:
    telemetry, exported = memory_exporter()
    result = loomc.run(
        "Explain DNS briefly.", project=ROOT, pipeline="fixed", telemetry=telemetry, stream=False
    )
    spans: list[ReadableSpan] = list(exported.get_finished_spans())
    run, steps = split(spans)
    called = [s for s in result.steps if s.attempts > 0]
    assert len(steps) == len(called) >= 2
    assert run.parent is None and run.name == "invoke_workflow fixed"
    attrs = dict(run.attributes or {})
    assert attrs["gen_ai.operation.name"] == "invoke_workflow"
    assert attrs["loomc.stop_reason"] == str(result.stop_reason)
    assert attrs["loomc.calls"] == result.calls
    assert attrs["loomc.receipt_hash"] == result.receipt_hash
    assert attrs["loomc.source"] == "run"
    assert attrs["gen_ai.usage.input_tokens"] == sum(s.usage.prompt_tokens for s in called)
    assert attrs["gen_ai.usage.output_tokens"] == sum(s.usage.completion_tokens for s in called)
    assert run.context is not None
    by_step = {dict(s.attributes or {})["loomc.step"]: s for s in steps}
    assert set(by_step) == {s.id for s in called}
    for record in called:
        span = by_step[record.id]
        a = dict(span.attributes or {})
        assert span.parent is not None and span.parent.span_id == run.context.span_id
        assert span.context is not None and span.context.trace_id == run.context.trace_id
        provider, _, model = record.model.partition("/")
        assert span.name == f"chat {model}"
        assert all(k in a for k in GENAI)
        assert (a["gen_ai.operation.name"], a["gen_ai.provider.name"]) == ("chat", provider)
        assert a["gen_ai.request.model"] == a["gen_ai.response.model"] == model
        assert a["gen_ai.usage.input_tokens"] == record.usage.prompt_tokens
        assert a["gen_ai.usage.output_tokens"] == record.usage.completion_tokens
        assert a["loomc.worker"] == record.worker and a["loomc.role"] == record.role
        assert span.start_time is not None and run.start_time is not None
        assert span.start_time >= run.start_time
    # no prompt or answer text is exported
    texts = [str(v) for s in spans for v in (s.attributes or {}).values()]
    assert not any("DNS" in t for t in texts)
    assert not any(result.answer[:20] in t for t in texts if result.answer)


@pytest.fixture
def keyed_policy(tmp_path: Path) -> Path:
    return write_policy(
        tmp_path / "policy.yaml", {"keys": [{"name": "ci", "key": f"env:{KEY_VAR}"}]}
    )


def test_serve_exports_each_run_with_the_key_name_never_the_key(
    keyed_policy: Path, tmp_path: Path
) -> None:
    telemetry, exported = memory_exporter()
    project = loomc.Project.load(ROOT, keyed_policy)
    app = create_app(
        project, open_store(tmp_path / "s.db"), env={KEY_VAR: SECRET}, telemetry=telemetry
    )
    server = InProcessServer(app)
    try:
        body = {"model": "general@lean", "messages": [{"role": "user", "content": "hi there"}]}
        got = httpx.post(
            f"{server.url}/v1/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {SECRET}"},
            timeout=30,
        )
        assert got.status_code == 200, got.text
    finally:
        server.stop()
    run, steps = split(list(exported.get_finished_spans()))
    attrs = dict(run.attributes or {})
    assert attrs["loomc.key"] == "ci" and attrs["loomc.source"] == "serve"
    assert attrs["loomc.tier"] == "lean" and attrs["loomc.run_id"] == got.json()["loomc"]["run_id"]
    assert steps
    for span in [run, *steps]:
        for value in (span.attributes or {}).values():
            assert SECRET not in str(value) and SECRET[:12] not in str(value)


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    got = OtlpReceiver().start()
    yield got
    got.stop()


def wait_for(
    receiver: OtlpReceiver, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 20
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = list(receiver.spans)
        if done(got):
            return got
        time.sleep(0.05)
    raise AssertionError(f"the spans did not arrive: {receiver.spans}")


def check_tree(spans: list[dict[str, Any]]) -> None:
    """Every run span's children are chat spans in its trace; every chat span has a parent."""
    runs = {s["span_id"]: s for s in spans if s["name"].startswith("invoke_workflow ")}
    assert runs
    for span in spans:
        if span["span_id"] in runs:
            assert span["parent"] is None and span["kind"] == 1  # INTERNAL
            continue
        parent = runs[span["parent"]]
        assert span["trace_id"] == parent["trace_id"] and span["kind"] == 3  # CLIENT
        assert span["name"].startswith("chat ")
        assert all(k in span["attributes"] for k in GENAI)
        assert span["scope"] == "loomc"


def test_serve_otel_reaches_a_real_otlp_receiver_without_the_key(
    receiver: OtlpReceiver, keyed_policy: Path, tmp_path: Path
) -> None:
    env = {
        KEY_VAR: SECRET,
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
    }
    server = ServeProcess(keyed_policy, tmp_path / "store.db", env=env, args=("--otel",))
    try:
        headers = {"authorization": f"Bearer {SECRET}"}
        body = {"model": "general@lean", "messages": [{"role": "user", "content": "hi there"}]}
        plain = httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=headers)
        assert plain.status_code == 200, plain.text
        streamed = httpx.post(
            f"{server.url}/v1/chat/completions", json={**body, "stream": True}, headers=headers
        )
        assert streamed.status_code == 200 and "[DONE]" in streamed.text
        # a run span ends after its steps' spans, so they travel first or together
        spans = wait_for(receiver, lambda got: sum(s["parent"] is None for s in got) >= 2)
    finally:
        server.stop()
    check_tree(spans)
    runs = [s for s in spans if s["name"] == "invoke_workflow general@lean"]
    assert len(runs) == 2
    assert {r["attributes"]["loomc.key"] for r in runs} == {"ci"}
    assert plain.json()["loomc"]["run_id"] in {r["attributes"]["loomc.run_id"] for r in runs}
    for r in runs:
        assert r["attributes"]["gen_ai.operation.name"] == "invoke_workflow"
        assert r["attributes"]["loomc.tier"] == "lean"
    raw = b"".join(receiver.bodies)
    assert SECRET.encode() not in raw and SECRET[:12].encode() not in raw


def test_cli_run_otel_flushes_to_the_receiver_before_exiting(
    receiver: OtlpReceiver, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'research'}",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
    }
    done = subprocess.run(
        [sys.executable, "-m", "loomc", "run", "Explain DNS briefly.", "--pipeline", "fixed",
         "--json", "--no-store", "--project", str(ROOT)],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    spans = list(receiver.spans)  # already there: the run flushed before it exited
    check_tree(spans)
    assert [s["name"] for s in spans if s["parent"] is None] == ["invoke_workflow fixed"]
    assert len(spans) >= 3
