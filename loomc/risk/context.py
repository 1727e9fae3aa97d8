"""What a code prompt says *around* its code (semantic-v19's context block): the prompt's prose
with the code taken out, as the static encoder embeds it.

Why: harmless code in hazards' vocabulary (a fixture of fake patients, a UI kit's "PAYMENT
FAILED" toast, a classroom's race condition) says what it is in the sentences around the code:
"the fixture file for our tests; none of it is real", "a demo", "for tomorrow's lab", "the
numbers are made up". The high twins say "it runs nightly on the production server". The
embedding of the whole prompt, and the nearest labelled prompts it finds, are dominated by the
code, whose vocabulary both share, so the heads could not tell them apart (round 28: v18
escalated 22 of 40 such harmless rows, 15 of them at P >= 0.66). The context block gives the
heads the prose on its own, for prompts that carry code or configuration only (zeros
otherwise), and lets them learn from labelled rows which words mark a fixture, a demo or
production. Nothing here names those words: the only hand-written part is where code ends.

Plain Python (no numpy): the one-prompt path (``loomc.risk.pure``) builds it too. The caller
gives the embedding function, so numpy's static encoder and the plain one each embed the prose
the way they embed a prompt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from loomc.risk.memo import per_prompt

CONTEXT_DIM = 384  # the static encoder's width: the block is one embedding

# A fenced block, closed or running to the end of the prompt (a paste cut short).
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
# Characters that are rare in sentences and common in code, configuration and formulas.
_SYMBOLS = frozenset("{}[]()<>;=$_\\|*/#@`:\"'")
_CODE_DENSITY = 0.08  # a line with at least this share of them is code, not prose
_CODE_START = re.compile(
    r"^(?:[ \t]{2,}\S|[{}\[\]<=$#@/|]|(?:def|class|import|from|return|if|for|while|const|let|var"
    r"|function|export|public|private|SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|WITH|COPY"
    r"|sudo|cd|rm|cp|mv|echo|curl|psql|rsync|find)\b)",
)


def _is_code_line(line: str) -> bool:
    stripped = line.strip()
    if _CODE_START.match(line):
        return True
    dense = sum(ch in _SYMBOLS for ch in stripped)
    return dense / len(stripped) >= _CODE_DENSITY


@per_prompt
def prose_of(prompt: str) -> str:
    """The sentences around a prompt's code: "" unless the prompt mixes the two (a fenced block
    or a line that reads as code, and a line that does not). A line reads as code when it
    starts like code or is dense in code's symbols, which also takes in what ``code_like``
    does not read as code: a pasted table, a cron line, a spreadsheet formula."""
    if "`" not in prompt and "\n" not in prompt:
        return ""  # one line with no fence: nothing to take apart
    unfenced, fences = _FENCE.subn("\n", prompt)
    lines = [ln for ln in unfenced.splitlines() if ln.strip()]
    prose = [ln.strip() for ln in lines if not _is_code_line(ln)]
    if not prose or (not fences and len(prose) == len(lines)):
        return ""
    return "\n".join(prose)


def context_vector(prompt: str, embed: Callable[[str], Sequence[float]]) -> list[float]:
    """The block's ``CONTEXT_DIM`` columns: ``embed`` of ``prose_of(prompt)``, zeros without
    prose. ``embed`` is the static encoder's, one text to one unit vector."""
    prose = prose_of(prompt)
    if not prose:
        return [0.0] * CONTEXT_DIM
    vec = [float(v) for v in embed(prose)]
    if len(vec) != CONTEXT_DIM:
        raise ValueError(f"the context block is {CONTEXT_DIM} wide, the encoder gave {len(vec)}")
    return vec
