"""`loomc doctor`: does the policy load, are the keys set (by name), do the providers answer."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loomc.cli.reference import add_reference_flags, resolve


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("doctor", help="check the policy, its keys (by name) and its providers")
    p.add_argument("--policy", type=Path)
    add_reference_flags(p, adaptive=False)
    p.add_argument("--project", type=Path, default=Path("."))
    p.add_argument("--timeout", type=float, default=3.0, metavar="S", help="per-provider probe")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from loomc.api.doctor import doctor

    clash = resolve(args, "doctor")
    if clash:
        print(f"loomc doctor: {clash}", file=sys.stderr)
        return 2
    findings = doctor(args.project, args.policy, timeout_s=args.timeout)
    for f in findings:
        print(f"{'ok  ' if f.ok else 'FAIL'} {f.subject}: {f.detail}")
    bad = sum(not f.ok for f in findings)
    print(f"loomc doctor: {bad or 'no'} problem(s)", file=sys.stderr)
    return 1 if bad else 0
