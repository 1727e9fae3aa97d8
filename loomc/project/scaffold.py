"""``loomc init``: a working project in a folder, from the packaged defaults.

What it writes passes ``loomc check`` and runs with ``loomc run`` and ``loomc eval`` on the mock
provider, with no key: a pipeline, a mock policy, a small eval set (three low-risk and three
high-risk cases of the demo's dataset), a CI workflow that checks, uploads SARIF and runs the
eval, a pre-commit config, and a ``.loomc/`` folder (the trace store, default eval reports) that
git ignores. It never overwrites: an existing file stops it before it writes.
"""

from __future__ import annotations

from pathlib import Path

from loomc.project.defaults import packaged_root

WORKFLOW = """\
# loomc in CI: prove every pipeline's budgets (annotations on the diff and SARIF in code
# scanning), then run the eval set on the mock policy (no key needed).
name: loomc
on: [push, pull_request]
jobs:
  loomc:
    runs-on: ubuntu-latest
    permissions:
      contents: read
      security-events: write
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install loomc
      - run: loomc check --format github
      - run: loomc check --format sarif > loomc.sarif
        if: always()
      - uses: github/codeql-action/upload-sarif@v3
        if: always()
        with:
          sarif_file: loomc.sarif
      - run: loomc eval evals/smoke.jsonl --output reports/eval.json
"""

PRE_COMMIT = """\
# `pre-commit install`, then every commit that touches a pipeline or a policy is checked.
repos:
  - repo: local
    hooks:
      - id: loomc-check
        name: loomc check
        entry: loomc check
        language: system
        files: (\\.loom|policies/[^/]+\\.ya?ml)$
        pass_filenames: false
"""


class ScaffoldError(ValueError):
    """The folder already holds some of the files, or the packaged defaults are missing."""


def init_project(target: Path) -> list[Path]:
    """Write the starter project into ``target`` (created if needed); return the files written."""
    source = packaged_root()
    if source is None:
        raise ScaffoldError("the packaged defaults are missing from this installation")
    dataset = (source / "evals" / "mixed-routing.jsonl").read_text(encoding="utf-8").splitlines()
    low = [line for line in dataset if '"expectedEscalation": false' in line][:3]
    high = [line for line in dataset if '"expectedEscalation": true' in line][:3]
    files = {
        **{  # general with its tiers, and the two fixed strategies `loomc eval` compares it with
            f"pipelines/{name}.loom": (source / "pipelines" / f"{name}.loom").read_text("utf-8")
            for name in ("general", "baseline", "fixed")
        },
        "policies/default.yaml": (source / "policies" / "default.yaml").read_text("utf-8"),
        "evals/smoke.jsonl": "\n".join(low + high) + "\n",
        ".github/workflows/loomc.yml": WORKFLOW,
        ".pre-commit-config.yaml": PRE_COMMIT,
        # the trace store and default eval reports live here: never committed by accident
        ".loomc/.gitignore": "# written by loomc init: the run store and eval reports stay local\n*\n",
    }
    existing = [name for name in files if (target / name).exists()]
    if existing:
        raise ScaffoldError(f"{target}: already has {', '.join(existing)}; nothing was written")
    written = []
    for name, text in files.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
