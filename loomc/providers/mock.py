"""Deterministic, scriptable provider so that tests, CI and demos need no key and no network.

Answers come from the policy's ``MockScript``: the first matching rule wins (a policy scripts a
suite's answers this way, and eval receipts then say the answers are scripted); otherwise a stable
role-aware default that responds to the user's task (not the step's instruction), derived from a
SHA-256 of (role, model, task) so it is identical across processes and differs by model and role.
Faults fire ``times`` times per (provider, model, role, prompt) key, so a retried call sees the
fault and then succeeds.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from decimal import Decimal

import anyio

from loomc import userregex
from loomc.policy.models import MockFault, MockRule, MockScript
from loomc.providers.base import (
    Completion,
    CompletionRequest,
    HTTPStatusError,
    MalformedResponse,
    NativeReceipt,
    ProviderConfigError,
    ProviderTimeout,
    RateLimited,
    StreamCallback,
    StreamDropped,
    StreamEvent,
    TokenUsage,
    estimate_tokens,
)
from loomc.userregex import UserPatternError

_ROLE_TEMPLATES: dict[str, str] = {
    "router": "Route: {route}. The task '{task}' is handled best by the {route} path; "
    "confidence {score}/10 based on its length and wording.",
    "editor": "Corrected answer: after reviewing the draft for '{task}', the errors were fixed "
    "and the reasoning tightened. Final version {tag}: the answer is complete and consistent.",
    "critic": "Audit: the draft for '{task}' was checked claim by claim. Verdict: acceptable "
    "after corrections; issues found were noted and resolved (ref {tag}).",
    "reviewer": "Review: the answer to '{task}' was checked for accuracy and completeness. "
    "Verdict: approved with minor corrections (ref {tag}).",
    "judge": '{{"score": {judge_score}, "passed": {judge_passed}, "reason": "The answer to '
    "'{task_json}' addresses the rubric (ref {tag}).\"}}",
}
_GENERIC = (
    "Answer ({role}, {model}) to '{task}': the main points in order, each with the reason behind "
    "it, and a clear conclusion at the end (ref {tag})."
)
_ROUTES = ("lean", "balanced", "strict")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


async def _sleep(seconds: float) -> None:
    """``anyio.sleep``: on asyncio the ``asyncio.sleep`` anyio's backend awaits, without the
    backend lookup (sniffio's) and the two coroutine frames around it, once per mock call."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # another event loop (trio)
        await anyio.sleep(seconds)
        return
    if seconds >= 0:
        await asyncio.sleep(seconds)
    else:
        await anyio.sleep(seconds)  # its ValueError


def _last_user(request: CompletionRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content
    return request.messages[-1].content if request.messages else ""


_USER_TASK = re.compile(r"^User task \(untrusted\):\n((?:> .*(?:\n|$)|>(?:\n|$))+)", re.MULTILINE)


def user_task(prompt: str) -> str | None:
    """The user's task quoted inside a step's user message (loomc.exec.prompting), unquoted;
    None when the prompt does not carry one (a judge call, a hand-built request)."""
    found = _USER_TASK.search(prompt)
    if found is None:
        return None
    lines = [line[2:] if line.startswith("> ") else line[1:] for line in found[1].splitlines()]
    return "\n".join(lines).strip() or None


def default_answer(role: str, model: str, task: str, template: str | None = None) -> str:
    """Stable role-aware text (>80 chars) derived from a hash, never from ``hash()``."""
    digest = _digest(role, model, task)
    short_task = " ".join(task.split())[:60]
    fields = _Fields(role=role, model=model, task=short_task, tag=digest[:8])
    fields.digest = digest
    if template is not None:
        return template.format_map(fields)
    return _ROLE_TEMPLATES.get(role, _GENERIC).format_map(fields)


class _Fields(dict[str, str]):
    """A template's fields: the derived ones worked out only when the template names them
    (most answers name four), an unknown one left as written."""

    digest = ""

    def __missing__(self, key: str) -> str:
        d = self.digest
        if key == "score":
            return str(5 + int(d[8:10], 16) % 5)
        if key == "route":
            return _ROUTES[int(d[10:12], 16) % len(_ROUTES)]
        if key == "task_json":
            return json.dumps(self["task"])[1:-1]
        if key == "judge_score":
            return str(55 + int(d[12:14], 16) % 45)
        if key == "judge_passed":
            return "true" if int(self["judge_score"]) >= 70 else "false"
        return "{" + key + "}"


def _matches(
    rule: MockRule, role: str, model: str, prompt: str, budget: userregex.MatchBudget
) -> bool:
    """Raises ``UserPatternError`` when the call's rules ran past their shared time bound."""
    if rule.role is not None and rule.role != role:
        return False
    if rule.model is not None and rule.model != model:
        return False
    return (
        rule.pattern is None or userregex.compile(rule.pattern).search(prompt, budget) is not None
    )


class MockProvider:
    """In-process provider; ``attempts`` is exposed so tests can assert retry counts.

    It keeps its own time (``keeps_time``): a call whose latency reaches the request's
    ``timeout_s`` raises ``ProviderTimeout`` at that moment, as the caller's deadline would have
    cut it off, so the metered call needs no cancel scope around it."""

    keeps_time = True

    def __init__(self, name: str = "mock", script: MockScript | None = None) -> None:
        self.name = name
        self.script = script or MockScript()
        self.attempts: dict[tuple[str, str, str, str], int] = {}
        self.calls = 0

    def _rule(
        self, role: str, model: str, model_ids: dict[str, str], prompt: str
    ) -> MockRule | None:
        """The first rule that matches. A rule whose pattern runs past its time bound is a
        policy error, not a rule skipped: the call fails (``ProviderConfigError``, not retried)
        and says which rule, rather than answering with a later rule or the default text. The
        rules of one call share one bound: k hostile patterns cost 1 s, not k."""
        budget = userregex.MatchBudget()
        for number, rule in enumerate(self.script.rules, 1):
            try:
                if _matches(rule, role, model, prompt, budget):
                    return rule
            except UserPatternError as exc:
                raise ProviderConfigError(
                    f"mock rule {number} (pattern {rule.pattern!r}): {exc}", **model_ids
                ) from None
        return None

    async def complete(
        self, request: CompletionRequest, on_event: StreamCallback | None = None
    ) -> Completion:
        started = time.monotonic()
        self.calls += 1
        role = request.step_role or "worker"
        prompt = _last_user(request)
        ids = {"provider": self.name, "model": request.model}
        rule = self._rule(role, request.model, ids, prompt) if self.script.rules else None
        fault = rule.fault if rule is not None and rule.fault is not None else None
        faulting = False
        if fault is not None:  # attempts are counted only where a fault reads them
            key = (self.name, request.model, role, prompt)
            attempt = self.attempts.get(key, 0) + 1
            self.attempts[key] = attempt
            faulting = attempt <= fault.times

        latency = rule.latency_ms if rule is not None and rule.latency_ms is not None else None
        delay_ms = self.script.latency_ms if latency is None else latency
        if faulting and fault is not None and fault.kind == "timeout":
            limit = request.timeout_s
            if limit is not None:
                await anyio.sleep(limit)
            raise ProviderTimeout(f"mock timeout after {limit or 0}s", **ids)
        if delay_ms:
            limit = request.timeout_s
            if limit is not None and delay_ms / 1000 >= limit:  # cut off at the deadline
                await anyio.sleep(limit)
                raise ProviderTimeout(f"mock timeout after {limit}s", **ids)
            await _sleep(delay_ms / 1000)
        if faulting and fault is not None and fault.kind == "status":
            if fault.status == 429:
                raise RateLimited("mock 429 rate limited", retry_after_s=fault.retry_after_s, **ids)
            raise HTTPStatusError(f"mock HTTP {fault.status}", status=fault.status, **ids)

        if rule is not None and rule.response is not None:
            text = rule.response
        else:
            task = user_task(prompt) or str(request.metadata.get("task", prompt))
            text = default_answer(role, request.model, task, self.script.default_response)
        if faulting or (on_event is not None and request.stream):  # else nothing to chunk
            await self._chunks(text, request, on_event, fault if faulting else None, ids)

        estimated = not self.script.report_usage
        prompt_tokens = (
            0 if estimated else sum(estimate_tokens(m.content) for m in request.messages)
        )
        completion_tokens = len(text.split())
        if rule is not None and rule.prompt_tokens is not None:
            prompt_tokens = rule.prompt_tokens
        if rule is not None and rule.completion_tokens is not None:
            completion_tokens = rule.completion_tokens
        if request.max_tokens is not None and completion_tokens > request.max_tokens:
            completion_tokens = request.max_tokens
            text = " ".join(text.split()[: request.max_tokens])
            finish = "length"
        else:
            finish = "stop"
        if estimated:
            prompt_tokens = sum(estimate_tokens(m.content) for m in request.messages)
            completion_tokens = estimate_tokens(text)
        receipt = None
        if rule is not None and rule.spent_credits is not None:
            receipt = NativeReceipt(spent_credits=Decimal(rule.spent_credits))
        return Completion(
            content=text,
            usage=TokenUsage(prompt_tokens, completion_tokens, estimated=estimated),
            finish_reason=finish,
            receipt=receipt,
            latency_ms=int((time.monotonic() - started) * 1000),
        )

    async def _chunks(
        self,
        text: str,
        request: CompletionRequest,
        on_event: StreamCallback | None,
        fault: MockFault | None,
        ids: dict[str, str],
    ) -> None:
        """Stream ``text`` in chunks of words, or break the stream as ``fault`` says."""
        words = text.split(" ")
        size = self.script.stream_chunk_words
        chunks = [
            " ".join(words[i : i + size]) + (" " if i + size < len(words) else "")
            for i in range(0, len(words), size)
        ]
        sent: list[str] = []
        for index, chunk in enumerate(chunks):
            if fault is not None:
                if fault.kind == "stream-cut" and index >= fault.after_tokens:
                    raise StreamDropped("mock stream cut", partial="".join(sent), **ids)
                if fault.kind == "malformed" and index >= fault.after_tokens:
                    raise MalformedResponse("mock malformed frame: 'data: {not json'", **ids)
            if on_event is not None and request.stream:
                await on_event(StreamEvent(kind="token", text=chunk))
            sent.append(chunk)
        if fault is not None and fault.kind in ("stream-cut", "malformed"):
            raise StreamDropped("mock stream cut", partial="".join(sent), **ids)

    async def aclose(self) -> None:
        return None
