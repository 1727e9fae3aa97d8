"""Convert a reference-runtime JSON config (providers, models, workers, pricing, adaptive) into a
loomc policy. Literal keys are refused: they would otherwise be copied into a file kept in Git."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from loomc.diagnostics import Diagnostic, Severity, Span
from loomc.policy.load import PolicySource, load_policy_text
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
_PRESETS = {"lean": (1, 45_000), "balanced": (2, 60_000), "strict": (3, 120_000)}


class ImportError_(ValueError):
    """A config that cannot be converted; the message says which key and why."""

    def __init__(self, message: str, code: str = "LOOM603") -> None:
        super().__init__(message)
        self.code = code


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
                raise ImportError_(
                    f"providers.{pname}.apiKey: literal API key; use env:NAME", "LOOM601"
                )
            out["api_key"] = key
        if p.get("headers"):
            out["headers"] = dict(p["headers"])
        providers[pname] = out
    adaptive = config.get("adaptive") or {}
    if not isinstance(adaptive, dict):
        raise ImportError_("adaptive: must be an object")
    per_call = adaptive.get("estimatedCreditsPerCall")
    if per_call is None:
        per_call = 1 if any(v["type"] == "dot" for v in providers.values()) else 0
    by_model = adaptive.get("estimatedCreditsByModel") or {}
    if not isinstance(by_model, dict):
        by_model = {}  # the reference ignores a non-object here too
    workers: dict[str, Any] = {}
    source_workers = config.get("workers") or {}
    for role, model in (config.get("models") or {}).items():
        w = source_workers.get(role, {})
        ref = w.get("model", model)
        # One provider group per model: the config does not say which models share a vendor,
        # and different weights fail independently. Merge groups by hand where they do not.
        entry: dict[str, Any] = {"model": ref, "group": ref}
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
    policy["tiers"] = _tiers(adaptive, per_call, by_model)
    policy["default_tier"] = _tier_name(adaptive)
    Policy.model_validate(policy)  # what we write must load
    return policy


def _tier_name(adaptive: dict[str, Any]) -> str:
    tier = str(adaptive.get("policy") or "balanced").lower()
    if tier not in _PRESETS:
        raise ImportError_(
            f"adaptive.policy: unknown policy {tier!r}; use lean, balanced or strict"
        )
    return tier


def _tiers(
    adaptive: dict[str, Any], per_call: Any, by_model: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """The reference's presets, with the config's limits on its chosen tier. As in the reference,
    a tier without an explicit ``maxCredits`` gets ``calls x the largest per-call estimate``."""
    chosen = _tier_name(adaptive)
    largest = max([Decimal(str(per_call)), *(Decimal(str(v)) for v in by_model.values())])
    tiers: dict[str, dict[str, Any]] = {}
    for tier, (calls, latency_ms) in _PRESETS.items():
        max_credits = None
        if tier == chosen:
            calls = _positive_int(adaptive, "maxCalls", calls)
            latency_ms = _positive_int(adaptive, "maxLatencyMs", latency_ms)
            if adaptive.get("maxCredits") is not None:
                max_credits = Decimal(str(adaptive["maxCredits"]))
                if not max_credits.is_finite() or max_credits <= 0:
                    raise ImportError_("adaptive.maxCredits: must be a positive number")
        entry: dict[str, Any] = {"calls": calls, "latency": f"{latency_ms}ms"}
        if max_credits is None and largest > 0:
            max_credits = calls * largest
        if max_credits is not None:
            entry["credits"] = _num(max_credits)
        tiers[tier] = entry
    return tiers


def _positive_int(adaptive: dict[str, Any], key: str, preset: int) -> int:
    value = adaptive.get(key)
    if value is None or value == "":
        return preset
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value != int(value)
        or value < 1
    ):
        raise ImportError_(f"adaptive.{key}: must be a positive integer, got {value!r}")
    return int(value)


def _num(value: Any) -> str | int:
    d = Decimal(str(value))
    return int(d) if d == d.to_integral_value() else str(d)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "imported"


def import_file(path: Path) -> str:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportError_(f"{path}: cannot read: {exc}", "LOOM602") from exc
    except json.JSONDecodeError as exc:
        raise ImportError_(
            f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}", "LOOM602"
        ) from exc
    if not isinstance(config, dict):
        raise ImportError_(f"{path}: a config must be a JSON object")
    try:
        policy = convert(config)
    except ImportError_ as exc:
        raise ImportError_(f"{path}: {exc}", exc.code) from exc
    except Exception as exc:  # pydantic validation of the result
        raise ImportError_(f"{path}: converted policy is invalid: {exc}") from exc
    header = (
        f"# Imported by `loomc import` from {path.name}\n"
        "# Provider groups: one per model (the config does not say which models share a vendor);\n"
        "# give models of one vendor one group so `require independent` stays honest.\n"
    )
    return header + yaml.safe_dump(policy, sort_keys=False, allow_unicode=True)


def load_config(path: Path) -> tuple[PolicySource | None, list[Diagnostic]]:
    """A reference config converted in memory, so ``loomc run --config X.config.json`` and
    ``loomc check --policy X.config.json`` need no import step (``load_policy`` calls this)."""
    try:
        text = import_file(path)
    except ImportError_ as exc:
        message = str(exc).removeprefix(f"{path}: ")
        return None, [Diagnostic(exc.code, Severity.ERROR, message, Span.point(str(path)))]
    return load_policy_text(text, str(path))
