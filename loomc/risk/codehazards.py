"""Code hazards (semantic-v7): does a prompt carry code, and does that code hold a construct
whose mistakes cost something?

Why a separate signal from the cues' ``code:*`` (``loomc.risk.cues``): the routing corpus showed
that a router reads code by its *identifiers* (``purge_expired``, ``execute_order``,
``chop_head``, ``infect``) and escalates harmless code because the names sound alarming, while a
two-line C helper with ``strcpy`` into a fixed buffer goes through. What makes code risky is a
small set of construct families that security and operations practice names again and again
(CWE's top weaknesses, the classic ops foot-guns), whatever the identifiers say. So this module
answers two questions a classifier cannot learn from a few hundred rows: is there code here
(``code_present``), and which hazard families does it hold (``hazards_of``). Code with none of
them is ``clean``: the router may learn that identifiers alone mean nothing.

The families were written from general knowledge of those lists, not from any test split's
wording; each is a short list of constructs in the common languages (Python, JS, SQL, shell,
C, YAML/Dockerfile).
"""

from __future__ import annotations

import re

from loomc.risk.cues import LazyPatterns, any_of
from loomc.risk.memo import per_prompt

_F = re.IGNORECASE | re.MULTILINE


# What makes a prompt "carry code": a fenced block, an indented block under a line, a definition,
# a statement shape, or a shell line (pipes, loops, flags, paths).
_CODE_SOURCES: dict[str, str] = {
    "present": any_of(
        r"```",
        r"\n(?: {2,}|\t)\S",
        r"\b(?:def|class|function|fn|func|void|int|char|public|private|static)\s+\w+\s*[({:]",
        r"^\s*(?:import\s+[\w.]+|from\s+[\w.]+\s+import\b|#include\b|using\s+[\w.]+;|const\s+\w+\s*=)",
        r"\brequire\(['\"]|^\s*(?-i:FROM|RUN|COPY|USER|CMD|ENTRYPOINT)\s+\S",
        r"^[^\n]{0,200}\S\s*=\s*[^\n=]{1,200};\s*$",
        r"\b(?:chmod|chown|rm|rsync|kubectl|terraform|docker|git|curl)\s+-{1,2}\w",
        r"^\s*[A-Za-z_][\w.]*\s*=\s*[\w.]+\s*[-+*/]\s*\w",
        r"^\s*(?:\$ )?(?:sudo\s+)?(?:rm|mv|cp|rsync|find|grep|tail|cat|chmod|chown|kubectl|docker"
        r"|git|curl|wget|ssh|scp|tar|sed|awk|psql|mysql|aws|gsutil|terraform)\s+[-\w./~*$\"']",
        r"\b(?:for|while|if)\b[^\n]{0,200}(?:;\s*do\b|:\s*$|\)\s*\{)",
        # a select list of at most 400 characters: unbounded, each "select" in a long run of
        # words rescanned the rest of the run (quadratic; "select " * 30,000 took ~54 s)
        r"\b(?:select\s+[\w*,\s]{1,400}\s+from|insert into|update\s+\w+\s+set|delete from"
        r"|drop table|alter table|create table)\b",
        # from the start of a name only: tried inside a long run of name characters, [\w.]+
        # rescans the rest of the run from each position (quadratic; the same matches)
        r"(?<![\w.])[\w.]+\([^()\n]{0,200}\)\s*;",
        r"\|\s*(?:grep|sort|uniq|wc|head|tail|xargs|awk|sed)\b",
        # an assignment's target, tried once per run of name characters: the first name start in
        # the run, then the whole run (atomic). Every start in a run reaches the same run's end,
        # so the matches are the same; tried from each start, a long run cost its length squared
        r"\$\{\w+|\$\(\w+|(?<![\w.])(?>[\w.]*?\b[A-Za-z_][\w.]*)(?:\[[^\]\n]{0,40}\])?\s*"
        r"(?:=|\+=|-=)\s*(?:['\"\[{(]|[\w.]+\()",
        r"\b[a-z_]\w*\.[a-z_]\w*\([^()\n]{0,200}\)",
        r"^\s*-\s+name:|^\s*run:\s|^\s*[\w-]+:\s*\n\s+[\w-]+:",
    ),
}

# Hazard families: constructs whose mistakes leak, destroy, corrupt or run someone else's input.
_HAZARD_SOURCES: dict[str, str] = {
    # untrusted input reaching an interpreter: SQL built from strings, shell, eval, templates
    "injection": any_of(
        r"(?:select|insert|update|delete)\b[^\n]{0,120}['\"]\s*(?:\+|%\s*\(?|\.format\()",
        r"\bexecute\(\s*f['\"]|\bf['\"](?:select|insert|update|delete)\b|\$\{[^}]+\}[^\n]{0,40}"
        r"\b(?:where|values)\b",
        r"shell\s*=\s*true|\bos\.system\(|\bos\.popen\(|\bpopen\(|\bchild_process\b|\bexecSync\(",
        r"\beval\s*\(|\bexec\s*\(|\bnew Function\(|Runtime\.getRuntime\(\)\.exec",
        r"\bsystem\(\s*[\"'][^\"']*[\"']?\s*\.|\bsubprocess\.\w+\([^)\n]{0,200}(?:\+|\bf['\"])",
        r"\bTemplate\([^)\n]{0,200}\)\.render|render_template_string\(",
    ),
    # deserialising bytes that may come from outside
    "deserialise": any_of(
        r"\bpickle\.loads?\(|\bcPickle\b|\bdill\.loads?\(|\bjoblib\.load\(|\bmarshal\.loads?\(",
        r"\byaml\.load\((?![^)\n]{0,120}SafeLoader)|\bunserialize\(|\bObjectInputStream\b",
        r"\bBinaryFormatter\b|\bMarshal\.load\b|\bshelve\.open\(",
        r"\.extractall\(|\bZipFile\([^)\n]{0,80}\)\.extract",
    ),
    # checks that prove who is on the other end, switched off
    "trust-off": any_of(
        r"\bverify\s*=\s*False\b|\bverify_ssl\s*=\s*False\b|\bCERT_NONE\b|check_hostname\s*=\s*False",
        r"rejectUnauthorized\s*:\s*false|InsecureSkipVerify\s*:\s*true|NODE_TLS_REJECT_UNAUTHORIZED",
        r"--insecure\b|\bcurl\s+-k\b|verify_signature['\"]?\s*:\s*False|algorithms?\s*=\s*\[?\s*['\"]none",
        r"\bverify\s*=\s*false\b|options\.verify\s*=\s*false|ignoreExpiration\s*:\s*true",
        r"Access-Control-Allow-Origin['\"]?\s*[:,]\s*['\"]\*|origin\s*:\s*['\"]\*['\"][^\n]{0,80}"
        r"credentials|ALLOWED_HOSTS\s*=\s*\[\s*['\"]\*",
        r"(?:api_?key|secret|token|passw(?:or)?d)\s*=\s*['\"][^'\"\s]{8,}|\bsk_live_\w+|\bAKIA[0-9A-Z]{12,}",
        r"_create_unverified_context|\bjwt\.decode\(\s*\w+\s*\)|\bdecode\([^)\n]{0,80}verify\s*=\s*False",
        r"\b(?:md5|sha1)\([^)\n]{0,60}\b(?:pw|pwd|pass\w*)\b|\brandom\.\w+\([^)\n]{0,80}\)[^\n]{0,40}"
        r"(?:token|secret|password|otp)",
    ),
    # writes that cannot be taken back: unscoped deletes and updates, recursive removal, mirrors
    "mass-delete": any_of(
        r"\bdelete\s+from\s+\w+\s*(?:;|$|\n|['\"])",
        r"\bupdate\s+\w+\s+set\b(?![^;]{0,300}\bwhere\b)",
        r"\bdrop\s+(?:table|database|schema|column)\b|\btruncate\s+(?:table\s+)?\w+",
        r"\brm\s+-\w*[rR]\w*|\brm\s+--recursive\b|\bshutil\.rmtree\(|\brimraf\b|\bfs\.rmSync\([^)]*recursive",
        r"sync\b[^\n]{0,120}--delete\b|\bflush(?:all|db)\b|\.keys\(\s*['\"]\*['\"]\s*\)|\bquery\([\w.]+\)\.delete\(\)|\bfind\b[^\n]{0,120}-delete\b|\bfind\b[^\n]{0,120}-exec\s+rm\b",
        r"\bgit\s+(?:push\s+[^\n]{0,40}(?:--force|-f)\b|reset\s+--hard|clean\s+-\w*f)",
        r"\bkubectl\s+delete\b|\bterraform\s+destroy\b|\.objects\.all\(\)\.delete\(\)|\bdeleteMany\(\s*\{\s*\}\s*\)",
        r"\bdd\s+if=[^\n]{0,80}of=/dev/|\bmkfs\.",
    ),
    # more privilege than the job needs: root containers, host access, world-writable files
    "privilege": any_of(
        r"\bprivileged\s*:\s*true\b|--privileged\b|\bhostNetwork\s*:\s*true|\bhostPID\s*:\s*true",
        r"/var/run/docker\.sock|\brunAsUser\s*:\s*0\b|^\s*USER\s+root\b|allowPrivilegeEscalation\s*:\s*true",
        r"\bchmod\s+(?:-R\s+)?(?:0?777|a\+rwx|o\+w)\b|\bsudo\s+chown\s+-R\b|\bNOPASSWD\b",
        r"\b0\.0\.0\.0/0\b|\"Principal\"\s*:\s*\"\*\"|\"Action\"\s*:\s*\"\*\"|\bpublic-read(?:-write)?\b",
    ),
    # markup built from data: cross-site scripting sinks
    "markup-sink": any_of(
        r"\.innerHTML\s*[+]?=|\.outerHTML\s*=|dangerouslySetInnerHTML|\bdocument\.write\(",
        # a triple-stash of at most 400 characters (each "{" of a long run rescanned it)
        r"\bv-html\b|\|\s*safe\b|\bmark_safe\(|\bMarkup\(|\{\{\{[^}]{1,400}\}\}\}|\.html\(\s*\w",
        r"insertAdjacentHTML\(|\bbypassSecurityTrust\w+\(",
    ),
    # copies with no bound: buffer overflows
    "unbounded-copy": any_of(
        r"\bstrcpy\s*\(|\bstrcat\s*\(|\bgets\s*\(|\bsprintf\s*\(|\bvsprintf\s*\(",
        r"\bscanf\s*\(\s*\"[^\"]*%s|\bmemcpy\s*\([^;\n]{0,120}(?:strlen|len|size)\b",
        r"\bchar\s+\w+\s*\[\s*\d+\s*\][^\n]{0,200}\n[^\n]{0,200}\b(?:strcpy|strcat|sprintf|gets)\b",
    ),
    # values the client controls trusted as facts: prices, amounts, roles, paths, ids
    "client-input": any_of(
        r"\breq(?:uest)?\.(?:body|form|args|query|params|cookies|json|files|GET|POST)\b",
        r"\buser[_ ]supplied\b|\b(?:from|by) the (?:query string|browser|client|request|user|form"
        r"|shopping cart)\b|\bcomes? (?:straight |directly )?from (?:the )?(?:user|request|client|browser)",
    ),
    # read-then-write on shared money or stock without a lock or transaction: races
    "check-then-act": any_of(
        r"\bif\b[^\n]{0,80}\b(?:balance|stock|quantity|inventory|credits?|seats?|available)\b[^\n]{0,40}"
        r"(?:>=|>|<=|<)[^\n]{0,200}\n[^\n]{0,200}\b(?:balance|stock|quantity|inventory|credits?|seats?"
        r"|available)\s*(?:-=|\+=|=)",
        r"\bif\b[^\n]{0,60}(?:>=|>)\s*\w*(?:amt|amount|qty|price|cost)\b\s*:|\bset_balance\(|\bbal(?:ance)?\s*-=",
        r"\b(?:balance|stock|quantity|inventory|credits?)\s*=\s*\w*\.?(?:balance|stock|quantity|"
        r"inventory|credits?)\s*[-+]\s*\w+",
    ),
}
HAZARD_NAMES: tuple[str, ...] = tuple(_HAZARD_SOURCES)


# Each compiled on first need (a process that never profiles code never pays for it), and a
# hazard family searched only where its literals are (loomc.risk.prescan).
CODE = LazyPatterns(_CODE_SOURCES, _F)
HAZARDS = LazyPatterns(_HAZARD_SOURCES, _F)


@per_prompt
def code_present(prompt: str) -> bool:
    """Whether ``prompt`` carries code (a block, a definition, a statement, a shell line)."""
    return CODE.patterns["present"].search(prompt) is not None


@per_prompt
def hazards_of(prompt: str) -> tuple[str, ...]:
    """The hazard families found in ``prompt``'s code, in ``HAZARD_NAMES`` order; () when it
    carries no code (a sentence that names ``eval`` is not code that calls it)."""
    if not code_present(prompt):
        return ()
    return HAZARDS.matching(prompt)


def code_vector(prompt: str) -> list[float]:
    """Classifier features: code present, any hazard, clean code (present, no hazard), and one
    column per hazard family."""
    present = code_present(prompt)
    found = set(hazards_of(prompt)) if present else set()
    return [float(present), float(bool(found)), float(present and not found)] + [
        float(n in found) for n in HAZARD_NAMES
    ]


CODE_FEATURE_NAMES: tuple[str, ...] = (
    "code7:present",
    "code7:hazard",
    "code7:clean",
    *tuple(f"code7:{n}" for n in HAZARD_NAMES),
)
