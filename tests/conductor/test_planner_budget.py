"""A served learned planner inside `loomc eval`'s budget, against a real OpenAI-compatible server
on 127.0.0.1 that counts every request: a dry run sends none and its worst case covers planning;
`--max-total-calls` below the planning calls stops planning without one request over the limit;
the receipt's totals include the planner's calls; a kill during planning is resumed without
asking the planner twice for a plan it answered; a server answering garbage or a huge body gets
the guard's fallback or a one-line error."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from asgi_thread import ThreadedASGI, read_body

import loomc
from loomc.cli.main import main
from loomc.conductor.served import MAX_PROPOSAL_CHARS

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "evals" / "mixed-routing.jsonl"
PROMPT_TOKENS, COMPLETION_TOKENS = 321, 12
PROPOSAL = '{"policy": "lean", "note": "served planner"}'  # the guard rejects it: risk runs


class CountingPlanner(ThreadedASGI):
    """`POST /v1/chat/completions`: counts each request; ``mode`` "ok" answers PROPOSAL with
    fixed usage, "garbage" a 200 that is not JSON, "huge" a proposal of ``huge`` characters;
    with ``answer_first`` set, requests after that many wait until ``holding`` is cleared."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.answered: list[str] = []
        self.mode = "ok"
        self.huge = 4_000_000
        self.answer_first: int | None = None
        self.holding = True

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        prompt = json.loads(body)["messages"][-1]["content"]
        self.prompts.append(prompt)
        if self.answer_first is not None and len(self.prompts) > self.answer_first:
            # in flight until the test lets go (the client is dead by then); the flag is set
            # from the test's thread, which an asyncio.Event of this loop cannot hear
            while self.holding:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            return await self._raw(send, 503, b'{"error": {"message": "gone"}}')
        self.answered.append(prompt)
        if self.mode == "garbage":
            return await self._raw(send, 200, b"<html>\x00\xff not json at all")
        content = PROPOSAL if self.mode == "ok" else "{" + "x" * self.huge
        reply = {
            "id": f"cmpl-{len(self.prompts)}",
            "object": "chat.completion",
            "model": "conductor",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content},
                 "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": PROMPT_TOKENS,
                "completion_tokens": COMPLETION_TOKENS,
                "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
            },
        }  # fmt: skip
        await self._raw(send, 200, json.dumps(reply).encode())

    async def _raw(self, send: Any, status: int, raw: bytes) -> None:
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": raw})


@pytest.fixture
def server() -> Iterator[CountingPlanner]:
    srv = CountingPlanner().start()
    yield srv
    srv.holding = False
    srv.stop()


def url(server: CountingPlanner) -> str:
    return f"http://127.0.0.1:{server.port}/v1"


def argv(server: CountingPlanner, out: Path, *extra: str, limit: int = 5) -> list[str]:
    return [
        "eval", "--project", str(ROOT), "--dataset", str(DATASET), "--limit", str(limit),
        "--strategies", "conductor:learned", "--endpoint", url(server),
        "--endpoint-model", "conductor", "--output", str(out), *extra,
    ]  # fmt: skip


def test_a_dry_run_sends_nothing_and_its_worst_case_covers_planning(
    server: CountingPlanner, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    assert main(argv(server, out, "--dry-run")) == 0
    captured = capsys.readouterr()
    assert server.prompts == []  # zero requests
    est = json.loads(captured.out)
    planner = est["planner"]
    assert planner["calls"] == 5 and planner["unpriced"]  # the policy does not know the endpoint
    assert planner["tokens"] >= 5 * 512  # every call at its prompt plus the decode cap
    row = est["per_strategy"]["conductor:learned"]
    assert row["planner_calls"] == 5 and row["bound"] is True
    assert est["total_calls"] == row["calls"] + 5
    assert "planner calls" in captured.err and "(unpriced: conductor at" in captured.err
    assert "+ 5 planner calls (at most: planned when the eval starts)" in captured.err
    # what the eval then spends stays within that worst case
    assert main(argv(server, out)) == 0
    assert len(server.prompts) == 5
    totals = json.loads(out.read_text())["totals"]
    assert totals["planner"] == {"calls": 5, "tokens": 5 * (PROMPT_TOKENS + COMPLETION_TOKENS),
                                 "cost": None}  # fmt: skip
    assert totals["calls"] == totals["workflow"]["calls"] + 5 <= est["total_calls"]
    assert totals["cost"] is None  # one part is unpriced: no sum that looks lower than it was


def test_the_worst_case_prices_a_planner_the_policy_knows(
    server: CountingPlanner, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = yaml.safe_load((ROOT / "policies" / "default.yaml").read_text())
    policy["providers"]["plannerhost"] = {"type": "openai-compatible", "base_url": url(server)}
    policy["pricing"]["plannerhost/conductor"] = {
        "input_per_million": 100,
        "output_per_million": 1000,
    }
    path = tmp_path / "priced.yaml"
    path.write_text(yaml.safe_dump(policy))
    out = tmp_path / "r.json"
    assert main([*argv(server, out, "--dry-run"), "--policy", str(path)]) == 0
    est = json.loads(capsys.readouterr().out)
    assert server.prompts == []
    planner = est["planner"]
    assert planner["unpriced"] == [] and Decimal(planner["cost"]) >= Decimal("0.0005") * 5 * 1
    # each call at its prompt estimate (input) plus 512 tokens of output at the policy's price
    money = Decimal(planner["cost"])
    assert money == (Decimal(planner["tokens"] - 5 * 512) * 100 + 5 * 512 * 1000) / 10**6
    assert Decimal(est["total_cost"]) >= money
    assert main([*argv(server, out), "--policy", str(path)]) == 0
    receipt = json.loads(out.read_text())
    paid = (Decimal(PROMPT_TOKENS) * 100 + COMPLETION_TOKENS * 1000) / 10**6 * 5
    assert Decimal(receipt["planners"]["conductor:learned"]["usage"]["cost"]) == paid
    assert Decimal(receipt["totals"]["planner"]["cost"]) == paid


def test_a_call_ceiling_below_the_planning_calls_stops_planning_at_the_limit(
    server: CountingPlanner, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    # the worst case passes the ceiling: refused before a single request
    assert main(argv(server, out, "--max-total-calls", "3")) == 1
    assert "exceeds --max-total-calls 3" in capsys.readouterr().err and server.prompts == []
    assert main(argv(server, out, "--max-total-calls", "3", "--run-until-budget")) == 0
    err = capsys.readouterr().err
    assert len(server.prompts) == 3  # not one request over the limit
    receipt = json.loads(out.read_text())
    assert receipt["totals"]["calls"] == 3 and receipt["totals"]["planner"]["calls"] == 3
    runs = receipt["runs"]
    assert len(runs) == 5 and all(r["status"] == "budget-stopped" for r in runs)
    unplanned = [r for r in runs if "conductor" not in r]
    assert len(unplanned) == 2
    assert all(r["result"]["stop_reason"] == "max-calls-reached" for r in unplanned)
    assert all("refused the planner's call" in r["error"] for r in unplanned)
    assert "5 run(s) stopped by the eval-wide budget" in err
    # a larger budget on resume plans the two left, and asks nothing twice
    assert main(argv(server, out, "--max-total-calls", "40", "--resume")) == 0
    assert len(server.prompts) == 5 and len(set(server.prompts)) == 5
    receipt = json.loads(out.read_text())
    assert all(r["status"] == "ok" for r in receipt["runs"])
    assert receipt["planners"]["conductor:learned"]["usage"]["calls"] == 5


def _journal(path: Path, kind: str) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if row.get("ledger") == kind:
            rows.append(row)
    return rows


def test_a_kill_during_planning_resumes_without_paying_a_plan_twice(
    server: CountingPlanner, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    journal = out.with_name(out.name + ".journal.jsonl")
    server.answer_first = 3  # three plans come back; the other two stay in flight
    with open(tmp_path / "child.log", "wb") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "loomc", *argv(server, out)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and child.poll() is None:
                if len(server.prompts) == 5 and len(_journal(journal, "plan")) == 3:
                    break
                time.sleep(0.02)
            assert child.poll() is None, (tmp_path / "child.log").read_text()
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait(timeout=30)
    server.holding = False
    assert not out.exists()
    assert len(_journal(journal, "reserve")) == 5 and len(_journal(journal, "settle")) == 3
    answered = list(server.answered)
    assert len(answered) == 3
    server.answer_first = None
    capsys.readouterr()
    assert main([*argv(server, out), "--resume"]) == 0
    err = capsys.readouterr().err
    assert len(server.prompts) == 5 + 2  # only the two cut off in flight are asked again
    assert sorted(server.answered) == sorted(set(server.prompts))  # each plan answered once
    assert not set(server.prompts[5:]) & set(answered)
    receipt = json.loads(out.read_text())
    assert receipt["planners"]["conductor:learned"]["decisions"] == 5
    assert receipt["planners"]["conductor:learned"]["usage"]["calls"] == 5
    assert "loomc eval:" not in err or "in flight" in err


@pytest.mark.parametrize("mode", ["garbage", "huge"])
def test_a_hostile_planner_server_gets_the_fallback_or_one_line(
    server: CountingPlanner, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    server.mode = mode
    out = tmp_path / "r.json"
    code = main(argv(server, out, limit=3))
    err = capsys.readouterr().err
    if mode == "garbage":  # no proposal at all: the planner is unavailable
        errors = [line for line in err.splitlines() if line.startswith("loomc eval:")]
        assert code == 1 and len(errors) == 1 and "Traceback" not in err, err
        assert "not JSON" in errors[0] and "--allow-planner-fallback" in errors[0]
        assert "\x00" not in err and "no case was run" in errors[0]
        assert main(argv(server, out, "--allow-planner-fallback", limit=3)) == 0
        summary = json.loads(out.read_text())["planners"]["conductor:learned"]
        assert summary["unavailable"] == 3 and summary["fallbacks"] == 3
        return
    # a 4 MB proposal: read, cut, rejected by the guard, the risk planner's plan runs
    assert code == 0, err
    receipt = json.loads(out.read_text())
    decisions = [r["conductor"] for r in receipt["runs"]]
    assert all(d["fallback"] == "risk" and d["reasons"] == ["invalid_json"] for d in decisions)
    assert all(len(d["proposal"]) == MAX_PROPOSAL_CHARS for d in decisions)
    journal = out.with_name(out.name + ".journal.jsonl")
    assert max(len(line) for line in journal.read_text().splitlines()) < 4 * MAX_PROPOSAL_CHARS


def test_the_api_asks_the_planner_only_when_the_eval_runs(server: CountingPlanner) -> None:
    options = {"endpoint": url(server), "endpoint_model": "conductor"}
    ev = loomc.prepare_eval(DATASET, "conductor:learned", project=ROOT, limit=2,
                            planner_options=options)  # fmt: skip
    assert ev.estimate.planner_calls == 2 and server.prompts == []
    receipt = ev.run(totals=loomc.Budget(calls=1))
    assert len(server.prompts) == 1
    assert receipt.totals["calls"] == 1
    assert sum(r.status == "budget-stopped" for r in receipt.runs) == 2


def test_run_cli_refuses_a_dead_planner_endpoint_unless_the_fallback_is_allowed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    base = ["run", "--project", str(ROOT), "--no-stream", "--planner", "learned",
            "--endpoint", dead, "--endpoint-model", "conductor", "Define a mutex."]  # fmt: skip
    assert main(base) == 1
    err = capsys.readouterr().err
    assert "unavailable" in err and "--allow-planner-fallback" in err and "Traceback" not in err
    assert main([*base, "--allow-planner-fallback"]) == 0
    assert main([*base[:-1], "--endpoint-key", "sk-raw-key", base[-1]]) == 2
    assert "env:NAME" in capsys.readouterr().err
