"""The prompt text the profilers' regular expressions read: whitespace runs bounded.

Why: prompts are untrusted, and a few of the pattern families backtrack over a long run of
whitespace once per position in it (``^\\s*¿?\\s*(?:quién|...)``: two ``\\s*`` around an optional
character; ``\\n\\s{2,}\\S`` started at every newline of a run). Each is linear on ordinary text,
where runs are short, and quadratic in the length of one run: 4,000 spaces cost ~0.4 s, 40,000
about 40 s, so one pasted blank page could hold a server's profiler for minutes. Rewriting each
pattern would change what the shipped releases were trained on; bounding the runs does not
change any prompt the routers have seen (no prompt of ``evals/routing`` has a run over
``MAX_RUN``, tests/risk/test_bounded.py) and makes every such backtrack cost at most
``MAX_RUN`` steps per position. A run is cut to its first ``MAX_RUN`` characters, so its newlines
and indentation, which some patterns read, come first and stay. WordPiece ignores whitespace,
so the embeddings of a prompt and of its bounded text are the same.
"""

from __future__ import annotations

import re

MAX_RUN = 64  # characters of one whitespace run kept (an indented line is far shorter)
_LONG_RUN = re.compile(rf"\s{{{MAX_RUN + 1},}}")


def bounded(prompt: str) -> str:
    """``prompt`` with each run of more than ``MAX_RUN`` whitespace characters cut to its first
    ``MAX_RUN`` (the same string, not a copy, when it has none)."""
    if len(prompt) <= MAX_RUN:
        return prompt
    return _LONG_RUN.sub(lambda m: m.group()[:MAX_RUN], prompt)
