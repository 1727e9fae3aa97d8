"""Convert a reference-runtime JSON config (providers, models, workers, pricing, adaptive) into a
loomc policy. Literal keys are refused: they would otherwise be copied into a file kept in Git."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from loomc.policy.models import ENV_REF, Policy

_TYPES = {
    "mock": "mock",
    "dot": "dot",
    "openrouter": "openrouter",
    "ollama": "ollama",
    "lmstudio": "lmstudio",
    "openai": "openai-compatible",
    "openai-compatible": "openai-compatible",
}
_LATENCY = {"low": 8000, "medium": 20000, "high": 45000}


class ImportError_(ValueError):
    """A config that cannot be converted; the message says which key and why."""


def convert(config: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    providers: dict[str, Any] = {}
    for pname, p in (config.get("providers") or {}).items():
        ptype = _TYPES.get(str(p.get("type", pname)))
        if ptype is None:
            raise ImportError_(f"providers.{pname}.type: unknown provider type {p.get('type')!r}")
        out: dict[str, Any] = {"type": ptype}
        if p.get("baseUrl"):
            out["base_url"] = p["baseUrl"]
        key = p.get("apiKey")
        if key is not None:
            if not ENV_REF.match(str(key)):
                raise ImportError_(f"providers.{pname}.apiKey: literal API key; use env:NAME")
            out["api_key"] = key
        if p.get("headers"):
            out["headers"] = dict(p["headers"])
        providers[pname] = out
    adaptive = config.get("adaptive") or {}
    per_call = adaptive.get("estimatedCreditsPerCall")
    if per_call is None:
        per_call = 1 if any(v["type"] == "dot" for v in providers.values()) else 0
    by_model = adaptive.get("estimatedCreditsByModel") or {}
    workers: dict[str, Any] = {}
    source_workers = config.get("workers") or {}
    for role, model in (config.get("models") or {}).items():
        w = source_workers.get(role, {})
        ref = w.get("model", model)
        entry: dict[str, Any] = {"model": ref}
        if w.get("label"):
            entry["label"] = w["label"]
        if w.get("capabilities"):
            entry["capabilities"] = list(w["capabilities"])
        credits = by_model.get(ref, per_call)
        if credits:
            entry["credits"] = _num(credits)
        if w.get("latency") in _LATENCY:
            entry["p95_latency"] = f"{_LATENCY[w['latency']] // 1000}s"
        workers[role] = entry
    pricing = {
        ref: {
            "input_per_million": _num(v.get("inputPerMillion", 0)),
            "output_per_million": _num(v.get("outputPerMillion", 0)),
        }
        for ref, v in (config.get("pricing") or {}).items()
    }
    policy: dict[str, Any] = {
        "version": 1,
        "name": name or _slug(str(config.get("name", "imported"))),
        "providers": providers,
        "workers": workers,
    }
    if pricing:
        policy["pricing"] = pricing
    tiers = {
        "lean": {"calls": 1, "latency": "45s"},
        "balanced": {"calls": 2, "latency": "60s"},
        "strict": {"calls": 3, "latency": "120s"},
    }
    if adaptive.get("maxCalls") or adaptive.get("maxLatencyMs"):
        pol = str(adaptive.get("policy", "balanced")).lower()
        if adaptive.get("maxCalls"):
            tiers[pol]["calls"] = int(adaptive["maxCalls"])
        if adaptive.get("maxLatencyMs"):
            tiers[pol]["latency"] = f"{int(adaptive['maxLatencyMs'])}ms"
    policy["tiers"] = tiers
    Policy.model_validate(policy)  # what we write must load
    return policy


def _num(value: Any) -> str | int:
    d = Decimal(str(value))
    return int(d) if d == d.to_integral_value() else str(d)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "imported"


def import_file(path: Path) -> str:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportError_(f"{path}: cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ImportError_(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    if not isinstance(config, dict):
        raise ImportError_(f"{path}: a config must be a JSON object")
    try:
        policy = convert(config)
    except ImportError_ as exc:
        raise ImportError_(f"{path}: {exc}") from exc
    except Exception as exc:  # pydantic validation of the result
        raise ImportError_(f"{path}: converted policy is invalid: {exc}") from exc
    header = f"# Imported by `loomc import` from {path.name}\n"
    return header + yaml.safe_dump(policy, sort_keys=False, allow_unicode=True)
