"""A served learned planner's own calls are on the receipt (a run's ``conductor.usage``, an eval's
``planners[...].usage``), and a resumed eval decides the cells it already planned from the
journaled proposals instead of calling the planner again: a real OpenAI-compatible server on
127.0.0.1 counts every request and reports fixed token usage."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgi_thread import ThreadedASGI, read_body

import loomc
from loomc.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "evals" / "mixed-routing.jsonl"
HIGH = "Review this payment webhook handler for double-spend races and missing auth checks."
PROMPT_TOKENS, COMPLETION_TOKENS = 321, 12
# a proposal the guard rejects (missing keys): the decision falls back to the risk planner
# and keeps the raw text, which is what a resume replays
PROPOSAL = '{"policy": "lean", "note": "served planner"}'


class PlannerServer(ThreadedASGI):
    """`POST /v1/chat/completions` answers PROPOSAL with fixed usage and counts the requests."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        if scope["path"] != "/v1/chat/completions":
            await self._reply(send, 404, {"error": {"message": "not found"}})
            return
        self.prompts.append(json.loads(body)["messages"][-1]["content"])
        await self._reply(
            send,
            200,
            {
                "id": f"cmpl-{len(self.prompts)}",
                "object": "chat.completion",
                "model": "conductor",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": PROPOSAL},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": PROMPT_TOKENS,
                    "completion_tokens": COMPLETION_TOKENS,
                    "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
                },
            },
        )

    async def _reply(self, send: Any, status: int, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": raw})


@pytest.fixture(scope="module")
def server() -> Iterator[PlannerServer]:
    srv = PlannerServer().start()
    yield srv
    srv.stop()


def url(server: PlannerServer) -> str:
    return f"http://127.0.0.1:{server.port}/v1"


def options(server: PlannerServer) -> dict[str, Any]:
    return {"endpoint": url(server), "endpoint_model": "conductor"}


def usage(server: PlannerServer, calls: int = 1) -> dict[str, Any]:
    return {
        "calls": calls,
        "prompt_tokens": PROMPT_TOKENS * calls,
        "completion_tokens": COMPLETION_TOKENS * calls,
        "tokens": (PROMPT_TOKENS + COMPLETION_TOKENS) * calls,
        "credits": "0",  # the policy knows nothing of this endpoint: no credits, no price
        "cost": None,
        "model": "conductor",
        "endpoint": url(server),
    }


def test_a_served_planners_call_is_on_the_run_receipt(server: PlannerServer) -> None:
    before = len(server.prompts)
    result = loomc.run(HIGH, project=ROOT, planner="learned", planner_options=options(server))
    assert len(server.prompts) == before + 1
    assert result.conductor is not None
    assert result.conductor["proposal"] == PROPOSAL and result.conductor["fallback"] == "risk"
    assert result.conductor["usage"] == usage(server)


def test_run_cli_says_what_the_planner_cost(
    server: PlannerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--project", str(ROOT), "--no-stream", "--planner", "learned",
            "--endpoint", url(server), "--endpoint-model", "conductor", HIGH]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    tokens = PROMPT_TOKENS + COMPLETION_TOKENS
    assert "loomc: planner learned: proposal rejected (" in err
    assert f"(planner: 1 call(s), {tokens} tokens); running strict" in err


def test_an_eval_receipt_sums_the_planners_calls(server: PlannerServer) -> None:
    before = len(server.prompts)
    ev = loomc.prepare_eval(
        DATASET, "conductor:learned,lean", project=ROOT, limit=3, iterations=2,
        planner_options=options(server),
    )  # fmt: skip
    assert len(server.prompts) == before  # the planner is asked once the eval starts
    receipt = ev.run()
    assert len(server.prompts) == before + 3
    summary = receipt.planners["conductor:learned"]
    # three cases planned once each, though each ran twice
    assert summary["decisions"] == 6
    expected = usage(server, 3)
    assert summary["usage"] == {k: expected[k] for k in ("calls", "prompt_tokens",
                                                            "completion_tokens", "tokens",
                                                            "credits", "cost")}  # fmt: skip
    assert all(
        r.conductor and r.conductor["usage"] == usage(server)
        for r in receipt.runs
        if r.strategy == "conductor:learned"
    )


def _plans(ev: Any) -> dict[Any, Any]:
    return {k: (d["proposal"], d["plan"], d["usage"]) for k, d in ev.decisions.items()}


def test_a_resumed_eval_does_not_ask_the_planner_again(
    server: PlannerServer, tmp_path: Path
) -> None:
    journal = tmp_path / "eval.journal.jsonl"
    first = loomc.prepare_eval(
        DATASET, "conductor:learned", project=ROOT, limit=4, planner_options=options(server)
    )
    before = len(server.prompts)
    done = first.run(journal=journal)
    asked = len(server.prompts)
    assert asked == before + 4
    assert len(done.runs) == 4
    # a kill after the first cell finished: the plan lines and one finished cell survive
    lines = journal.read_text().splitlines()
    plans = [line for line in lines if '"ledger":"plan"' in line]
    assert len(plans) == 4
    finished = [line for line in lines if line.startswith('{"case_id"')]
    journal.write_text("\n".join([*plans, finished[0]]) + "\n")

    again = loomc.prepare_eval(
        DATASET,
        "conductor:learned",
        project=ROOT,
        limit=4,
        planner_options=options(server),
        resume_journal=journal,
    )
    assert len(server.prompts) == asked  # no planner call: every plan came from the journal
    assert again.replayed == set(first.decisions)
    assert _plans(again) == _plans(first)
    resumed = again.run(journal=journal, resume=True)
    assert len(server.prompts) == asked
    assert sorted(r.case_id for r in resumed.runs) == sorted(r.case_id for r in done.runs)
    assert resumed.planners == done.planners  # the planner's usage is reported, paid once
    # the journal holds each plan once: the resume wrote no second line for them
    lines = journal.read_text().splitlines()
    assert sum('"ledger":"plan"' in line for line in lines) == 4


def test_an_edited_case_or_other_planner_options_is_planned_again(
    server: PlannerServer, tmp_path: Path
) -> None:
    journal = tmp_path / "eval.journal.jsonl"
    rows = DATASET.read_text().splitlines()[:3]
    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(rows) + "\n")
    first = loomc.prepare_eval(data, "conductor:learned", project=ROOT,
                               planner_options=options(server))  # fmt: skip
    first.run(journal=journal)
    edited = json.loads(rows[1])
    edited["prompt"] += " Also check the retry path."
    data.write_text("\n".join([rows[0], json.dumps(edited), rows[2]]) + "\n")
    asked = len(server.prompts)
    again = loomc.prepare_eval(data, "conductor:learned", project=ROOT,
                               planner_options=options(server), resume_journal=journal)  # fmt: skip
    assert len(server.prompts) == asked  # nothing is asked before the eval starts
    assert again.replayed == set(first.decisions) - {(edited["id"], "conductor:learned")}
    other = {**options(server), "max_new_tokens": 64}
    third = loomc.prepare_eval(data, "conductor:learned", project=ROOT, planner_options=other,
                               resume_journal=journal)  # fmt: skip
    assert not third.replayed  # a different decode cap: every case again
    third.run(journal=tmp_path / "other.journal.jsonl")
    assert len(server.prompts) == asked + 3
    again.run(journal=journal, resume=True)
    assert len(server.prompts) == asked + 4  # only the edited case


def test_eval_cli_resume_pays_no_planner_call_twice(
    server: PlannerServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    argv = [
        "eval", "--project", str(ROOT), "--dataset", str(DATASET), "--limit", "3",
        "--strategies", "conductor:learned", "--endpoint", url(server),
        "--endpoint-model", "conductor", "--output", str(out),
    ]  # fmt: skip
    assert main(argv) == 0
    tokens = 3 * (PROMPT_TOKENS + COMPLETION_TOKENS)
    assert f"planner calls 3, {tokens} tokens" in capsys.readouterr().err
    asked = len(server.prompts)
    first = json.loads(out.read_text())
    assert main([*argv, "--resume"]) == 0
    capsys.readouterr()
    assert len(server.prompts) == asked
    again = json.loads(out.read_text())
    assert again["planners"] == first["planners"]
    assert again["planners"]["conductor:learned"]["usage"]["calls"] == 3
