"""The canonical, content-hashed JSON plan artifact (a build manifest for one pipeline x tier).

Canonical means: sorted keys, no insignificant whitespace in the hashed form, decimals as
strings, steps in topological order. Same input, byte-identical output.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from loomc.ir.model import Pipeline, expr_to_json
from loomc.secrets import redact_secrets, scrub_source_keys

ARTIFACT_VERSION = 1


def pipeline_to_json(p: Pipeline) -> dict[str, Any]:
    steps = []
    for sid in p.graph.topological_order():
        s = p.graph.step(sid)
        steps.append(
            {
                "id": s.id,
                "role": s.role,
                "worker": s.worker,
                "model": s.model,
                "provider": s.provider,
                "provider_type": s.provider_type,
                "group": s.group,
                "task": _clean(s.task),
                "max_tokens": s.max_tokens,
                "timeout_ms": s.timeout_ms,
                "retries": s.retries,
                "credits": str(s.credits),
                "p95_ms": s.p95_ms,
                "pricing": None
                if s.pricing is None
                else {
                    "input_per_million": str(s.pricing.input_per_million),
                    "output_per_million": str(s.pricing.output_per_million),
                },
                "guard": expr_to_json(s.guard),
                "sees": list(s.sees),
                "optional_sees": list(s.optional_sees),
                "after": list(s.after),
            }
        )
    edges = sorted([u, v, sorted(k)] for u, v, k in p.graph.edges())
    return {
        "name": p.name,
        "tier": p.tier,
        "policy": p.policy,
        "kind": p.kind,
        "instruction": _clean(p.instruction),
        "input_tokens": p.input_tokens,
        "budget": p.budget.to_json(),
        "pipeline_budget": p.pipeline_budget.to_json(),
        "tier_budget": p.tier_budget.to_json(),
        "answer": list(p.answer),
        "requires": [{"kind": r.kind, "steps": list(r.steps)} for r in p.requires],
        "steps": steps,
        "edges": edges,
    }


def _clean(text: str) -> str:
    """Artifacts are committed and shared: no key-shaped string and no resolved key in them
    (a `.loom` that holds one is also refused by LOOM606)."""
    return redact_secrets(scrub_source_keys(text))


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def build_artifact(pipelines: list[Pipeline], worst_cases: list[dict[str, Any]]) -> dict[str, Any]:
    body = {
        "version": ARTIFACT_VERSION,
        "plans": [
            {"key": p.key, "plan": pipeline_to_json(p), "worst_case": wc}
            for p, wc in sorted(zip(pipelines, worst_cases, strict=True), key=lambda t: t[0].key)
        ],
    }
    digest = hashlib.sha256(canonical(body).encode()).hexdigest()
    return {"content_hash": f"sha256:{digest}", **body}


def dump_artifact(artifact: dict[str, Any]) -> str:
    return json.dumps(artifact, sort_keys=True, indent=2, ensure_ascii=True) + "\n"
