"""Which loomc modules a prompt crosses in `loomc run` (the public-API issue's measure).

Prints three numbers for one mock prompt: the loomc modules on the call stack when the
provider is called (the prompt's path from the command line to the wire), every loomc module
whose functions ran (module bodies executed at import are not counted), and the "climbs":
distinct caller -> callee module pairs where a lower stage calls back into a higher one.

    python benchmarks/prompt_path.py            # from a checkout, mock policy
"""

from __future__ import annotations

import sys
from typing import Any

PROMPT = "Customers are sometimes charged twice when they double-click Pay. Review it."
ORDER = [
    "cli",
    "api",
    "report",
    "eval",
    "conductor",
    "exec",
    "risk",
    "providers",
    "project",
    "checker",
    "check",
    "checking",
    "regress",
    "plan_table",
    "ir",
    "policy",
    "syntax",
    "sources",
    "diagnostics",
    "units",
    "codes",
    "text",
    "errors",
]


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "loomc"


def main() -> int:
    from loomc.cli.main import main as loomc_main

    modules: dict[str, None] = {}
    edges: set[tuple[str, str]] = set()
    stack_at_call: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("loomc"):
            return
        modules.setdefault(module)
        if module == "loomc.providers.mock" and frame.f_code.co_name == "complete":
            walk, seen = frame, []
            while walk is not None:
                name = walk.f_globals.get("__name__", "")
                if name.startswith("loomc") and (not seen or seen[-1] != name):
                    seen.append(name)
                walk = walk.f_back
            stack_at_call[:] = list(dict.fromkeys(reversed(seen)))
        caller = frame.f_back
        while caller is not None and not caller.f_globals.get("__name__", "").startswith("loomc"):
            caller = caller.f_back
        if caller is not None:
            src = caller.f_globals["__name__"]
            if src != module:
                edges.add((src, module))

    sys.setprofile(profile)
    try:
        loomc_main(["run", "--no-stream", "--json", "--tier", "balanced", PROMPT])
    finally:
        sys.setprofile(None)
    rank = {s: i for i, s in enumerate(ORDER)}
    climbs = sorted((a, b) for a, b in edges if rank.get(stage(b), 99) < rank.get(stage(a), 99))
    print(
        f"\nprompt path ({len(stack_at_call)} modules): {' -> '.join(stack_at_call)}",
        file=sys.stderr,
    )
    print(
        f"{len(modules)} modules run for one prompt; {len(climbs)} climb(s) up the stages",
        file=sys.stderr,
    )
    for a, b in climbs:
        print(f"  climb: {a} -> {b}", file=sys.stderr)
    print("  " + " ".join(modules), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
