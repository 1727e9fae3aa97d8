"""The reference runtime's spellings, translated once for every command that takes them.

Users arrive with the reference's habits: ``--config X.config.json``, ``--policy balanced`` (a
tier, where loomc's ``--policy`` is a policy file), ``--adaptive`` and strategy names
``adaptive-lean``. Each is accepted with a one-line note on stderr giving the loomc spelling, so
the habit works today and the note teaches the new one; a clash is refused with that spelling.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REFERENCE_TIERS = ("lean", "balanced", "strict")


def add_reference_flags(parser: argparse.ArgumentParser, *, adaptive: bool = True) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        metavar="X.config.json",
        help="a reference-runtime config, converted in memory (see `loomc import`)",
    )
    if adaptive:
        parser.add_argument(
            "--adaptive",
            action="store_true",
            help="reference spelling; tiered pipelines are adaptive in loomc already",
        )


def resolve(args: argparse.Namespace, command: str) -> str | None:
    """Rewrite ``args`` to loomc's spellings; return an error message when they clash."""
    policy = getattr(args, "policy", None)
    if policy is not None and str(policy).lower() in REFERENCE_TIERS and not Path(policy).exists():
        tier = str(policy).lower()
        if getattr(args, "tier", None) not in (None, tier):
            return (
                f"--policy {policy} is the reference's tier flag and clashes with --tier "
                f"{args.tier}; loomc's --policy takes a policy file"
            )
        if not hasattr(args, "tier"):
            return f"--policy takes a policy file in loomc; {policy!r} is a tier (use a strategy)"
        args.tier, args.policy = tier, None
        _note(command, f"--policy {policy} read as --tier {tier} (loomc's --policy is a file)")
    config = getattr(args, "config", None)
    if config is not None:
        if args.policy is not None:
            return "--config and --policy both name a policy; give one"
        args.policy = config
    if getattr(args, "adaptive", False):
        _note(command, "--adaptive is the default in loomc: tiered pipelines escalate by risk")
    return None


def translate_strategies(spec: str, command: str) -> str:
    """``adaptive-lean`` -> ``lean`` (and ``adaptive-X@semantic`` -> ``X@semantic``)."""
    out = []
    for raw in spec.split(","):
        name = raw.strip()
        base, sep, suffix = name.partition("@")
        if base.startswith("adaptive-") and base[len("adaptive-") :] in REFERENCE_TIERS:
            loomc_name = base[len("adaptive-") :] + sep + suffix
            _note(command, f"strategy {name!r} is the reference's name for {loomc_name!r}")
            name = loomc_name
        out.append(name)
    return ",".join(out)


def _note(command: str, text: str) -> None:
    print(f"loomc {command}: {text}", file=sys.stderr)
