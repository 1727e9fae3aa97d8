"""The planner options `loomc run --planner` and `loomc eval --strategies conductor:...` share."""

from __future__ import annotations

import argparse
from typing import Any


def add_planner_flags(c: argparse._ArgumentGroup) -> None:
    c.add_argument("--workers", metavar="A,B,C", help="policy workers a plan may use")
    c.add_argument("--base-model", metavar="DIR", help="learned planner: base causal LM")
    c.add_argument("--adapter", metavar="DIR", help="learned planner: PEFT adapter")
    c.add_argument(
        "--base-model-id",
        metavar="NAME",
        help="learned planner: the adapter's pinned base (its base_model_name_or_path)",
    )
    c.add_argument(
        "--revision",
        help="learned planner: pinned base revision (40-hex snapshot commit or sha256:DIGEST)",
    )
    c.add_argument("--device", help="learned planner: device (auto, cpu, cuda, ...)")
    c.add_argument("--dtype", help="learned planner: dtype (auto, bfloat16, float32, ...)")
    c.add_argument("--max-new-tokens", type=int, metavar="N", help="learned planner: decode cap")
    c.add_argument(
        "--merge-adapter",
        action="store_true",
        help="learned planner: fold the LoRA adapter into the base weights (faster decoding; "
        "in bf16 its ids may differ from the unmerged adapter's)",
    )
    c.add_argument(
        "--endpoint",
        metavar="URL",
        help="learned planner: an OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1)",
    )
    c.add_argument("--endpoint-model", metavar="NAME", help="learned planner: the served model")
    c.add_argument("--endpoint-key", metavar="env:NAME", help="learned planner: the API key")
    c.add_argument(
        "--allow-planner-fallback",
        action="store_true",
        help="when the planner cannot run at all, plan with the risk planner (said in the "
        "decision) instead of exiting 1",
    )


def planner_problem(args: argparse.Namespace, planner: str | None) -> str | None:
    """A usage error in the planner flags, or None."""
    if planner == "learned" and not (args.base_model or args.endpoint):
        return "--planner learned needs --base-model DIR or --endpoint URL"
    if args.endpoint and not args.endpoint_model:
        return "--endpoint needs --endpoint-model NAME (the served model)"
    if args.endpoint_key and not args.endpoint_key.startswith("env:"):
        return "--endpoint-key must be env:NAME (keys are never given on the command line)"
    return None


def planner_options(args: argparse.Namespace, learned: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "workers": [w.strip() for w in args.workers.split(",") if w.strip()]
        if args.workers
        else None,
    }
    if learned:
        out.update(
            base_model=args.base_model,
            adapter=args.adapter,
            base_model_id=args.base_model_id,
            revision=args.revision,
            device=args.device,
            dtype=args.dtype,
            max_new_tokens=args.max_new_tokens,
            merge_adapter=True if args.merge_adapter else None,
            endpoint=args.endpoint,
            endpoint_model=args.endpoint_model,
            api_key=args.endpoint_key,
        )
    return {k: v for k, v in out.items() if v is not None}
