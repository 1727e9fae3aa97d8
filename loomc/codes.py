"""Stable diagnostic codes, one prefix per stage (dbt's habit), each with its documentation.

Codes are never reused: a retired code moves to ``RETIRED`` (a tombstone) so old CI logs keep
their meaning. `docs/diagnostics.md` is checked against this table by a test.
"""

from __future__ import annotations

from typing import Final

PREFIXES: Final = {
    "LOOM1": "syntax: reading and parsing .loom files",
    "LOOM2": "names and structure: resolution, cycles, reachability",
    "LOOM3": "access: what a step may read",
    "LOOM4": "budgets: units and worst-case ceilings",
    "LOOM5": "invariants: require clauses",
    "LOOM6": "policy: YAML, providers, pricing, secrets",
    "LOOM7": "project and regression gate",
}

CODES: Final[dict[str, str]] = {
    "LOOM101": "Syntax error: the parser met a token it did not expect; the hint lists what it expected.",
    "LOOM102": "Unterminated string literal.",
    "LOOM103": "The file cannot be read, is binary, or is not UTF-8.",
    "LOOM105": "A clause is written twice in one step or pipeline; the first one counts.",
    "LOOM106": "A number is larger than 10^15 in the unit it is written in, or has more than 40 digits.",
    "LOOM107": "An expression nests deeper than 64 levels (parentheses or `not`).",
    "LOOM201": "Two pipelines have the same name.",
    "LOOM202": "Two steps in a pipeline have the same name.",
    "LOOM203": "A reference names a step that does not exist.",
    "LOOM204": "A step names a worker the policy does not define.",
    "LOOM205": "A step names an unknown role.",
    "LOOM206": "The steps form a cycle; the message shows it as a path.",
    "LOOM207": "A step can never contribute to the answer (it is no answer and no step reads it).",
    "LOOM208": "The answer chain is missing, names an unknown step, or every step in it may be skipped.",
    "LOOM209": "A step's guard is false in every tier the pipeline is compiled for, so the step never runs.",
    "LOOM210": "A worker's model names a provider the policy does not define.",
    "LOOM211": "A guard compares the tier with a name that is not a tier of the policy.",
    "LOOM212": "A guard reads an unknown fact or step predicate.",
    "LOOM213": "A guard compares values of different types (e.g. risk with a number).",
    "LOOM214": "An unknown risk level or task kind in a guard.",
    "LOOM215": "A pipeline declares a tier the policy does not define.",
    "LOOM216": "A step's `after` or `sees` names the step itself.",
    "LOOM301": "A step reads (`sees`) a step that may be skipped; mark it optional with `?`.",
    "LOOM401": "The worst-case number of calls exceeds the calls ceiling.",
    "LOOM402": "The worst-case token count exceeds the tokens ceiling.",
    "LOOM403": "The worst-case credits exceed the credits ceiling.",
    "LOOM404": "The worst-case cost in USD exceeds the cost ceiling.",
    "LOOM405": "The worst-case latency (longest path) exceeds the latency ceiling.",
    "LOOM410": "A budget quantity has the wrong unit for its dimension.",
    "LOOM411": "A token or cost ceiling is set but a step has no max_tokens: cost is unbounded.",
    "LOOM412": "A cost ceiling is set but a model the pipeline may call has no pricing.",
    "LOOM413": "A budget names an unknown dimension.",
    "LOOM414": "A quantity is negative, fractional where whole numbers are required, or zero where it cannot be.",
    "LOOM501": "`require independent(...)` is violated: two steps share a provider group.",
    "LOOM502": "An unknown `require` invariant.",
    "LOOM601": "A literal API key in a policy; keys must be `env:NAME` references.",
    "LOOM602": "A policy file cannot be read or is malformed YAML.",
    "LOOM603": "A policy file does not match the policy schema.",
    "LOOM604": "Pricing is given for a model no worker uses.",
    "LOOM605": "A provider that needs a base URL has none.",
    "LOOM606": "A `.loom` file holds a literal API key or token.",
    "LOOM607": "A policy's YAML nests deeper than 64 levels, its aliases expand past 10,000 nodes, or it writes a number longer than 40 characters.",
    "LOOM608": "A `risk.options` value the risk profiler cannot take.",
    "LOOM609": "An unknown `risk.options` key (ignored).",
    "LOOM701": "No pipelines or no policies were found where the project should have them.",
    "LOOM702": "The comparison ref cannot be read from Git.",
    "LOOM703": "Against the ref, a worst case moved past a ceiling.",
    "LOOM704": "Against the ref, a worst case moved (information).",
}

RETIRED: Final[dict[str, str]] = {
    "LOOM104": "A number literal cannot be read. Retired in 0.1.0, never emitted: the grammar "
    "lexes only well-formed numbers, so a malformed one is a syntax error (LOOM101).",
}
