"""User-written regular expressions are matched with a time bound (loomc/userregex.py).

A ``matches`` guard in a .loom file, a ``regex`` check in an eval dataset and a mock rule's
pattern in a policy all run on text nobody controls. With ``re``, ``(a+)+$`` or ``(a|aa)+$`` on
40 ``a`` and a ``b`` backtracks for hours; each test here runs one through the CLI, with the
deterministic mock provider, under a 30 s alarm, and asserts the one-line outcome. ``(a+)+$`` is
one ``regex`` finds quickly (no match); ``(a|aa)+$`` is one it does not, so it runs into the time
bound and each feature says so in its own way.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from deadline import deadline
from hypothesis import given, settings
from hypothesis import strategies as st
from lagprobe import worst_lag

from loomc import userregex
from loomc.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "a" * 40 + "b"
EXPONENTIAL = "(a+)+$"  # exponential in `re`; `regex` answers it at once
SLOW = "(a|aa)+$"  # exponential in `re` and in `regex`: only the time bound stops it


def _project(tmp: Path, *, guard: str = "", rules: str = "[]") -> Path:
    """A project: the default policy with ``rules`` for its mock, and pipeline ``p`` whose step
    ``checked`` has guard ``input matches <guard>`` (no guard when empty)."""
    (tmp / "policies").mkdir()
    policy = (ROOT / "policies" / "default.yaml").read_text()
    assert "      rules: []" in policy
    (tmp / "policies" / "default.yaml").write_text(policy.replace("rules: []", f"rules: {rules}"))
    (tmp / "pipelines").mkdir()
    when = f"when input matches {json.dumps(guard)} " if guard else ""
    (tmp / "pipelines" / "p.loom").write_text(
        "pipeline p {\n"
        '  instruction "Answer."\n'
        "  budget { calls <= 2 }\n"
        '  step first : drafter(drafter) { task "Answer." max_tokens 50 }\n'
        f'  step checked : finalizer(finalizer) sees first {when}{{ task "Check." max_tokens 50 }}\n'
        "  answer checked | first\n"
        "}\n"
    )
    return tmp


def _run(capsys: pytest.CaptureFixture[str], project: Path, prompt: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["run", prompt, "--project", str(project), "--pipeline", "p", "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, json.loads(out)


def _step(doc: dict, name: str) -> dict:  # type: ignore[type-arg]
    return next(s for s in doc["steps"] if s["id"].endswith(name))


# --- `matches` guards ---------------------------------------------------------------------------


def test_a_guard_regex_answers_at_once_is_false(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, guard=EXPONENTIAL)
    with deadline(30, "guard (a+)+$"):
        code, doc = _run(capsys, project, HOSTILE)
    checked = _step(doc, "checked")
    assert code == 0 and checked["status"] == "skipped" and checked["reason"] == "guard is false"


def test_a_guard_past_its_time_bound_stops_the_run_before_its_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Neither answer of an undecided guard is safe (false would skip a verification step on the
    very input crafted against its pattern): the run stops before the step, says why, keeps
    what completed and exits 1."""
    project = _project(tmp_path, guard=SLOW)
    started = time.monotonic()
    with deadline(30, "guard (a|aa)+$"):
        code, doc = _run(capsys, project, HOSTILE)
    assert time.monotonic() - started < 20
    reason = 'guard undecided: input matches "(a|aa)+$": pattern took longer than 1 s'
    checked = _step(doc, "checked")
    assert checked["status"] == "skipped" and checked["reason"] == reason  # not sent
    assert doc["stop_reason"] == "guard-undecided" and doc["error"] == f"{checked['id']}: {reason}"
    assert _step(doc, "first")["status"] == "ok" and code == 1
    assert doc["answer"] == _step(doc, "first")["output"]  # completed work is kept


def test_a_guard_on_ordinary_input_still_matches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, guard=SLOW)
    code, doc = _run(capsys, project, "AAAA")  # matches, case-insensitively as before
    assert code == 0 and _step(doc, "checked")["status"] == "ok"


# --- `regex` checks in eval datasets ------------------------------------------------------------


def _eval(capsys: pytest.CaptureFixture[str], tmp: Path, pattern: str) -> tuple[int, list[dict]]:  # type: ignore[type-arg]
    """Eval one case whose answer (a scripted mock answer) is ``HOSTILE``, with a ``regex``
    check of ``pattern`` and a ``contains`` check."""
    rules = json.dumps([{"response": HOSTILE}])
    (tmp / "project").mkdir()
    project = _project(tmp / "project", rules=rules)
    data = tmp / "d.jsonl"
    checks = [{"type": "regex", "value": pattern}, {"type": "contains", "value": "aaab"}]
    data.write_text(json.dumps({"id": "c1", "prompt": "Hi.", "checks": checks}) + "\n")
    out = tmp / "receipt.json"
    code = main(
        [
            "eval",
            "--project",
            str(project),
            "--dataset",
            str(data),
            "--strategies",
            "p",
            "--output",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert code == 0, captured.err
    cases = json.loads(out.read_text())["runs"]
    return code, cases


def test_an_eval_regex_check_regex_answers_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with deadline(30, "eval check (a+)+$"):
        code, cases = _eval(capsys, tmp_path, EXPONENTIAL)
    (case,) = cases
    assert case["status"] == "ok" and code == 0
    assert case["checks"] == [
        {"type": "regex", "passed": False, "detail": "regex '(a+)+$'"},
        {"type": "contains", "passed": True, "detail": "contains 'aaab'"},
    ]


def test_an_eval_regex_check_past_its_time_bound_fails_and_the_eval_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with deadline(30, "eval check (a|aa)+$"):
        code, cases = _eval(capsys, tmp_path, SLOW)
    (case,) = cases
    assert case["status"] == "ok" and code == 0  # the eval went on: the next check ran
    assert case["checks"] == [
        {
            "type": "regex",
            "passed": False,
            "detail": "regex '(a|aa)+$': pattern took longer than 1 s",
        },
        {"type": "contains", "passed": True, "detail": "contains 'aaab'"},
    ]


# --- mock rule patterns in policies -------------------------------------------------------------


def test_a_mock_rule_regex_answers_at_once_does_not_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = json.dumps([{"pattern": EXPONENTIAL, "response": "scripted"}])
    project = _project(tmp_path, rules=rules)
    with deadline(30, "mock rule (a+)+$"):
        code, doc = _run(capsys, project, HOSTILE)
    assert code == 0 and _step(doc, "first")["status"] == "ok"
    assert _step(doc, "first")["output"] != "scripted"  # no match: the default answer


def test_a_mock_rule_past_its_time_bound_fails_the_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = json.dumps([{"pattern": SLOW, "response": "scripted"}])
    project = _project(tmp_path, rules=rules)
    with deadline(30, "mock rule (a|aa)+$"):
        code, doc = _run(capsys, project, HOSTILE)
    first = _step(doc, "first")
    assert first["status"] == "failed"
    assert first["reason"] == (
        "ProviderConfigError: mock rule 1 (pattern '(a|aa)+$'): pattern took longer than 1 s"
    )
    assert code == 1


# --- the wrapper keeps `re`'s answers for ordinary patterns -------------------------------------

_ATOMS = st.sampled_from(["a", "b", "c", ".", "\\d", "\\w", "\\s", "[ab]", "[^a]", "A", "-"])
_QUANT = st.sampled_from(["", "", "*", "+", "?", "{1,2}", "*?", "+?"])


@st.composite
def _patterns(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 2 and draw(st.integers(0, 4)) == 0:
            inner = draw(_patterns(depth + 1))
            alt = draw(_patterns(depth + 1)) if draw(st.booleans()) else None
            atom = f"({inner}|{alt})" if alt is not None else f"(?:{inner})"
        else:
            atom = draw(_ATOMS)
        parts.append(atom + draw(_QUANT))
    anchor = draw(st.sampled_from(["", "^", "$"]))
    return anchor + "".join(parts) if anchor == "^" else "".join(parts) + anchor


@settings(max_examples=300, deadline=None)
@given(_patterns(), st.text(alphabet="abcABC1 -\n", max_size=12), st.booleans())
def test_the_wrapper_finds_what_re_finds(pattern: str, text: str, ignorecase: bool) -> None:
    expected = re.search(pattern, text, re.IGNORECASE if ignorecase else 0)
    got = userregex.compile(pattern, ignorecase=ignorecase).search(text)
    assert (got is None) == (expected is None)
    if expected is not None:
        assert got.span() == expected.span() and got.groups() == expected.groups()
        full = re.fullmatch(pattern, text, re.IGNORECASE if ignorecase else 0)
        anchored = userregex.compile(rf"\A(?:{pattern})\Z", ignorecase=ignorecase)
        wrapped = anchored.search(text)
        assert (wrapped is None) == (full is None)


def test_the_bound_is_per_budget_and_raises_a_typed_error() -> None:
    pattern = userregex.compile(SLOW)
    started = time.monotonic()
    with pytest.raises(userregex.PatternTimeout) as caught:
        pattern.search(HOSTILE, userregex.MatchBudget(0.2))
    assert time.monotonic() - started < 5
    assert caught.value.pattern == SLOW and str(caught.value) == "pattern took longer than 0.2 s"
    assert not caught.value.shared
    assert pattern.search("aaaa") is not None  # no budget given: the call has its own 1 s


def test_patterns_sharing_a_budget_share_its_time() -> None:
    """A second match charged to a spent budget is refused before it runs: k patterns of one
    decision cost the bound once, not k times."""
    fast = userregex.compile("a+")
    budget = userregex.MatchBudget(0.2)
    assert fast.search("aaaa", budget) is not None  # starts the budget's clock
    time.sleep(0.25)
    with pytest.raises(userregex.PatternTimeout) as caught:
        fast.search("aaaa", budget)
    assert caught.value.shared and str(caught.value) == "patterns took longer than 0.2 s together"
    assert fast.search("aaaa", userregex.MatchBudget(0.2)) is not None  # a fresh budget matches


def test_a_guard_of_two_patterns_is_undecided_within_one_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``input matches "zzz" or input matches SLOW``: the first pattern answers at once, the
    second runs into the time the two share, and the run stops after ~1 s, not 1 s a pattern."""
    project = _project(tmp_path, guard=SLOW)
    loom = project / "pipelines" / "p.loom"
    guard = f"when input matches {json.dumps(SLOW)} "
    loom.write_text(
        loom.read_text().replace(
            guard,
            f'when input matches "zzz" or input matches {json.dumps(SLOW)} ',
        )
    )
    started = time.monotonic()
    with deadline(30, "guard of two patterns"):
        code, doc = _run(capsys, project, HOSTILE)
    checked = _step(doc, "checked")
    assert code == 1 and doc["stop_reason"] == "guard-undecided"
    assert checked["reason"].endswith(
        f"input matches {json.dumps(SLOW)}: patterns took longer than 1 s together"
    )
    assert time.monotonic() - started < 20


def test_an_undecided_guard_does_not_hold_the_event_loop(tmp_path: Path) -> None:
    """A guard with ``matches`` runs in a worker thread, and the match releases the GIL: a lag
    probe beside ``loomc.arun`` keeps ticking through the second the pattern takes, so other
    runs in the same process (``loomc serve``) do not wait on it."""
    import loomc

    project = loomc.load_project(_project(tmp_path, guard=SLOW))
    loomc.run("warm", project=project, pipeline="p", stream=False)  # compile outside the probe

    with deadline(30, "off-loop guard"):
        lag, elapsed, result = worst_lag(
            lambda: loomc.arun(HOSTILE, project=project, pipeline="p", stream=False)
        )
    assert result.stop_reason == "guard-undecided"
    assert elapsed >= 0.9  # the pattern ran into its bound...
    assert lag < 0.25, lag  # ...while the loop kept ticking


class _Answering:
    """The policy's mock, except that a case about "hostile" is answered with ``HOSTILE`` and
    one about "ticking" records how late the event loop wakes it while its call lasts."""

    name = "mock"

    def __init__(self) -> None:
        from loomc.providers.mock import MockProvider

        self.inner = MockProvider("mock")
        self.lags: list[float] = []

    async def complete(self, request: Any, on_event: Any = None) -> Any:
        import anyio

        text = request.messages[-1].content
        out = await self.inner.complete(request, on_event)
        if "ticking" in text:
            end = time.perf_counter() + 1.5
            while time.perf_counter() < end:
                t = time.perf_counter()
                await anyio.sleep(0.005)
                self.lags.append(time.perf_counter() - t - 0.005)
        if "hostile" in text:
            out = dataclasses.replace(out, content=HOSTILE)
        return out

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_an_eval_regex_check_does_not_hold_the_other_workers(tmp_path: Path) -> None:
    """A row's regex checks run in a worker thread: while one row's pattern runs into its
    bound, another row's call in flight keeps being served (its timers are not held up)."""
    import loomc

    (tmp_path / "project").mkdir()
    project = _project(tmp_path / "project")
    data = tmp_path / "d.jsonl"
    rows = [  # the ticking call is in flight when the second worker checks the hostile answer
        {"id": "ticking", "prompt": "Task ticking."},
        {"id": "hostile", "prompt": "Task hostile.", "checks": [{"type": "regex", "value": SLOW}]},
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    provider = _Answering()
    with deadline(60, "eval beside a hostile check"):
        ev = loomc.prepare_eval(data, "p", project=project, concurrency=2)
        receipt = ev.run(providers={"mock": provider})
    runs = {r["case_id"]: r for r in receipt.model_dump()["runs"]}
    assert runs["hostile"]["checks"][0]["detail"] == (
        "regex '(a|aa)+$': pattern took longer than 1 s"
    )
    assert provider.lags and max(provider.lags) < 0.25, max(provider.lags)
