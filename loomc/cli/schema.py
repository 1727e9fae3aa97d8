"""`loomc schema`: the JSON Schema of a policy file, for editors and CI validation."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("schema", help="write the JSON Schema of a policy file")
    p.add_argument("--output", "-o", type=Path)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from loomc.policy.models import Policy

    schema = Policy.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "loomc policy"
    text = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    if args.output:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    else:
        print(text, end="")
    return 0
