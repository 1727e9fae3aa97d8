"""Corpus data of `loom-conductor-v2`: families, topics, counts and the empirical anchors.

Order matters everywhere here (round-robin over families, `choice` over topics, `shuffle` of
anchors), so these tuples are part of the byte-exact generator contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Range = tuple[float, float]


@dataclass(frozen=True)
class Family:
    name: str
    split: str
    category: str
    risk: Range
    complexity: Range
    consequence: Range
    ambiguity: Range
    evidence_need: Range
    reversibility: Range
    templates: tuple[str, str, str]


@dataclass(frozen=True)
class Anchor:
    """A measured worker lane the generator jitters around (models anonymized)."""

    anchor: str
    quality: float
    pass_rate: float
    credits: float
    latency_ms: int
    strengths: tuple[str, ...]

    def to_manifest(self) -> dict[str, Any]:
        return {
            "anchor": self.anchor,
            "credits": self.credits,
            "latency_ms": self.latency_ms,
            "pass_rate": self.pass_rate,
            "quality": self.quality,
            "strengths": list(self.strengths),
        }


TASK_FIELDS = ("risk", "complexity", "consequence", "ambiguity", "evidence_need", "reversibility")

FAMILIES: tuple[Family, ...] = (
    Family(
        "direct_facts",
        "train",
        "general",
        (0.02, 0.20),
        (0.05, 0.35),
        (0.02, 0.20),
        (0.02, 0.25),
        (0.02, 0.25),
        (0.75, 1.0),
        (
            "Return a concise explanation of {topic} for an internal glossary.",
            "Convert {count} units and state the result without extra analysis.",
            "Summarize the supplied release note in {count} bullets.",
        ),
    ),
    Family(
        "content_revision",
        "train",
        "writing",
        (0.05, 0.25),
        (0.20, 0.50),
        (0.05, 0.30),
        (0.15, 0.45),
        (0.05, 0.30),
        (0.80, 1.0),
        (
            "Rewrite a {topic} announcement for a technical audience while preserving facts.",
            "Tighten a product explanation about {topic} to {count} words.",
            "Edit documentation for {topic} and remove ambiguous language.",
        ),
    ),
    Family(
        "feature_implementation",
        "train",
        "coding",
        (0.25, 0.60),
        (0.45, 0.85),
        (0.25, 0.65),
        (0.20, 0.55),
        (0.25, 0.65),
        (0.45, 0.80),
        (
            "Implement {topic} in an existing service and include regression tests.",
            "Design an API for {topic} with validation and failure handling.",
            "Patch a production bug involving {topic} without breaking compatibility.",
        ),
    ),
    Family(
        "debugging",
        "train",
        "coding",
        (0.30, 0.70),
        (0.45, 0.90),
        (0.25, 0.70),
        (0.35, 0.80),
        (0.35, 0.75),
        (0.40, 0.75),
        (
            "Diagnose an intermittent failure in {topic} from logs and propose a minimal fix.",
            "Find the root cause of a concurrency-sensitive {topic} regression.",
            "Explain why {topic} fails only under load and define a verification plan.",
        ),
    ),
    Family(
        "research_synthesis",
        "train",
        "research",
        (0.20, 0.55),
        (0.45, 0.90),
        (0.20, 0.60),
        (0.45, 0.90),
        (0.60, 1.0),
        (0.70, 1.0),
        (
            "Compare evidence for {topic} and separate findings from inference.",
            "Review competing approaches to {topic} and identify uncertain claims.",
            "Produce a decision memo about {topic} using cited measurements.",
        ),
    ),
    Family(
        "data_analysis",
        "train",
        "analysis",
        (0.15, 0.50),
        (0.35, 0.80),
        (0.20, 0.65),
        (0.25, 0.70),
        (0.35, 0.80),
        (0.65, 0.95),
        (
            "Analyze a dataset about {topic}, detect anomalies, and explain limitations.",
            "Compare two experiments on {topic} and recommend the next measurement.",
            "Interpret a noisy metric shift in {topic} without overstating causality.",
        ),
    ),
    Family(
        "incident_response",
        "train",
        "operations",
        (0.55, 0.95),
        (0.50, 0.95),
        (0.55, 1.0),
        (0.35, 0.80),
        (0.50, 0.95),
        (0.15, 0.55),
        (
            "Plan immediate containment and recovery for a {topic} production incident.",
            "Review an outage involving {topic} and identify unsafe recovery steps.",
            "Prioritize actions during a live {topic} degradation with incomplete telemetry.",
        ),
    ),
    Family(
        "product_tradeoff",
        "train",
        "decision",
        (0.10, 0.45),
        (0.30, 0.75),
        (0.20, 0.65),
        (0.35, 0.80),
        (0.25, 0.70),
        (0.55, 0.90),
        (
            "Choose an implementation strategy for {topic} under a fixed budget.",
            "Evaluate build-versus-buy options for {topic} using explicit assumptions.",
            "Recommend whether to launch {topic} given mixed experiment results.",
        ),
    ),
    Family(
        "migration_planning",
        "validation",
        "coding",
        (0.35, 0.75),
        (0.55, 0.95),
        (0.40, 0.85),
        (0.30, 0.75),
        (0.40, 0.85),
        (0.25, 0.65),
        (
            "Plan a zero-downtime migration of {topic} with rollback checkpoints.",
            "Review a staged migration for {topic} and identify irreversible steps.",
            "Design compatibility testing for a {topic} schema migration.",
        ),
    ),
    Family(
        "performance_tuning",
        "validation",
        "analysis",
        (0.20, 0.60),
        (0.45, 0.90),
        (0.25, 0.70),
        (0.30, 0.75),
        (0.30, 0.75),
        (0.55, 0.90),
        (
            "Diagnose latency variance in {topic} and rank the next experiments.",
            "Review a proposed optimization for {topic} for hidden regressions.",
            "Choose between throughput and tail-latency changes for {topic}.",
        ),
    ),
    Family(
        "policy_compliance",
        "validation",
        "review",
        (0.45, 0.85),
        (0.40, 0.85),
        (0.50, 0.95),
        (0.35, 0.80),
        (0.55, 0.95),
        (0.30, 0.70),
        (
            "Review whether {topic} satisfies a documented retention policy.",
            "Audit a workflow for {topic} against explicit access requirements.",
            "Identify evidence required before approving {topic} for production.",
        ),
    ),
    Family(
        "payment_races",
        "test",
        "financial",
        (0.75, 1.0),
        (0.60, 1.0),
        (0.80, 1.0),
        (0.35, 0.80),
        (0.60, 1.0),
        (0.05, 0.40),
        (
            "Review a {topic} flow for concurrent debit, retry, and settlement failures.",
            "Design exact-once accounting for {topic} under crashes and replays.",
            "Audit refund semantics for {topic} when responses are lost.",
        ),
    ),
    Family(
        "tenant_isolation",
        "test",
        "security",
        (0.80, 1.0),
        (0.55, 0.95),
        (0.80, 1.0),
        (0.30, 0.75),
        (0.65, 1.0),
        (0.10, 0.45),
        (
            "Audit {topic} for cross-tenant data exposure and authorization ordering.",
            "Review cache isolation for {topic} before deployment.",
            "Prove that {topic} cannot expose one tenant's records to another.",
        ),
    ),
    Family(
        "webhook_replay",
        "test",
        "security",
        (0.75, 1.0),
        (0.55, 0.95),
        (0.70, 1.0),
        (0.30, 0.75),
        (0.60, 1.0),
        (0.15, 0.50),
        (
            "Review {topic} signature verification, replay defense, and retries.",
            "Design idempotent processing for {topic} with adversarial delivery.",
            "Audit raw-body validation and freshness controls in {topic}.",
        ),
    ),
    Family(
        "oauth_integrity",
        "test",
        "identity",
        (0.75, 1.0),
        (0.55, 0.95),
        (0.75, 1.0),
        (0.35, 0.80),
        (0.65, 1.0),
        (0.10, 0.45),
        (
            "Audit {topic} for state, PKCE, redirect, and replay failures.",
            "Review account linking in {topic} for login confusion attacks.",
            "Design a secure callback flow for {topic} across browser restarts.",
        ),
    ),
    Family(
        "ssrf_egress",
        "test",
        "security",
        (0.80, 1.0),
        (0.60, 1.0),
        (0.75, 1.0),
        (0.40, 0.85),
        (0.70, 1.0),
        (0.10, 0.45),
        (
            "Audit {topic} for SSRF, redirect, DNS rebinding, and metadata access.",
            "Design egress controls for user-supplied {topic} destinations.",
            "Review resolution-time IP validation for {topic}.",
        ),
    ),
    Family(
        "stream_settlement",
        "test",
        "financial",
        (0.75, 1.0),
        (0.65, 1.0),
        (0.80, 1.0),
        (0.40, 0.85),
        (0.65, 1.0),
        (0.05, 0.40),
        (
            "Define correct {topic} billing when clients disconnect mid-stream.",
            "Audit reservation, partial settlement, and reconciliation for {topic}.",
            "Design failure-injection tests for streamed {topic} charges.",
        ),
    ),
    Family(
        "health_triage",
        "test",
        "health",
        (0.80, 1.0),
        (0.35, 0.80),
        (0.90, 1.0),
        (0.45, 0.90),
        (0.70, 1.0),
        (0.05, 0.30),
        (
            "Prepare a cautious triage response for {topic} with incomplete history.",
            "Review a health guidance draft about {topic} for unsafe certainty.",
            "Decide what independent verification is required for {topic} advice.",
        ),
    ),
    Family(
        "contract_risk",
        "test",
        "legal",
        (0.70, 1.0),
        (0.45, 0.90),
        (0.75, 1.0),
        (0.45, 0.90),
        (0.65, 1.0),
        (0.10, 0.40),
        (
            "Review a contract clause about {topic} and identify unresolved exposure.",
            "Compare interpretations of {topic} without presenting inference as law.",
            "Decide when {topic} requires independent professional verification.",
        ),
    ),
)

TOPICS: tuple[str, ...] = (
    "credit reservation",
    "tenant-scoped caching",
    "webhook delivery",
    "OAuth callbacks",
    "streaming inference",
    "database failover",
    "API-key rotation",
    "background jobs",
    "model routing",
    "data retention",
    "observability",
    "rate limiting",
    "prompt caching",
    "artifact storage",
    "deployment rollback",
    "usage metering",
    "private credentials",
    "provider failover",
    "schema evolution",
    "access control",
)

COUNTS: tuple[int, ...] = (3, 4, 5, 7, 10, 12)

ANCHORS: tuple[Anchor, ...] = (
    Anchor("frontier_high", 1.0, 1.0, 12.6667, 72371, ("implementation", "reasoning", "synthesis")),
    Anchor("frontier_efficient", 0.8833, 0.8333, 3.5, 64730, ("review", "reasoning", "writing")),
    Anchor("specialist_low_cost", 0.7, 0.5, 1.0, 25862, ("drafting", "coding", "speed")),
)

PROVIDERS: tuple[str, ...] = ("provider_x", "provider_y", "provider_z")
WORKER_IDS: tuple[str, ...] = ("worker_a", "worker_b", "worker_c")

_CATEGORY_STRENGTH = {
    "coding": "coding",
    "security": "reasoning",
    "financial": "reasoning",
    "identity": "reasoning",
    "analysis": "reasoning",
    "research": "synthesis",
    "writing": "writing",
}


def category_strength(category: str) -> str:
    """The strength a category rewards; everything unlisted rewards drafting."""
    return _CATEGORY_STRENGTH.get(category, "drafting")


def families_for(split: str) -> tuple[Family, ...]:
    return tuple(f for f in FAMILIES if f.split == split)
