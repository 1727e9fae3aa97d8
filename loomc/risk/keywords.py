"""The reference keyword rules with their bugs fixed, driven by the policy's ``risk`` section.

Fixes over ``reference``: stems (``vulnerab*``) match word forms, plain terms match plurals and
common inflections (``tokens``, ``payments``, ``races``), negated mentions ("not about payments")
and definition trivia ("what does SSRF stand for?") do not escalate.
Term syntax: ``word`` matches the word and its inflections; ``stem*`` matches any word starting so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from loomc.risk.base import Kind, Level, RiskProfile
from loomc.risk.bounded import bounded
from loomc.risk.memo import per_prompt_of
from loomc.risk.prescan import Prescanned
from loomc.risk.reference import KNOWN_PIPELINES, js_length

DEFAULT_SIGNALS: dict[str, list[str]] = {
    "security": [
        "security",
        "vulnerab*",
        "exploit*",
        "attack*",
        "ssrf",
        "xss",
        "csrf",
        "injection",
        "inject",
        "secret*",
        "credential*",
        "password*",
        "encrypt*",
        "decrypt*",
        "malicious",
        "sanitiz*",
        "unsanitiz*",
        "rce",
        "phishing",
        "cve",
        "any url",
        "arbitrary url",
        "redirect*",
        "untrusted",
        "signature*",
        "webhook*",
        "upload*",
        "hash*",
        "private key*",
        "api key*",
    ],
    "identity": [
        "auth*",
        "oauth",
        "permission*",
        "tenant*",
        "access control",
        "token*",
        "session*",
        "login",
        "log in",
        "sign-in",
        "sign in",
        "jwt",
        "sso",
        "mfa",
        "2fa",
        "reset link",
        "password reset",
        "admin*",
        "privilege*",
        "impersonat*",
        "role-based",
        "rbac",
        "user id",
        "account takeover",
    ],
    "money": [
        "billing",
        "bill",
        "payment*",
        "pay",
        "credit*",
        "wallet*",
        "spend*",
        "refund*",
        "invoice*",
        "double-spend",
        "charge*",
        "checkout",
        "payout*",
        "balance*",
        "subscription*",
        "price*",
        "pricing",
        "stripe",
        "ledger*",
        "transfer*",
        "coupon*",
        "discount*",
    ],
    "privacy": [
        "privacy",
        "pii",
        "personal data",
        "retention",
        "redact*",
        "data leak*",
        "gdpr",
        "hipaa",
        "ccpa",
        "email address*",
        "phone number*",
        "home address*",
        "anonymi*",
        "pseudonymi*",
        "consent",
        "medical record*",
        "leak*",
        "tracking",
    ],
    "concurrency": [
        "race",
        "race condition*",
        "concurren*",
        "idempot*",
        "replay*",
        "transaction*",
        "atomic*",
        "double-click*",
        "twice",
        "duplicate*",
        "deadlock*",
        "lock*",
        "retr*",
    ],
    "production-code": [
        "api",
        "database*",
        "migration*",
        "deploy*",
        "production",
        "code review",
        "github",
        "repo",
        "repository",
        "schema change*",
        "drop table",
        "rollback",
        "outage*",
        "incident*",
    ],
    "safety": [
        "dosage",
        "dose",
        "overdose",
        "medication*",
        "prescri*",
        "symptom*",
        "diagnos*",
        "suicid*",
        "self-harm",
        "poison*",
        "allerg*",
        "chest pain",
        "pregnan*",
    ],
    "legal": [
        "contract*",
        "liabilit*",
        "lawsuit*",
        "sue",
        "legal*",
        "lawyer*",
        "compliance",
        "terms of service",
        "copyright*",
        "trademark*",
        "license agreement*",
        "court",
        "regulat*",
        "nda",
    ],
}
DEFAULT_RESEARCH_TERMS = [
    "research*",
    "paper*",
    "benchmark*",
    "evidence",
    "study",
    "studies",
    "compare*",
    "comparison*",
    "investigat*",
    "trade-off*",
    "tradeoff*",
    "pros and cons",
    "decision framework",
    "evaluat*",
    "design a",
    "design an",
    "design the",
    "propose*",
    "root cause*",
    "versus",
    "vs",
]
DEFAULT_ESCALATE_TERMS = ["review*", "audit*", "threat model*", "pen test*", "pentest*"]

_INFLECT = r"(?:s|es|ed|d|ing|er|ers)?"
# Compiled when a text first holds one of their literals (``loomc.risk.prescan``).
_NEGATION = Prescanned(
    r"\b(?:not|no|nothing|never|without|isn't|is not|unrelated to|aside from|nothing to do with)\b"
    r"[^.;!?]{0,30}$"
)
_TRIVIA = Prescanned(
    r"^\s*(?:what\s+(?:does|do)\s+[\w.\- ]{1,30}\s+(?:stand\s+for|mean)"
    r"|what\s+(?:is|are|was)\s+(?:a\s+|an\s+|the\s+)?[\w.\- ]{1,30}\??\s*$"
    r"|what's\s+(?:a\s+|an\s+)?[\w.\- ]{1,30}\??\s*$"
    r"|define\s+|who\s+(?:invented|coined|created)\s+|spell\s+out\s+"
    r"|(?:expand|explain)\s+the\s+(?:acronym|abbreviation)\s+)"
)
_CONTEXTUAL = Prescanned(r"\b(?:our|my|we|us|this|these|here|below|i|should|how)\b")
_ONE_LINER = Prescanned(r"\b(?:in one (?:short |concise )?sentence|one word|briefly|acronym)\b")


UNION_AFTER = 32
"""Prompts profiled one rule at a time before the union of every rule's terms is compiled."""


def _term_pattern(term: str) -> str:
    t = term.strip().lower()
    if t.endswith("*"):
        return re.escape(t[:-1]) + r"[\w-]*"
    return re.escape(t) + _INFLECT


def terms_source(terms: Iterable[str]) -> str | None:
    """The pattern of a rule's terms (None: no term), matched against lowercased text."""
    alts = [_term_pattern(t) for t in terms if t.strip()]
    if not alts:
        return None
    return r"(?<![\w])(?:" + "|".join(alts) + r")(?![\w])"


def compile_terms(terms: Iterable[str]) -> re.Pattern[str] | None:
    source = terms_source(terms)
    return None if source is None else re.compile(source)


def prescanned_terms(terms: Iterable[str]) -> Prescanned | None:
    """A rule's pattern, compiled for the first text that holds one of its terms as written
    (lowercased, the ``*`` cut): every match of a term's alternative starts with exactly that
    text, so a lowercased prompt holding none of them has no match (most prompts hold a
    rule's term for few rules, and compiling all ten cost ~5 ms of a cold run)."""
    kept = [t for t in terms if t.strip()]
    source = terms_source(kept)
    if source is None:
        return None
    literals = {t.strip().lower().removesuffix("*") for t in kept}
    return Prescanned(source, 0, literals)


class KeywordProfiler:
    """Keyword rules, fixed; the same decision shape as the reference so results are comparable."""

    name = "keywords"
    notice: str | None = None  # set by the factory when it stood in for another profiler
    fallback: str | None = None  # why it stands in for ``auto`` (no notice: keywords is fine)

    def __init__(
        self,
        signals: Mapping[str, list[str]] | None = None,
        research_terms: list[str] | None = None,
        escalate_terms: list[str] | None = None,
        long_prompt_chars: int = 180,
        *,
        negation: bool = True,
        trivia: bool = True,
        union_after: int = UNION_AFTER,
    ) -> None:
        merged = dict(DEFAULT_SIGNALS)
        merged.update(signals or {})
        self._signals = [(n, rx) for n, ts in merged.items() if (rx := prescanned_terms(ts))]
        self._research = prescanned_terms(research_terms or DEFAULT_RESEARCH_TERMS)
        self._escalate = prescanned_terms(escalate_terms or DEFAULT_ESCALATE_TERMS)
        # Every term of every rule in one pattern: a match of any rule's pattern at a position
        # is a match of this one there and back (the same alternatives, the same word bounds),
        # so a prompt it does not match has no signal, no research and no escalation term. One
        # scan instead of one per rule: most prompts mention none (~8 µs against ~70 µs). Its
        # compile (~8 ms) pays off only after ~100 prompts, so it is built for the
        # ``union_after``-th prompt (default ``UNION_AFTER``; negative: never, every rule scans):
        # a cold `loomc run` profiles one prompt and never compiles it.
        self._all_terms = [
            *(t for ts in merged.values() for t in ts),
            *(research_terms or DEFAULT_RESEARCH_TERMS),
            *(escalate_terms or DEFAULT_ESCALATE_TERMS),
        ]
        self._any: re.Pattern[str] | None = None
        self._union_after = union_after
        self._profiled = 0
        self.long_prompt_chars = long_prompt_chars
        self.negation = negation
        self.trivia = trivia

    def _hits(self, rx: Prescanned | None, text: str) -> list[str]:
        if rx is None or not rx.may_match(text):
            return []
        out = []
        for m in rx.compiled.finditer(text):
            if self.negation and _NEGATION.search(text[max(0, m.start() - 60) : m.start()]):
                continue
            out.append(m.group(0))
        return out

    def is_trivia(self, prompt: str) -> bool:
        """Definition-shaped, context-free questions: answering them wrongly harms nobody."""
        return per_prompt_of(self, "is_trivia", prompt, lambda: self._is_trivia(prompt))

    def _is_trivia(self, prompt: str) -> bool:
        p = prompt.strip().lower()
        if js_length(p) >= 160 or "\n" in p:
            return False
        if _TRIVIA.search(p):
            return _CONTEXTUAL.search(p.split(" ", 2)[-1]) is None
        return False

    def signals_of(self, prompt: str) -> tuple[str, ...]:
        """The risk signals whose terms ``prompt`` holds (once per ``loomc.risk.memo`` pass)."""
        return per_prompt_of(self, "signals_of", prompt, lambda: self._signals_of(prompt))

    def _signals_of(self, prompt: str) -> tuple[str, ...]:
        text = prompt.lower()
        return tuple(name for name, rx in self._signals if self._hits(rx, text))

    def profile(self, prompt: str, pipeline_hint: str | None = None) -> RiskProfile:
        key = ("profile", pipeline_hint)
        return per_prompt_of(self, key, prompt, lambda: self._profile(prompt, pipeline_hint))

    def _profile(self, prompt: str, pipeline_hint: str | None) -> RiskProfile:
        pipeline = pipeline_hint if pipeline_hint in KNOWN_PIPELINES else "general"
        read = bounded(prompt)  # what the rules' patterns read (loomc.risk.bounded)
        text = read.lower()
        trivia = self.trivia and pipeline == "general" and self.is_trivia(read)
        if self._any is None and self._union_after >= 0:
            self._profiled += 1
            if self._profiled > self._union_after:
                self._any = compile_terms(self._all_terms)
        if self._any is not None and self._any.search(text) is None:  # no rule's term
            signals: tuple[str, ...] = ()
            escalate, research = False, pipeline == "research"
        else:
            signals = self.signals_of(read)
            escalate = bool(self._hits(self._escalate, text))
            research = pipeline == "research" or bool(self._hits(self._research, text))
        kind: Kind
        complexity: Level
        level: Level
        if trivia:
            kind, complexity, level = "general", "low", "low"
            reason = "definition or trivia question" + (
                f" (mentions {', '.join(signals)})" if signals else ""
            )
        elif pipeline == "code-review" or signals:
            kind, complexity, level = "code-review", "high", "high"
            reason = "risk signals: " + ", ".join(signals) if signals else "code-review pipeline"
        elif research:
            kind, complexity, level = "research", "medium", "medium"
            reason = "research, comparison or design task"
        elif escalate:
            kind, complexity, level = "general", "medium", "medium"
            reason = "review or audit requested"
        elif js_length(prompt) < self.long_prompt_chars:
            kind, complexity, level = "general", "low", "low"
            reason = "short general prompt"
        else:
            kind, complexity, level = "general", "medium", "medium"
            reason = "long general prompt"
        return RiskProfile(
            level=level,
            kind=kind,
            signals=() if trivia else signals,
            probability=None,
            reasons=(reason,),
            profiler=self.name,
            complexity=complexity,
        )
