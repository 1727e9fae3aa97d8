"""The official `openai` client against a real `loomc serve` process: sync and async, streaming
and not; usage against the stored receipt; models against `loomc.check`; errors and keys."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from servekit import ROOT, SECRET, ServeProcess, eventually

import loomc
from loomc.store import open_store

PROMPT = "Summarise why idempotent refunds matter in two sentences."


_OPEN: list[openai.OpenAI] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def client(server: ServeProcess, key: str = SECRET) -> openai.OpenAI:
    made = openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0)
    _OPEN.append(made)
    return made


def stored(server: ServeProcess, ext: dict[str, Any]) -> loomc.RunResult:
    """The run the server stored for a reply, by the run id in its ``loomc`` object."""
    store = open_store(server.store)
    try:  # written behind the response: within milliseconds
        run = eventually(lambda: store.run(ext["run_id"]), lambda r: r is not None)
    finally:
        store.close()
    assert run is not None and run.receipt_hash == ext["receipt_hash"]
    assert run.events and run.events[-1]["kind"] == "run-finished"
    return loomc.RunResult.model_validate({k: v for k, v in run.result.items() if k != "request"})


def runs_total(metrics: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("loomc_runs_total{")
    )


def test_models_lists_every_checked_pipeline_tier_and_auto(keyed_server: ServeProcess) -> None:
    listed = [m.id for m in client(keyed_server).models.list()]
    checked = loomc.check(ROOT, policy=ROOT / "policies" / "default.yaml")
    expected = {p.name if p.tier is None else f"{p.name}@{p.tier}" for _, p in checked.pipelines}
    assert set(listed) == expected | {"auto"}
    assert {"general@strict", "code-review@balanced", "baseline", "fixed"} <= set(listed)


def test_non_streaming_usage_is_the_runs_receipt(keyed_server: ServeProcess) -> None:
    reply = client(keyed_server).chat.completions.create(
        model="general@strict", messages=[{"role": "user", "content": PROMPT}], user="u-1"
    )
    ext = reply.model_extra["loomc"]  # type: ignore[index]
    run = stored(keyed_server, ext)
    assert reply.choices[0].message.content == run.answer
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None
    assert reply.usage.total_tokens == run.tokens
    assert reply.usage.prompt_tokens == sum(s.usage.prompt_tokens for s in run.steps)
    assert reply.usage.completion_tokens == sum(s.usage.completion_tokens for s in run.steps)
    assert ext["calls"] == run.calls == 3 and ext["tier"] == "strict"
    assert ext["escalated"] is True and ext["escalation_reason"] == run.escalation_reason
    assert ext["stop_reason"] == str(run.stop_reason)


def test_streaming_deltas_are_the_answer_and_usage_comes_last(keyed_server: ServeProcess) -> None:
    stream = client(keyed_server).chat.completions.create(
        model="general@strict",
        messages=[{"role": "user", "content": PROMPT}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 3  # streamed
    finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finish] == ["stop"]
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert all(c.usage is None for c in chunks[:-1])
    run = stored(keyed_server, last.model_extra["loomc"])  # type: ignore[index]
    assert text == run.answer
    assert last.usage.total_tokens == run.tokens
    # the answering step is the finalizer: the draft it replaced was never streamed
    assert run.steps[0].output is not None and run.steps[0].output not in text


def test_async_client_streaming_and_not(keyed_server: ServeProcess) -> None:
    async def main() -> tuple[str, str, int]:
        aclient = openai.AsyncOpenAI(
            base_url=keyed_server.url + "/v1", api_key=SECRET, max_retries=0
        )
        whole = await aclient.chat.completions.create(
            model="general@lean", messages=[{"role": "user", "content": PROMPT}]
        )
        parts = []
        async for c in await aclient.chat.completions.create(
            model="general@lean", messages=[{"role": "user", "content": PROMPT}], stream=True
        ):
            parts.extend(ch.delta.content or "" for ch in c.choices)
        await aclient.close()
        assert whole.usage is not None
        return whole.choices[0].message.content or "", "".join(parts), whole.usage.total_tokens

    whole, streamed, tokens = asyncio.run(main())
    assert whole == streamed and whole  # the mock answers deterministically
    assert tokens > 0


def test_auto_picks_the_tier_from_the_risk_profile(keyed_server: ServeProcess) -> None:
    c = client(keyed_server)
    low = c.chat.completions.create(model="auto", messages=[{"role": "user", "content": "Hi"}])
    risky = c.chat.completions.create(
        model="auto",
        messages=[
            {
                "role": "user",
                "content": "Audit this payment refund code for a security vulnerability and data loss risk.",
            }
        ],
    )
    assert low.model_extra["loomc"]["tier"] == "lean"  # type: ignore[index]
    assert risky.model_extra["loomc"]["tier"] == "strict"  # type: ignore[index]


def test_errors_have_openai_shape_and_status(keyed_server: ServeProcess) -> None:
    c = client(keyed_server)
    with pytest.raises(openai.NotFoundError) as missing:
        c.chat.completions.create(model="nope@lean", messages=[{"role": "user", "content": "x"}])
    assert missing.value.body["code"] == "model_not_found"  # type: ignore[index]
    assert missing.value.body["param"] == "model"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as bad:
        c.chat.completions.create(model="general@lean", messages=[])
    assert bad.value.body["param"] == "messages"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(
            model="general@lean", n=2, messages=[{"role": "user", "content": "x"}]
        )
    headers = {"authorization": f"Bearer {SECRET}"}
    raw = httpx.post(
        keyed_server.url + "/v1/chat/completions", content=b"{not json", headers=headers
    )
    assert raw.status_code == 400 and set(raw.json()["error"]) == {
        "message",
        "type",
        "param",
        "code",
    }
    huge = {"model": "general@lean", "messages": [{"role": "user", "content": "x" * 30_000}]}
    raw = httpx.post(keyed_server.url + "/v1/chat/completions", json=huge, headers=headers)
    assert raw.status_code == 413 and raw.json()["error"]["code"] == "request_too_large"
    raw = httpx.get(keyed_server.url + "/v1/nothing-here", headers=headers)
    assert raw.status_code == 404 and "error" in raw.json()
    assert "Traceback" not in keyed_server.log.read_text()


def test_request_ceilings_are_proven_before_any_call(keyed_server: ServeProcess) -> None:
    c = client(keyed_server)
    fits = c.chat.completions.create(
        model="general@strict",
        messages=[{"role": "user", "content": PROMPT}],
        extra_body={"loomc": {"max_calls": 3, "max_latency_ms": 120_000}},
    )
    assert fits.model_extra["loomc"]["calls"] == 3  # type: ignore[index]
    before = httpx.get(keyed_server.url + "/metrics").text
    with pytest.raises(openai.BadRequestError) as refused:
        c.chat.completions.create(
            model="general@strict",
            messages=[{"role": "user", "content": PROMPT}],
            extra_body={"loomc": {"max_calls": 2}},
        )
    assert refused.value.body["param"] == "loomc"  # type: ignore[index]
    assert "worst-case calls 3 exceeds the ceiling 2" in refused.value.message
    assert runs_total(httpx.get(keyed_server.url + "/metrics").text) == runs_total(before)
    with pytest.raises(openai.BadRequestError) as bad:
        c.chat.completions.create(
            model="general@lean",
            messages=[{"role": "user", "content": PROMPT}],
            extra_body={"loomc": {"max_calls": -1}},
        )
    assert "max_calls" in bad.value.body["param"]  # type: ignore[index]


def test_wrong_key_is_401_and_never_echoed(keyed_server: ServeProcess) -> None:
    wrong = "sk-wrong-key-that-must-not-leak-42"
    with pytest.raises(openai.AuthenticationError) as denied:
        client(keyed_server, wrong).models.list()
    assert wrong not in json.dumps(denied.value.body) and SECRET not in str(denied.value)
    raw = httpx.post(keyed_server.url + "/v1/chat/completions", json={})
    assert raw.status_code == 401 and raw.json()["error"]["code"] == "invalid_api_key"
    client(keyed_server).models.list()  # the right key from the environment works


def test_health_metrics_and_no_key_anywhere(keyed_server: ServeProcess) -> None:
    assert httpx.get(keyed_server.url + "/healthz").json()["status"] == "ok"
    client(keyed_server).chat.completions.create(
        model="general@balanced", messages=[{"role": "user", "content": PROMPT}]
    )
    metrics = httpx.get(keyed_server.url + "/metrics").text
    assert 'loomc_calls_total{pipeline="general",tier="balanced"}' in metrics
    assert (
        'loomc_run_latency_seconds_bucket{pipeline="general",tier="balanced",le="+Inf"}' in metrics
    )
    store_bytes = keyed_server.store.read_bytes()
    wal = Path(str(keyed_server.store) + "-wal")
    for text in (metrics, keyed_server.log.read_text()):
        assert SECRET not in text
    assert SECRET.encode() not in store_bytes
    assert not wal.exists() or SECRET.encode() not in wal.read_bytes()


def test_readme_serve_example_runs_as_written(
    keyed_server: ServeProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## `loomc serve`", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    code = code.replace('"http://127.0.0.1:8000/v1"', repr(keyed_server.url + "/v1"))
    code = code.replace('api_key="..."', f"api_key={SECRET!r}")
    exec(compile(code, "README.md", "exec"), {})
    answer_tail, tokens, receipt = capsys.readouterr().out.rsplit(maxsplit=2)
    assert answer_tail and int(tokens) > 0 and len(receipt) == 16
